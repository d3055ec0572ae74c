/**
 * Parley's one entry point. `PARLEY_ROLE` picks gateway, actors or both
 * (`all`, the default); `PARLEY_MODE` picks embedded (one process, nothing
 * else to install) or cluster (NATS, Redis, Cassandra).
 */
import { startParley } from './lib/app.ts';
import { type Config, loadConfig } from './lib/config.ts';
import { seedDemo, writeZuliprcs } from './lib/demo.ts';
import { log } from './lib/log.ts';

// Everything the server writes (the embedded store, uploads, outbox mail, zuliprc files)
// is readable by its own user only.
process.umask(0o077);

let config: Config;
try {
  config = loadConfig();
} catch (err) {
  // A configuration mistake is the operator's to fix: its message, not a stack trace.
  process.stderr.write(`parley: ${(err as Error).message}\n`);
  process.exit(1);
}
const parley = await startParley(config);
log.info({ mode: config.mode, port: parley.port }, 'parley started');
process.stdout.write(`Parley (${config.mode}, role ${config.role}) listening on http://${config.host}:${parley.port}\n`);
if (parley.metricsPort !== null) process.stdout.write(`Metrics for Prometheus on http://${config.metrics!.host}:${parley.metricsPort}/metrics\n`);

if (config.seedDemo && config.role !== 'actors') {
  const creds = await seedDemo(parley.actors);
  // With PARLEY_PORT=0 the port is only known now.
  const site = process.env.PARLEY_SITE_URL ?? `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${parley.port}`;
  const files = writeZuliprcs(config.demoDir, site, creds);
  const lines = creds.map((c, i) => `  ${c.key.padEnd(9)} ${c.email.padEnd(26)} ${c.apiKey ?? '(kept in its zuliprc)'.padEnd(32)}   ${files[i]}`);
  process.stdout.write(`\nDemo organization "Parley Demo" at ${site}\n\n  role      email                      API key                            zuliprc\n${lines.join('\n')}\n\n`);
}

let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info({ signal }, 'shutting down');
  const drainMs = config.role === 'actors' ? 0 : config.drainDelaySecs * 1000;
  const force = setTimeout(() => process.exit(1), 20_000 + drainMs);
  force.unref();
  try {
    // Behind a load balancer: out of its rotation before the listener closes (deploy/README.md).
    if (drainMs > 0) await parley.gateway?.drain(drainMs);
    await parley.stop();
  } catch (err) {
    log.error({ err }, 'error during shutdown');
  }
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
