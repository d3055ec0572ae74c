/**
 * zulip-terminal (`zulip-term` on PyPI, installed by `scripts/python-clients.sh
 * term` on Python 3.10) driven in tmux as a person would use it: keys go in
 * with send-keys, the screen comes back with capture-pane. Each test server
 * gets its own tmux socket, so nothing else on the machine is touched.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Creds } from './api.ts';
import { pythonClient } from './python.ts';

/** The zulip-term executable, installing it on first use. */
export const zulipTermPath = (): string => pythonClient('term');

export class Terminal {
  private readonly socket = `parley-zt-${process.pid}`;
  readonly dir = mkdtempSync(join(tmpdir(), 'parley-zt-'));

  private constructor(readonly session: string) {}

  /** Starts zulip-term with a zuliprc for `creds` at `site`, or (creds null) with none, so it asks to log in. */
  static start(session: string, site: string, creds: Creds | null): Terminal {
    const t = new Terminal(session);
    const rc = join(t.dir, 'zuliprc');
    if (creds) writeFileSync(rc, `[api]\nemail=${creds.email}\nkey=${creds.apiKey}\nsite=${site}\n`, { mode: 0o600 });
    // The shell stays after zulip-term ends, so a crash is still on the screen to read. Once logged
    // in, its stderr (a background thread's traceback would be printed over the screen) goes to a
    // file; the login dialogue writes its prompts there, so without credentials it stays on screen.
    const stderr = creds ? ` 2>>${join(t.dir, 'stderr.log')}` : '';
    const command = `${zulipTermPath()} -c ${rc}${stderr}; echo "zulip-term exited with $?"; sleep 3600`;
    t.tmux('new-session', '-d', '-s', session, '-x', '200', '-y', '50', '-c', t.dir, command);
    return t;
  }

  private tmux(...args: string[]): string {
    return execFileSync('tmux', ['-L', this.socket, ...args], { encoding: 'utf8' });
  }

  screen(): string {
    return this.tmux('capture-pane', '-p', '-t', this.session);
  }

  /** Presses keys by tmux's names (`Enter`, `Tab`, `C-d`, `j`). */
  keys(...keys: string[]): void {
    this.tmux('send-keys', '-t', this.session, ...keys);
  }

  /** Types text as it is. */
  type(text: string): void {
    this.tmux('send-keys', '-t', this.session, '-l', text);
  }

  /** Waits until the screen shows `what`; fails with the screen (and the client's traceback) if it never does. */
  async waitFor(what: string | RegExp, timeoutMs = 20_000): Promise<string> {
    return this.waitUntil(String(what), (screen) => (typeof what === 'string' ? screen.includes(what) : what.test(screen)), timeoutMs);
  }

  /** Waits until `holds` accepts the screen, running `nudge` (a key press) before each look. */
  async waitUntil(what: string, holds: (screen: string) => boolean, timeoutMs = 20_000, nudge?: () => void): Promise<string> {
    const until = Date.now() + timeoutMs;
    let screen = '';
    while (Date.now() < until) {
      nudge?.();
      screen = this.screen();
      if (holds(screen)) return screen;
      await new Promise((r) => setTimeout(r, nudge ? 1000 : 200));
    }
    throw new Error(`zulip-term never showed ${what}; the screen:\n${screen}\n${this.traceback()}`);
  }

  /** zulip-term's own crash log (written to its working directory) and what it wrote to stderr, if anything. */
  traceback(): string {
    return ['zulip-terminal-tracebacks.log', 'stderr.log']
      .map((f) => {
        try {
          return execFileSync('tail', ['-30', join(this.dir, f)], { encoding: 'utf8' });
        } catch {
          return '';
        }
      })
      .filter(Boolean)
      .join('\n');
  }

  /** The zulip-term process (the pane's shell runs it as its child). */
  clientPid(): number {
    const shell = this.tmux('list-panes', '-t', this.session, '-F', '#{pane_pid}').trim();
    const pid = execFileSync('pgrep', ['-P', shell, '-f', 'zulip-term'], { encoding: 'utf8' }).trim().split('\n')[0];
    if (!pid) throw new Error(`no zulip-term process under the pane's shell ${shell}`);
    return Number(pid);
  }

  stop(): void {
    try {
      this.tmux('kill-session', '-t', this.session);
    } catch {
      // already gone
    }
  }

  /** Ends this test process's tmux server (every session on its socket). */
  static stopAll(): void {
    try {
      execFileSync('tmux', ['-L', `parley-zt-${process.pid}`, 'kill-server'], { stdio: 'ignore' });
    } catch {
      // no server was started
    }
  }
}
