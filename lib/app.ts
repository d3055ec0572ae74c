/**
 * Wiring: builds a Parley process from its configuration. The embedded mode
 * and the cluster mode run the same actors and gateway; only the Bus, Leases
 * and Store implementations differ.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Bus } from '../actors/runtime/bus.ts';
import type { Leases } from '../actors/runtime/leases.ts';
import { LocalLeases } from '../actors/runtime/leases.ts';
import { LocalBus } from '../actors/runtime/local-bus.ts';
import { ActorNode } from '../actors/runtime/node.ts';
import '../actors/index.ts';
import { ActorClient } from '../actors/runtime/client.ts';
import { listenForRevocations } from '../gateway/auth.ts';
import { type Limiter, LocalLimiter } from '../gateway/limiter.ts';
import { RateLimits } from '../gateway/rate_limits.ts';
import { Organizations } from '../gateway/organizations.ts';
import { Gateway, servedFeatureLevel } from '../gateway/server.ts';
import type { Store } from '../storage/store.ts';
import { EmbeddedStore } from '../storage/embedded.ts';
import type { Config } from './config.ts';
import { adminSocketPath, serveAdminSocket } from './admin-socket.ts';
import { log } from './log.ts';
import { collectProcessMetrics, type MetricsServer, serveMetrics } from './metrics.ts';
import { SERVER_VERSION } from './version.ts';
import { pushConfigured, registerServer } from './push.ts';

export interface Parley {
  bus: Bus;
  actors: ActorClient;
  node: ActorNode | null;
  gateway: Gateway | null;
  port: number | null;
  /** The /metrics listener's port; null when off or its port was taken. */
  metricsPort: number | null;
  stop(): Promise<void>;
}

interface Backends {
  bus: Bus;
  leases: Leases | null;
  store: Store | null;
  /** Rate-limit counts, on processes that serve the API with limits on. */
  limiter: Limiter | null;
  close(): Promise<void>;
}

const servesApi = (config: Config) => config.role !== 'actors' && config.rateLimits !== null;

async function embeddedBackends(config: Config): Promise<Backends> {
  const bus = new LocalBus();
  const store = new EmbeddedStore(config.dataDir);
  await store.init();
  const limiter = servesApi(config) ? new LocalLimiter() : null;
  return { bus, leases: new LocalLeases(), store, limiter, close: async () => { await bus.close(); await store.close(); await limiter?.close(); } };
}

async function clusterBackends(config: Config): Promise<Backends> {
  const { NatsBus } = await import('../actors/runtime/nats-bus.ts');
  const bus = await NatsBus.connect(config.natsUrl, `parley-${config.role}-${process.pid}`, { namespace: config.natsNamespace });
  const { RedisLimiter } = await import('../gateway/redis-limiter.ts');
  // Every gateway counts against the same budgets.
  const limiter = servesApi(config) ? new RedisLimiter(config.redisUrl, { prefix: config.redisPrefix, log: log.child({ component: 'rate-limits' }) }) : null;
  if (config.role === 'gateway') return { bus, leases: null, store: null, limiter, close: async () => { await bus.close(); await limiter?.close(); } };
  const { RedisLeases } = await import('../actors/runtime/redis-leases.ts');
  const { CassandraStore } = await import('../storage/cassandra.ts');
  const { maybeFaulty } = await import('../storage/faulty.ts');
  const cassandra = await CassandraStore.connect(config.cassandra);
  await cassandra.init();
  // Fault injection for the cluster tests only (PARLEY_FAULTS=1); otherwise the store itself.
  const store = maybeFaulty(cassandra, { redisUrl: config.redisUrl, prefix: config.redisPrefix, log: log.child({ component: 'faults' }) });
  const leases = new RedisLeases(config.redisUrl, { ttlMs: config.leaseTtlMs, prefix: config.redisPrefix });
  return {
    bus,
    leases,
    store,
    limiter,
    close: async () => {
      await bus.close();
      await store.close();
      await limiter?.close();
    },
  };
}

