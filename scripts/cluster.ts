/**
 * `npm run cluster`: starts NATS, Redis and Cassandra on 127.0.0.1 (unless
 * --no-services), two actor nodes and two gateways in the foreground, seeds the
 * demo organization, writes `.parley/cluster.json`, and stops everything on
 * Ctrl-C.
 *
 * Options: --no-services (use running ones, from PARLEY_* env), --gateways N,
 * --actors N, --base-port P (gateways on P, P+1, ...; default 9991).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { launchCluster, ROOT, stopAll } from './cluster-launcher.ts';

const { values } = parseArgs({
  options: {
    'no-services': { type: 'boolean', default: false },
    gateways: { type: 'string', default: '2' },
    actors: { type: 'string', default: '2' },
    'base-port': { type: 'string', default: process.env.PARLEY_PORT ?? '9991' },
  },
});

const services = join(ROOT, 'scripts', 'services.sh');
if (!values['no-services']) {
  execFileSync('bash', [services, 'start', 'all'], { stdio: 'inherit' });
  const env = execFileSync('bash', [services, 'env'], { encoding: 'utf8' });
  for (const m of env.matchAll(/^export (\w+)=(.*)$/gm)) process.env[m[1]!] ??= m[2]!;
}

const gateways = Number(values.gateways);
const actorNodes = Number(values.actors);
const base = Number(values['base-port']);
const demoDir = process.env.PARLEY_DEMO_DIR ?? join(ROOT, '.parley', 'demo');
const procs = await launchCluster({ gateways, actorNodes, demoDir, ports: Array.from({ length: gateways + actorNodes }, (_, i) => base + i) });

const file = join(ROOT, '.parley', 'cluster.json');
mkdirSync(join(ROOT, '.parley'), { recursive: true });
writeFileSync(file, JSON.stringify({ demoDir, processes: procs.map((p) => ({ role: p.role, name: p.name, pid: p.pid, url: p.url, metricsUrl: p.metricsUrl })) }, null, 2));
const banner = procs.find((p) => p.role === 'gateway')!.output().split('\n').filter((l) => !l.startsWith('{')).join('\n');
process.stdout.write(`${banner}\nCluster up (${file}):\n${procs.map((p) => `  ${p.role.padEnd(8)} ${p.name.padEnd(11)} pid ${p.pid}  ${p.url}  metrics ${p.metricsUrl}`).join('\n')}\n\nCtrl-C stops everything.\n`);

for (const p of procs) {
  p.child.once('exit', (code, signal) => {
    if (!stopping) process.stderr.write(`${p.name} exited (${code ?? signal})\n${p.output().slice(-2000)}\n`);
  });
}

let stopping = false;
async function shutdown(): Promise<void> {
  if (stopping) return;
  stopping = true;
  await stopAll(procs);
  if (!values['no-services']) execFileSync('bash', [services, 'stop', 'all'], { stdio: 'inherit' });
  process.exit(0);
}
process.on('SIGINT', () => void shutdown());
process.on('SIGTERM', () => void shutdown());
