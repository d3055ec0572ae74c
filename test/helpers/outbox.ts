// Mail the server wrote to its outbox (embedded: its data directory; cluster
// runs name the shared directory in PARLEY_OUTBOX_DIR).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The outbox of a server started with `dataDir`, or the cluster's; null when unknown. */
export function outboxOf(s: { dataDir: string | null }): string | null {
  return process.env.PARLEY_OUTBOX_DIR ?? (s.dataDir ? join(s.dataDir, 'data', 'outbox') : null);
}

/** The path of the first link under `prefix` in mail sent to `to`, or null. */
export function mailedLink(outbox: string | null, to: string, prefix: string): string | null {
  if (!outbox || !existsSync(outbox)) return null;
  const pattern = new RegExp(`https?://\\S+${prefix.replace(/[/]/g, '\\/')}[A-Za-z0-9_-]+`);
  for (const f of readdirSync(outbox)) {
    const text = readFileSync(join(outbox, f), 'utf8');
    if (!text.includes(`To: ${to}`)) continue;
    const m = pattern.exec(text);
    if (m) return new URL(m[0]).pathname;
  }
  return null;
}
