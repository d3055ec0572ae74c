// Bots from zulip_bots (PyPI), unchanged: `zulip-run-bot helloworld` answers
// a direct message, `zulip-run-bot followup` copies what it is told into a
// channel. Each runs as its own process with the demo bot's zuliprc.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { type Api, uniq } from './helpers/api.ts';
import { pythonClient } from './helpers/python.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const maria = s.api.as(s.demo.member1);
const owner = s.api.as(s.demo.owner);
const bot = s.demo.bot;
const dir = mkdtempSync(join(tmpdir(), 'parley-bots-'));
const zuliprc = join(dir, 'bot.zuliprc');
writeFileSync(zuliprc, `[api]\nemail=${bot.email}\nkey=${bot.apiKey}\nsite=${s.urls[0]}\n`, { mode: 0o600 });
const runBot = pythonClient('bots');

/** Starts `zulip-run-bot name`; resolves once it waits for messages (its queue is registered). */
async function startBot(t: Test, name: string, extra: string[] = []): Promise<ChildProcess> {
  const child = spawn(runBot, [name, '--config-file', zuliprc, ...extra], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => void child.kill('SIGKILL'));
  let out = '';
  await new Promise<void>((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`${name} did not start:\n${out}`)), 60_000);
    const seen = (d: Buffer) => {
      out += d.toString();
      if (out.includes('starting message handling')) {
        clearTimeout(timer);
        res();
      }
    };
    child.stdout!.on('data', seen);
    child.stderr!.on('data', seen);
    child.once('exit', (code) => rej(new Error(`${name} exited (${code}):\n${out}`)));
  });
  // It registers its queue right after saying so.
  await new Promise((r) => setTimeout(r, 1500));
  return child;
}

/** Waits for the newest message in `narrow` (as `api` sees it) that `match` accepts. */
async function waitForMessage(api: Api, narrow: unknown[], match: (m: any) => boolean, timeoutMs = 20_000): Promise<any> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const r = await api.ok('GET', '/messages', { anchor: 'newest', num_before: 20, num_after: 0, apply_markdown: false, narrow });
    const m = r.messages.find(match);
    if (m) return m;
    await new Promise((r) => setTimeout(r, 300));
  }
  return null;
}

t.test('bots - zulip-run-bot helloworld answers a direct message', async (t) => {
  await startBot(t, 'helloworld');
  const asked = await maria.ok('POST', '/messages', { type: 'direct', to: [bot.userId], content: uniq('hello bot') });
  const reply = await waitForMessage(maria, [{ operator: 'dm', operand: [bot.userId] }], (m) => m.sender_id === bot.userId && m.id > asked.id);
  t.ok(reply, 'the bot answered');
  t.equal(reply?.content, 'beep boop', 'as the helloworld bot does');
});

t.test('bots - zulip-run-bot followup copies what it is told into its channel', async (t) => {
  const channel = uniq('followup');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }] });
  const conf = join(dir, `${channel}.conf`);
  writeFileSync(conf, `[followup]\nstream = ${channel}\n`);
  await startBot(t, 'followup', ['--bot-config-file', conf]);
  const task = uniq('remember the milk');
  await maria.ok('POST', '/messages', { type: 'direct', to: [bot.userId], content: task });
  const copied = await waitForMessage(owner, [{ operator: 'channel', operand: channel }], (m) => m.sender_id === bot.userId);
  t.ok(copied, 'the bot posted in the channel');
  t.equal(copied?.content, `from ${s.demo.member1.email}: ${task}`, 'what it was told, and by whom');
  t.equal(copied?.subject, s.demo.member1.email, 'in a topic named for the sender');
});
