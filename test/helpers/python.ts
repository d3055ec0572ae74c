/**
 * The official Python client (`zulip` on PyPI), installed by
 * `scripts/python-clients.sh` into .parley/py, driven from tests: a script
 * gets a `client` built from the user's credentials and the server's URL and
 * prints one JSON value, which the test reads.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { type Creds, noteBlockedLoop } from './api.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');

const installed = new Map<string, string>();

/** `scripts/python-clients.sh <what>`: installs that client on first use and gives the path it prints. */
export function pythonClient(what: 'client' | 'bots' | 'term'): string {
  let path = installed.get(what);
  if (!path) {
    path = execFileSync('bash', [resolve(ROOT, 'scripts/python-clients.sh'), what], { encoding: 'utf8' }).trim().split('\n').pop()!;
    installed.set(what, path);
  }
  return path;
}

/** The virtualenv's python, installing the client on first use. */
export const pythonWithZulip = (): string => pythonClient('client');

/**
 * Runs `body` (Python, indented by nothing) with `client = zulip.Client(...)`
 * for `creds` against `site`; `body` must end by printing one JSON value.
 */
export function runPython(site: string, creds: Creds, body: string): unknown {
  const script = ['import json, sys, zulip', `client = zulip.Client(email=${JSON.stringify(creds.email)}, api_key=${JSON.stringify(creds.apiKey)}, site=${JSON.stringify(site)})`, body].join('\n');
  const r = spawnSync(pythonWithZulip(), ['-c', script], { encoding: 'utf8', timeout: 60_000 });
  noteBlockedLoop();
  if (r.status !== 0) throw new Error(`python client failed (${r.status}): ${r.stderr}`);
  const lines = r.stdout.trim().split('\n');
  return JSON.parse(lines[lines.length - 1]!);
}
