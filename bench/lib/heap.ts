/**
 * The live heap of a running server, from a V8 heap snapshot: the server is
 * started with `--heapsnapshot-signal=SIGUSR2` and writes the snapshot (after
 * a full collection, so only what is reachable) into its working directory.
 */
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** Node flags that let `liveHeap` ask a server for a snapshot. */
export const HEAP_SNAPSHOT_ARGS = ['--heapsnapshot-signal=SIGUSR2'];

/** Bytes of live heap by kind: the constructor's name for objects and closures, V8's node type otherwise. */
export async function liveHeap(pid: number, cwd: string): Promise<{ total: number; by: Map<string, number> }> {
  const before = new Set(readdirSync(cwd));
  process.kill(pid, 'SIGUSR2');
  let file: string | undefined;
  for (let i = 0; i < 600 && !file; i++) {
    await sleep(500);
    file = readdirSync(cwd).find((f) => f.endsWith('.heapsnapshot') && !before.has(f));
  }
  if (!file) throw new Error('no heap snapshot was written');
  // V8 writes it in pieces: read it once it parses.
  let snap: { snapshot: { meta: { node_fields: string[]; node_types: [string[]] } }; nodes: number[]; strings: string[] } | null = null;
  for (let i = 0; i < 300 && !snap; i++) {
    await sleep(1000);
    try {
      snap = JSON.parse(readFileSync(join(cwd, file), 'utf8'));
    } catch {
      snap = null;
    }
  }
  if (!snap) throw new Error(`the heap snapshot ${file} never became whole`);
  rmSync(join(cwd, file));
  const fields = snap.snapshot.meta.node_fields;
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f)) as [number, number, number];
  const types = snap.snapshot.meta.node_types[0];
  const by = new Map<string, number>();
  let total = 0;
  for (let i = 0; i < snap.nodes.length; i += fields.length) {
    const type = types[snap.nodes[i + typeAt]!]!;
    const key = type === 'object' || type === 'closure' ? snap.strings[snap.nodes[i + nameAt]!]! : `(${type})`;
    const bytes = snap.nodes[i + sizeAt]!;
    by.set(key, (by.get(key) ?? 0) + bytes);
    total += bytes;
  }
  return { total, by };
}

/** What grew from one snapshot to the next, by kind, divided by `per` (the largest `top`). */
export function growth(before: Map<string, number>, after: Map<string, number>, per = 1, top = 12): Record<string, number> {
  const grown = [...after].map(([k, v]) => [k, (v - (before.get(k) ?? 0)) / per] as const);
  return Object.fromEntries(grown.sort((a, b) => b[1] - a[1]).slice(0, top).map(([k, v]) => [k, Math.round(v)]));
}
