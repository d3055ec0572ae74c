/**
 * How the CLI reaches a running deployment: over NATS to a cluster (as
 * gateways do; needs the cluster's PARLEY_NATS_URL and namespace), or over
 * the admin socket of an embedded server (`lib/admin-socket.ts`, in its data
 * directory). Either way it makes the same actor calls, as the server
 * itself (`userId: null`) or as the organization's operator identity.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { ActorClient } from '../actors/runtime/client.ts';
import { adminSocketPath, AdminSocketClient } from '../lib/admin-socket.ts';
import type { Config } from '../lib/config.ts';

export interface Deployment {
  actors: ActorClient;
  /** A bus request of the CLI's own (node administration). */
  requestText(subject: string, body: unknown, timeoutMs: number): Promise<string>;
  /** Tells every gateway something (a revocation), as the API's routes do. */
  publish(subject: string, body: unknown): Promise<void>;
  /** The site's URL, for organizations' URLs and links. */
  siteUrl: string;
  close(): Promise<void>;
}

/** Why the CLI could not reach the deployment (exit code 3). */
export class UnreachableError extends Error {}

export async function connect(config: Config): Promise<Deployment> {
  if (config.mode === 'embedded') {
    const path = adminSocketPath(resolve(config.dataDir));
    if (!existsSync(path)) throw new UnreachableError(`No running embedded server with data in ${resolve(config.dataDir)} (no ${path}). Start it (npm start), or pass --data-dir / PARLEY_DATA_DIR.`);
    let client: AdminSocketClient;
    try {
      client = await AdminSocketClient.connect(path);
    } catch (err) {
      throw new UnreachableError(`Cannot connect to ${path}: ${(err as Error).message}`);
    }
    return {
      actors: new ActorClient(client, config.shards, config.requestTimeoutMs, config.shardMoveWaitMs),
      requestText: (s, b, t) => client.requestText(s, b, t),
      publish: (s, b) => client.publish(s, b),
      siteUrl: config.siteUrl,
      close: async () => client.close(),
    };
  }
  const { NatsBus } = await import('../actors/runtime/nats-bus.ts');
  let bus;
  try {
    bus = await NatsBus.connect(config.natsUrl, `parley-cli-${process.pid}`, { namespace: config.natsNamespace });
  } catch (err) {
    throw new UnreachableError(`Cannot connect to NATS at ${config.natsUrl}: ${(err as Error).message}`);
  }
  return {
    actors: new ActorClient(bus, config.shards, config.requestTimeoutMs, config.shardMoveWaitMs),
    requestText: (s, b, t) => bus.requestText(s, b, t),
    publish: async (s, b) => {
      bus.publish(s, b);
      await bus.flush();
    },
    siteUrl: config.siteUrl,
    close: () => bus.close(),
  };
}
