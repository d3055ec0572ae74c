/**
 * Drops a Cassandra keyspace a test cluster or a CI run made (each makes its
 * own; left behind, a few dozen of them fill a small Cassandra heap).
 *
 *   node --import tsx scripts/drop-keyspace.ts <keyspace>
 */
import cassandra from 'cassandra-driver';
import { loadConfig } from '../lib/config.ts';

/** `env`: where the Cassandra is (PARLEY_CASSANDRA_CONTACT_POINTS...), this process's environment by default. */
export async function dropKeyspace(keyspace: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (!/^[a-z_][a-z0-9_]*$/.test(keyspace) || keyspace.startsWith('system')) throw new Error(`will not drop ${JSON.stringify(keyspace)}`);
  const { cassandra: c } = loadConfig(env);
  const client = new cassandra.Client({ contactPoints: c.contactPoints, localDataCenter: c.localDataCenter, socketOptions: { readTimeout: 60_000 } });
  try {
    await client.connect();
    await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
  } finally {
    await client.shutdown();
  }
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  const name = process.argv[2];
  if (!name) {
    process.stderr.write('usage: drop-keyspace.ts <keyspace>\n');
    process.exit(2);
  }
  await dropKeyspace(name);
}
