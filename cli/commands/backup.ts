/**
 * `parley backup | restore | export | import | forget-checkpoints`: the
 * deployment's backups, one organization's export, and the step before a
 * rollback to an older build (storage/backup.ts, storage/export.ts; steps in
 * docs/operations.md). Backup, restore and export work on the storage itself
 * (a running server may go on beside a backup or an export); import writes
 * the storage and then registers the organization in the running
 * deployment's directory, so it needs the deployment up.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { forgetCheckpoint } from '../../actors/realm/state/checkpoint.ts';
import type { Config } from '../../lib/config.ts';
import { backupEmbedded, type NodetoolOptions, openStorage, restoreCassandra, restoreEmbedded, snapshotCassandra } from '../../storage/backup.ts';
import { exportedRealmId, exportRealm, freeRealmId, importRealm, registerImported } from '../../storage/export.ts';
import { T } from '../../storage/tables.ts';
import { connect, type Deployment } from '../connect.ts';
import { listOrganizations } from '../organization.ts';
import { print, UsageError } from '../output.ts';

export type Offline = (action: (config: Config, json: boolean) => Promise<void>) => Promise<void>;

interface ClusterOptions {
  jmxHost?: string;
  jmxPort?: string;
  cassandraDataDir?: string;
  cassandraLib?: string;
}

/** nodetool's target: the node this runs on (JMX listens on loopback only, scripts/services.sh). */
function jmx(o: ClusterOptions): NodetoolOptions {
  const port = Number(o.jmxPort ?? process.env.PARLEY_CASSANDRA_JMX_PORT);
  if (!Number.isInteger(port) || port <= 0) throw new UsageError("cluster mode needs the Cassandra node's JMX port: --jmx-port or PARLEY_CASSANDRA_JMX_PORT");
  return { jmxHost: o.jmxHost ?? '127.0.0.1', jmxPort: port, cassandraLib: o.cassandraLib };
}

const clusterOptions = (c: Command) =>
  c
    .option('--jmx-host <host>', 'cluster: the Cassandra node (default 127.0.0.1: run this on the node)')
    .option('--jmx-port <port>', 'cluster: its JMX port (default PARLEY_CASSANDRA_JMX_PORT)')
    .option('--cassandra-lib <dir>', "cluster: the Cassandra jars, for nodetool (default: scripts/services.sh's)");

