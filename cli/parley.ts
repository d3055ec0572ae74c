/**
 * `npx parley <command>`: the operator's command line, against a running
 * deployment in either mode (see `cli/connect.ts`). `--help` on every
 * command; `--json` for scripts; exit codes in `cli/output.ts`.
 */
import { Command, CommanderError } from 'commander';
import { loadConfig } from '../lib/config.ts';
import { backupCommands, type Offline } from './commands/backup.ts';
import { channelCommands } from './commands/channels.ts';
import { clientCommands } from './commands/clients.ts';
import { clusterCommands } from './commands/cluster.ts';
import { organizationCommands, type Run } from './commands/organizations.ts';
import { userCommands } from './commands/users.ts';
import { connect } from './connect.ts';
import { EXIT, fail } from './output.ts';

const program = new Command('parley')
  .description("Parley's operator command line: organizations, users, channels and the cluster of a running deployment")
  .option('--json', 'print JSON (for scripts)')
  .option('--mode <mode>', 'embedded (the admin socket in the data directory) or cluster (NATS); default: PARLEY_MODE or embedded')
  .option('--data-dir <dir>', 'the embedded server\'s data directory (default: PARLEY_DATA_DIR or .parley/data)')
  .option('--nats-url <url>', "the cluster's NATS (default: PARLEY_NATS_URL)")
  .option('--site-url <url>', "the site's URL, for organizations' links (default: PARLEY_SITE_URL)")
  .showHelpAfterError()
  .exitOverride();

/** The configuration the global options and the environment give. */
function configOf() {
  const o = program.opts<{ mode?: string; dataDir?: string; natsUrl?: string; siteUrl?: string }>();
  const env = { ...process.env };
  if (o.mode) env.PARLEY_MODE = o.mode;
  if (o.dataDir) env.PARLEY_DATA_DIR = o.dataDir;
  if (o.natsUrl) env.PARLEY_NATS_URL = o.natsUrl;
  if (o.siteUrl) env.PARLEY_SITE_URL = o.siteUrl;
  return loadConfig(env);
}
const json = () => program.opts<{ json?: boolean }>().json === true;

const run: Run = async (action) => {
  let dep;
  try {
    dep = await connect(configOf());
    await action(dep, json());
  } catch (err) {
    await dep?.close().catch(() => {});
    fail(err);
  }
  await dep.close();
};

/** Commands on the deployment's storage itself, with or without a running server (backup, restore, export). */
const offline: Offline = async (action) => {
  try {
    await action(configOf(), json());
  } catch (err) {
    fail(err);
  }
};

organizationCommands(program, run);
userCommands(program, run);
channelCommands(program, run);
clusterCommands(program, run);
clientCommands(program, run);
backupCommands(program, offline);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : EXIT.usage);
  fail(err);
}
