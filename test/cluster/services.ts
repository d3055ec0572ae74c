/**
 * A private set of NATS, Redis and Cassandra for tests that kill them: its
 * own directory and ports, started and stopped with scripts/services.sh, so
 * the shared services on the default ports (used by others) are never
 * touched.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, ROOT } from '../../scripts/cluster-launcher.ts';

const run = promisify(execFile);
const SCRIPT = join(ROOT, 'scripts/services.sh');

export type Service = 'nats' | 'redis' | 'cassandra';

export interface PrivateServices {
  dir: string;
  /** What a cluster process needs to use these services (startTestCluster's env). */
  env: Record<string, string>;
  /** Starts a service (or all) and waits until it answers; resolves to the seconds it took. */
  start(svc?: Service | 'all'): Promise<number>;
  /** kill -9 of the service's process; resolves once it is gone. */
  kill(svc: Service): Promise<void>;
  /** Stops every service and deletes the directory. */
  stop(): Promise<void>;
}

export async function startPrivateServices(): Promise<PrivateServices> {
  const dir = mkdtempSync(join(tmpdir(), 'parley-services-'));
  const [nats, redis, cql, storage] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const scriptEnv: NodeJS.ProcessEnv = {
    ...process.env,
    PARLEY_SERVICES_DIR: dir,
    PARLEY_NATS_PORT: String(nats),
    PARLEY_REDIS_PORT: String(redis),
    PARLEY_CASSANDRA_PORT: String(cql),
    PARLEY_CASSANDRA_STORAGE_PORT: String(storage),
  };
  delete scriptEnv.PARLEY_CASSANDRA_JMX_PORT;
  const services = (...args: string[]) => run('bash', [SCRIPT, ...args], { env: scriptEnv, maxBuffer: 1 << 22 });
  const start = async (svc: Service | 'all' = 'all') => {
    const t0 = performance.now();
    await services('start', svc);
    return (performance.now() - t0) / 1000;
  };
  const s: PrivateServices = {
    dir,
    env: {
      PARLEY_NATS_URL: `nats://127.0.0.1:${nats}`,
      PARLEY_REDIS_URL: `redis://127.0.0.1:${redis}`,
      PARLEY_CASSANDRA_CONTACT_POINTS: `127.0.0.1:${cql}`,
      PARLEY_CASSANDRA_DC: 'datacenter1',
    },
    start,
    async kill(svc) {
      const pid = Number(readFileSync(join(dir, `${svc}.pid`), 'utf8').trim());
      process.kill(pid, 'SIGKILL');
      // Gone once /proc no longer shows it alive (an orphan may stay a zombie until init reaps it).
      const alive = () => {
        try {
          return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
        } catch {
          return false;
        }
      };
      for (let i = 0; i < 200; i++) {
        if (!alive()) return;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`${svc} (pid ${pid}) still alive 10 s after kill -9`);
    },
    async stop() {
      await services('stop', 'all').catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await start('all');
  } catch (err) {
    await s.stop();
    throw err;
  }
  return s;
}
