/** How the CLI answers: a table for people, `--json` for scripts, one line on stderr and an exit code on failure. */
import { ApiError } from '../lib/errors.ts';
import { UnreachableError } from './connect.ts';

/** Exit codes: 0 done, 1 refused by the server (the API's error), 2 bad usage, 3 deployment unreachable. */
export const EXIT = { refused: 1, usage: 2, unreachable: 3 } as const;

/** A mistake in the command line that commander cannot see (exit code 2). */
export class UsageError extends Error {}

export function table(rows: Array<Record<string, unknown>>, columns: string[]): string {
  if (rows.length === 0) return '(none)\n';
  const cell = (v: unknown) => (v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v));
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (vals: string[]) => vals.map((v, i) => v.padEnd(widths[i]!)).join('  ').trimEnd();
  return `${[line(columns), ...rows.map((r) => line(columns.map((c) => cell(r[c]))))].join('\n')}\n`;
}

/** Prints `value` as JSON with --json, else as `human(value)`. */
export function print<T>(json: boolean, value: T, human: (v: T) => string): void {
  process.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : human(value));
}

/** Turns a failure into its message on stderr and the exit code. */
export function fail(err: unknown): never {
  if (err instanceof ApiError) {
    process.stderr.write(`error: ${err.message} (${err.code})\n`);
    process.exit(EXIT.refused);
  }
  if (err instanceof UnreachableError) {
    process.stderr.write(`error: ${err.message}\n`);
    process.exit(EXIT.unreachable);
  }
  if (err instanceof UsageError) {
    process.stderr.write(`error: ${err.message}\n`);
    process.exit(EXIT.usage);
  }
  process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(EXIT.refused);
}

/** Reads a secret from standard input (a pipe, or a line typed at the terminal): never from the command line, where shells keep it. */
export async function readSecret(what: string): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write(`${what}: `);
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) {
    chunks.push(c as Buffer);
    if (process.stdin.isTTY && String(c).includes('\n')) break;
  }
  const text = Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
  if (!text) throw new UsageError(`empty ${what}`);
  return text;
}