/** The /metrics listener; a port that is taken is logged and the process serves on without it. */
async function startMetrics(config: Config): Promise<MetricsServer | null> {
  if (!config.metrics) return null;
  collectProcessMetrics({ role: config.role, mode: config.mode, version: SERVER_VERSION });
  try {
    return await serveMetrics(config.metrics.host, config.metrics.port);
  } catch (err) {
    log.error({ err, ...config.metrics }, 'cannot serve /metrics (PARLEY_METRICS_PORT); running without metrics');
    return null;
  }
}

/**
 * Registers this server with the mobile push notification service (Zulip's
 * `manage.py register_server`), idempotently, at every start of an actor
 * node: the operator sets the credentials, this tells the service the
 * hostname and contact (`PARLEY_PUSH_CONTACT_EMAIL`). A failure is logged;
 * pushes are still tried (the service may know the server already).
 */
async function announceToPushService(site: string): Promise<void> {
  const contact = process.env.PARLEY_PUSH_CONTACT_EMAIL ?? /<([^>]+)>/.exec(process.env.PARLEY_MAIL_FROM ?? '')?.[1] ?? 'noreply@parley.invalid';
  try {
    const created = await registerServer(new URL(site).host, contact);
    log.info({ created }, 'registered with the push notification service');
  } catch (err) {
    log.warn({ err }, 'could not register with the push notification service');
  }
}

export async function startParley(config: Config): Promise<Parley> {
  const backends = config.mode === 'embedded' ? await embeddedBackends(config) : await clusterBackends(config);
  const { bus } = backends;
  let node: ActorNode | null = null;
  const actors = new ActorClient(bus, config.shards, config.requestTimeoutMs, config.shardMoveWaitMs);
  if (config.role !== 'gateway' && backends.leases && backends.store) {
    const nodeId = config.nodeId ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
    node = new ActorNode(bus, backends.leases, backends.store, actors, {
      nodeId,
      shards: config.shards,
      siteUrl: config.siteUrl,
      heartbeatSecs: config.heartbeatSecs,
      limits: config.actorLimits,
      release: { version: SERVER_VERSION, featureLevel: servedFeatureLevel() },
    }, log.child({ component: 'actors', nodeId }));
    await node.start();
  }
  const leases = backends.leases;
  // The operator's CLI reaches an embedded server through a socket only the server's OS user can open.
  const adminSocket = config.mode === 'embedded' ? await serveAdminSocket(adminSocketPath(config.dataDir), bus) : null;
  let gateway: Gateway | null = null;
  let port: number | null = null;
  if (config.role !== 'actors') {
    await listenForRevocations(bus);
    // Which organization each host names: this gateway's copy of the directory, kept current over the bus.
    const organizations = new Organizations(actors, config.siteUrl, log.child({ component: 'directory' }));
    await organizations.listen(bus);
    gateway = new Gateway(actors, {
      host: config.host,
      port: config.port,
      organizations,
      maxBodyBytes: config.maxBodyBytes,
      // A poll gets a heartbeat after at most 1.1 × the interval; allow for the bus hop.
      longPollTimeoutMs: Math.ceil(config.heartbeatSecs * 1100) + 10_000,
      queueIdleSecs: config.queueIdleSecs,
      authCacheMs: config.authCacheMs,
      rateLimits: backends.limiter && config.rateLimits ? new RateLimits(backends.limiter, config.rateLimits) : null,
      trustForwardedFor: config.trustForwardedFor,
      ready: () => leases === null || leases.ready(),
    }, log.child({ component: 'gateway' }));
    port = await gateway.listen();
  } else {
    // Actor nodes serve only health endpoints.
    gateway = new Gateway(actors, {
      host: config.host, port: config.port, maxBodyBytes: 1024, longPollTimeoutMs: 1000, queueIdleSecs: 1,
      ready: () => leases !== null && leases.ready(),
    }, log.child({ component: 'health' }), []);
    port = await gateway.listen();
  }
  const metrics = await startMetrics(config);
  if (node && pushConfigured()) void announceToPushService(config.siteUrl);
  return {
    bus,
    actors,
    node,
    gateway,
    port,
    metricsPort: metrics?.port ?? null,
    async stop() {
      await metrics?.close();
      adminSocket?.close();
      await gateway?.close();
      if (node) await node.stop();
      await backends.close();
    },
  };
}
