import { z } from 'zod';
import { shardMoveWaitMs } from '../actors/runtime/client.ts';
import { DEFAULT_ACTOR_LIMITS } from '../actors/runtime/context.ts';
import { DEFAULT_LEASE_TTL_MS } from '../actors/runtime/leases.ts';
import { parseOverrides, parseRule } from './gcra.ts';
import { VERSION_PATTERN } from './version.ts';

/** Process configuration, read once from the environment and validated. */
const Env = z.object({
  PARLEY_ROLE: z.enum(['all', 'gateway', 'actors']).default('all'),
  PARLEY_MODE: z.enum(['embedded', 'cluster']).default('embedded'),
  PARLEY_HOST: z.string().min(1).default('127.0.0.1'),
  PARLEY_PORT: z.coerce.number().int().min(0).max(65535).default(9991),
  PARLEY_SITE_URL: z.string().url().optional(),
  PARLEY_DATA_DIR: z.string().min(1).default('.parley/data'),
  PARLEY_DEMO_DIR: z.string().min(1).default('.parley/demo'),
  /** A production deployment: no demo organization (its users' keys would be printed at start). */
  PARLEY_PRODUCTION: z.enum(['true', 'false']).default('false').transform((v) => v === 'true'),
  /** Seeds the demo organization; true by default except in production, where it is refused. */
  PARLEY_SEED_DEMO: z.enum(['true', 'false']).optional(),
  PARLEY_SHARDS: z.coerce.number().int().min(1).max(4096).optional(),
  PARLEY_NODE_ID: z.string().min(1).optional(),
  /** Set by Kubernetes (downward API): the default node identity for shard leases. */
  POD_NAME: z.string().min(1).optional(),
  PARLEY_NATS_URL: z.string().default('nats://127.0.0.1:4222'),
  PARLEY_REDIS_URL: z.string().default('redis://127.0.0.1:6379'),
  PARLEY_REDIS_PREFIX: z.string().regex(/^[\w.-]+$/).default('parley'),
  /** The cluster's name in NATS subjects; the Redis prefix by default, so each cluster sharing a NATS hears only itself. */
  PARLEY_NATS_NAMESPACE: z.string().regex(/^[\w-]+$/).optional(),
  PARLEY_CASSANDRA_CONTACT_POINTS: z.string().default('127.0.0.1:9042'),
  PARLEY_CASSANDRA_DC: z.string().default('datacenter1'),
  PARLEY_CASSANDRA_KEYSPACE: z.string().regex(/^[a-z_][a-z0-9_]*$/).default('parley'),
  PARLEY_CASSANDRA_REPLICATION_FACTOR: z.coerce.number().int().min(1).max(9).default(1),
  PARLEY_LEASE_TTL_MS: z.coerce.number().int().min(500).default(DEFAULT_LEASE_TTL_MS),
  PARLEY_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).default(10000),
  PARLEY_HEARTBEAT_SECS: z.coerce.number().min(0.2).default(50),
  PARLEY_QUEUE_IDLE_SECS: z.coerce.number().min(1).default(600),
  PARLEY_AUTH_CACHE_MS: z.coerce.number().int().min(0).default(2000),
  PARLEY_MAX_BODY_BYTES: z.coerce.number().int().min(1024).default(1024 * 1024),
  /** Rate limits (`gateway/rate_limits.ts`), each `max/seconds`; defaults as Zulip's. */
  PARLEY_RATE_LIMITS: z.enum(['true', 'false']).default('true').transform((v) => v === 'true'),
  PARLEY_RATE_LIMIT_USER: z.string().default('200/60'),
  PARLEY_RATE_LIMIT_IP: z.string().default('100/60'),
  PARLEY_RATE_LIMIT_AUTH_FAILURES: z.string().default('30/60'),
  /** `email=max/seconds,...`: users with a budget of their own (a load test's users). */
  PARLEY_RATE_LIMIT_OVERRIDES: z.string().default(''),
  /** Live event queues a user may have (Zulip has no cap; one member registered 20,000). */
  PARLEY_MAX_QUEUES_PER_USER: z.coerce.number().int().min(1).default(DEFAULT_ACTOR_LIMITS.maxQueuesPerUser),
  /** Channels a user may create, `max/seconds`. */
  PARLEY_CHANNEL_CREATION_LIMIT: z.string().default(`${DEFAULT_ACTOR_LIMITS.channelCreation.max}/${DEFAULT_ACTOR_LIMITS.channelCreation.windowSecs}`),
  /** Behind a proxy that appends the client's address to X-Forwarded-For: limit by that address. */
  PARLEY_TRUST_FORWARDED_FOR: z.enum(['true', 'false']).default('false').transform((v) => v === 'true'),
  /** The /metrics listener (`lib/metrics.ts`): a port of its own, never the API's; `off`: none. */
  PARLEY_METRICS_PORT: z.string().regex(/^(off|\d{1,5})$/, 'a port number or off').default('9464'),
  PARLEY_METRICS_HOST: z.string().min(1).optional(),
  /** On SIGTERM, how long a gateway keeps serving while it tells its load balancer to go elsewhere (`Gateway.drain`). */
  PARLEY_DRAIN_DELAY_SECS: z.coerce.number().min(0).max(120).default(0),
  /** This release's name (`lib/version.ts`): event queues of another release get a restart event. */
  PARLEY_VERSION: z.string().regex(VERSION_PATTERN, 'letters, digits and . _ + ~ - only, at most 64').optional(),
});

