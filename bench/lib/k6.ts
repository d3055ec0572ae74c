/** Finds and runs k6 (built by scripts/install-k6.sh into .parley/tools/bin). */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO } from './server.ts';

export function findK6(): string | null {
  const local = join(REPO, '.parley/tools/bin/k6');
  if (existsSync(local)) return local;
  return spawnSync('k6', ['version'], { stdio: 'ignore' }).error === undefined ? 'k6' : null;
}

export function k6Version(k6: string): string {
  return spawnSync(k6, ['version'], { encoding: 'utf8' }).stdout.trim().split('\n')[0] ?? '';
}

export interface K6Run {
  script: string;
  code: number | null;
  /** The compact summary the script prints (its handleSummary). */
  output: string;
  /** k6's full end-of-test data (metrics by name). */
  summary: { metrics: Record<string, { values: Record<string, number> }> } | null;
}

export async function runK6(k6: string, script: string, env: Record<string, string>, timeoutSecs: number): Promise<K6Run> {
  const dir = mkdtempSync(join(tmpdir(), 'parley-k6-'));
  const json = join(dir, 'summary.json');
  // -a: k6's REST API on a free port, so parallel k6 runs do not collide on 6565.
  const args = ['run', '--quiet', '--no-color', '--address', '127.0.0.1:0', ...Object.entries({ ...env, SUMMARY_JSON: json }).flatMap(([k, v]) => ['-e', `${k}=${v}`]), join(REPO, script)];
  const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve) => {
    const p = spawn(k6, args, { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutSecs * 1000);
    p.on('exit', (c) => {
      clearTimeout(timer);
      resolve({ code: c, output: out });
    });
  });
  let summary: K6Run['summary'] = null;
  try {
    summary = JSON.parse(readFileSync(json, 'utf8'));
  } catch {
    summary = null;
  }
  rmSync(dir, { recursive: true, force: true });
  return { script, code, output: output.trim(), summary };
}
