/**
 * Reads every row of an embedded server's data directory (the server must be
 * stopped), so a test can compare the store itself before and after a
 * request, not only what the API shows of it.
 */
import { open } from 'lmdb';
import { TABLE_DB_OPTIONS } from '../../storage/embedded.ts';
import { TABLE_SCHEMAS } from '../../storage/tables.ts';

export type Dump = Record<string, Array<[unknown, unknown]>>;

export function dumpStore(dataDir: string): Dump {
  const root = open({ path: dataDir, maxDbs: 64, compression: false, readOnly: true });
  try {
    const out: Dump = {};
    for (const { name } of TABLE_SCHEMAS) {
      const db = root.openDB({ name, ...TABLE_DB_OPTIONS });
      // Every row; the table's shared record shapes (a symbol key) are lmdb's, not a row.
      out[name] = [...db.getRange({})].filter(({ key }) => typeof key !== 'symbol').map(({ key, value }) => [key, value]);
    }
    const fences = root.openDB({ name: '_fences' });
    out._fences = [...fences.getRange({})].map(({ key, value }) => [key, value]);
    return out;
  } finally {
    root.close();
  }
}