/** A value parsed beyond zod, failing with the same message as the schema's checks. */
function parseOrExplain<T>(name: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw new Error(`invalid configuration:\n  ${name}: ${(err as Error).message}`);
  }
}

function rateLimitRules(e: z.infer<typeof Env>) {
  const parse = parseOrExplain;
  return {
    user: parse('PARLEY_RATE_LIMIT_USER', () => parseRule(e.PARLEY_RATE_LIMIT_USER)),
    ip: parse('PARLEY_RATE_LIMIT_IP', () => parseRule(e.PARLEY_RATE_LIMIT_IP)),
    authFailures: parse('PARLEY_RATE_LIMIT_AUTH_FAILURES', () => parseRule(e.PARLEY_RATE_LIMIT_AUTH_FAILURES)),
    overrides: parse('PARLEY_RATE_LIMIT_OVERRIDES', () => parseOverrides(e.PARLEY_RATE_LIMIT_OVERRIDES)),
  };
}

export type Config = ReturnType<typeof loadConfig>;

export function loadConfig(env: NodeJS.ProcessEnv = process.env) {
  const parsed = Env.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new Error(`invalid configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  if (e.PARLEY_PRODUCTION && e.PARLEY_SEED_DEMO === 'true') {
    throw new Error('invalid configuration:\n  PARLEY_SEED_DEMO: a production deployment (PARLEY_PRODUCTION=true) never seeds the demo organization, whose users\' API keys are printed at start; unset PARLEY_SEED_DEMO, or unset PARLEY_PRODUCTION to run the demo');
  }
  const siteUrl = e.PARLEY_SITE_URL ?? `http://${e.PARLEY_HOST === '0.0.0.0' ? '127.0.0.1' : e.PARLEY_HOST}:${e.PARLEY_PORT}`;
  return {
    role: e.PARLEY_ROLE,
    mode: e.PARLEY_MODE,
    host: e.PARLEY_HOST,
    port: e.PARLEY_PORT,
    siteUrl,
    dataDir: e.PARLEY_DATA_DIR,
    demoDir: e.PARLEY_DEMO_DIR,
    production: e.PARLEY_PRODUCTION,
    seedDemo: e.PARLEY_SEED_DEMO === undefined ? !e.PARLEY_PRODUCTION : e.PARLEY_SEED_DEMO === 'true',
    // Shards spread actors over nodes; one process needs one (fewer event copies).
    shards: e.PARLEY_SHARDS ?? (e.PARLEY_MODE === 'embedded' ? 1 : 64),
    nodeId: e.PARLEY_NODE_ID ?? e.POD_NAME,
    natsUrl: e.PARLEY_NATS_URL,
    redisUrl: e.PARLEY_REDIS_URL,
    redisPrefix: e.PARLEY_REDIS_PREFIX,
    natsNamespace: e.PARLEY_NATS_NAMESPACE ?? e.PARLEY_REDIS_PREFIX.replace(/\./g, '_'),
    cassandra: {
      contactPoints: e.PARLEY_CASSANDRA_CONTACT_POINTS.split(',').map((s) => s.trim()).filter(Boolean),
      localDataCenter: e.PARLEY_CASSANDRA_DC,
      keyspace: e.PARLEY_CASSANDRA_KEYSPACE,
      replicationFactor: e.PARLEY_CASSANDRA_REPLICATION_FACTOR,
    },
    leaseTtlMs: e.PARLEY_LEASE_TTL_MS,
    /** How long a call waits for a moving shard's new owner (derived from the lease TTL: `shardMoveWaitMs`). */
    shardMoveWaitMs: shardMoveWaitMs(e.PARLEY_LEASE_TTL_MS),
    requestTimeoutMs: e.PARLEY_REQUEST_TIMEOUT_MS,
    heartbeatSecs: e.PARLEY_HEARTBEAT_SECS,
    queueIdleSecs: e.PARLEY_QUEUE_IDLE_SECS,
    maxBodyBytes: e.PARLEY_MAX_BODY_BYTES,
    authCacheMs: e.PARLEY_AUTH_CACHE_MS,
    /** null: no rate limits. */
    rateLimits: e.PARLEY_RATE_LIMITS ? rateLimitRules(e) : null,
    trustForwardedFor: e.PARLEY_TRUST_FORWARDED_FOR,
    /** null: no metrics listener. */
    metrics: e.PARLEY_METRICS_PORT === 'off' ? null : { host: e.PARLEY_METRICS_HOST ?? e.PARLEY_HOST, port: Number(e.PARLEY_METRICS_PORT) },
    drainDelaySecs: e.PARLEY_DRAIN_DELAY_SECS,
    actorLimits: {
      maxQueuesPerUser: e.PARLEY_MAX_QUEUES_PER_USER,
      channelCreation: parseOrExplain('PARLEY_CHANNEL_CREATION_LIMIT', () => parseRule(e.PARLEY_CHANNEL_CREATION_LIMIT)),
    },
  };
}