export function backupCommands(program: Command, offline: Offline): void {
  clusterOptions(
    program
      .command('backup <dir>')
      .description('back up the whole deployment into a new directory while it runs: embedded, the data directory (lmdb copy and uploads); cluster, a snapshot of the keyspace on this Cassandra node (run it on every node)')
      .option('--cassandra-data-dir <dir>', "cluster: the node's data_file_directories entry"),
  ).action((dir: string, o: ClusterOptions) =>
    offline(async (config, json) => {
      let manifest;
      if (config.mode === 'embedded') manifest = await backupEmbedded(config.dataDir, dir);
      else {
        if (!o.cassandraDataDir) throw new UsageError("cluster mode needs the node's data directory: --cassandra-data-dir");
        manifest = await snapshotCassandra({ ...jmx(o), keyspace: config.cassandra.keyspace, cassandraDataDir: o.cassandraDataDir, outDir: dir });
      }
      print(json, { dir: resolve(dir), ...manifest }, (m) => `backed up (${m.mode}${m.keyspace ? `, keyspace ${m.keyspace}, ${m.tables!.length} tables` : ''}) into ${m.dir}\n`);
    }),
  );

  clusterOptions(
    program
      .command('restore <dir>')
      .description('restore a backup onto a fresh deployment, then start it: embedded, into a new data directory (--data-dir); cluster, into a new keyspace (PARLEY_CASSANDRA_KEYSPACE) on this node'),
  ).action((dir: string, o: ClusterOptions) =>
    offline(async (config, json) => {
      if (config.mode === 'embedded') {
        await restoreEmbedded(dir, config.dataDir);
        print(json, { dataDir: resolve(config.dataDir) }, (r) => `restored into ${r.dataDir}: start the server on it\n`);
      } else {
        const { tables } = await restoreCassandra({ ...jmx(o), backupDir: dir, cassandra: config.cassandra });
        print(json, { keyspace: config.cassandra.keyspace, tables }, (r) => `restored ${r.tables} tables into keyspace ${r.keyspace}: start the deployment on it\n`);
      }
    }),
  );

  program
    .command('export <file>')
    .description("export one organization (its users, channels, messages, settings and uploads) to a file, from the deployment's storage (a server may be running)")
    .requiredOption('--org <org>', "the organization: its subdomain, its realm ID, or '.' for the root domain's")
    .action((file: string, o: { org: string }) =>
      offline(async (config, json) => {
        const storage = await openStorage(config);
        try {
          const orgs = await T.organizations.partition().values(storage.store);
          const subdomain = o.org === '.' ? '' : o.org.toLowerCase();
          const org = /^\d+$/.test(o.org) ? orgs.find((x) => x.realmId === Number(o.org)) : orgs.find((x) => x.subdomain === subdomain);
          if (!org) throw new UsageError(`No organization '${o.org}' in this deployment`);
          const counts = await exportRealm(storage.store, storage.files, org.realmId, file);
          print(json, { file: resolve(file), realmId: org.realmId, subdomain: org.subdomain, ...counts }, (r) => `exported ${r.subdomain || '(root domain)'} (realm ${r.realmId}): ${r.rows} rows, ${r.timers} timers, ${r.files} files into ${r.file}\n`);
        } finally {
          await storage.close();
        }
      }),
    );

  program
    .command('forget-checkpoints')
    .description(
      "before starting an older build on this storage (a rollback): marks every organization's realm checkpoint stale, so the next load, by any build, reads the realm from its tables; run it with the deployment stopped (a running realm writes a new checkpoint)",
    )
    .action(() =>
      offline(async (config, json) => {
        const storage = await openStorage(config);
        try {
          const orgs = await T.organizations.partition().values(storage.store);
          const writer = await storage.store.claim('tool:forget-checkpoints', 1);
          if (!writer) throw new Error('the store refused the tool its writes');
          await writer.commit(orgs.map((o) => forgetCheckpoint(o.realmId)));
          print(json, { realms: orgs.map((o) => o.realmId) }, (r) => `${r.realms.length} organizations will load from their tables: start the other build now\n`);
        } finally {
          await storage.close();
        }
      }),
    );

  program
    .command('import <file>')
    .description('import an exported organization into this running deployment and register it under a subdomain; IDs and upload links stay valid')
    .requiredOption('--subdomain <subdomain>', "its host part here ('.' for the root domain)")
    .option('--realm-id <id>', "the realm ID to import as (default: the export's, or the next free one if that is taken)")
    .action((file: string, o: { subdomain: string; realmId?: string }) =>
      offline(async (config, json) => {
        const dep = await connect(config);
        try {
          const r = await importInto(dep, config, file, o);
          print(json, r, (v) => `imported realm ${v.exportedRealmId} as realm ${v.realmId} at ${v.subdomain || '(root domain)'}: ${v.rows} rows, ${v.timers} timers, ${v.files} files\n`);
        } finally {
          await dep.close();
        }
      }),
    );
}

/** Checks the subdomain and picks the realm ID against the running deployment's directory, imports into its storage, registers it. */
async function importInto(dep: Deployment, config: Config, file: string, o: { subdomain: string; realmId?: string }) {
  const subdomain = o.subdomain === '.' ? '' : o.subdomain.toLowerCase();
  const orgs = await listOrganizations(dep);
  const taken = orgs.find((x) => x.subdomain === subdomain);
  if (taken) throw new UsageError(`Subdomain '${o.subdomain}' is organization ${taken.realmId}'s: choose another (--subdomain)`);
  let realmId = o.realmId === undefined ? await exportedRealmId(file) : Number(o.realmId);
  if (!Number.isSafeInteger(realmId) || realmId < 1) throw new UsageError(`bad --realm-id ${o.realmId}`);
  if (o.realmId === undefined && orgs.some((x) => x.realmId === realmId)) realmId = await freeRealmId(dep.actors);
  // The CLI's configuration names the storage (PARLEY_DATA_DIR or PARLEY_CASSANDRA_KEYSPACE) and the shard count (PARLEY_SHARDS).
  const storage = await openStorage(config);
  let imported;
  try {
    imported = await importRealm(storage.store, storage.files, file, { shards: config.shards, realmId, subdomain });
  } finally {
    await storage.close();
  }
  return { ...imported, organization: await registerImported(dep.actors, imported) };
}
