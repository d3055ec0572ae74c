/**
 * A small organization for the backup and export round trips: a new user, a
 * channel with messages, an upload linked from a message, a changed setting;
 * a sender that keeps writing while a backup runs; and the check, through
 * the HTTP API of the restored deployment, that all of it is back.
 */
import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Test } from 'tap';
import { type Api, type Creds, uniq } from './api.ts';
import type { TestServer } from './server.ts';

/** Server settings for these tests: the writer sends faster than a user's default budget allows. */
export const NO_LIMITS = { PARLEY_RATE_LIMITS: 'false' } as const;

export interface Sent {
  id: number;
  content: string;
}

export interface OrgFixture {
  channel: string;
  user: { id: number; email: string; fullName: string; creds: Creds };
  upload: { url: string; data: Buffer };
  description: string;
  /** Acknowledged sends, in order. */
  sent: Sent[];
}

const auth = (c: Creds) => ({ authorization: `Basic ${Buffer.from(`${c.email}:${c.apiKey}`).toString('base64')}` });

export async function send(api: Api, channel: string, content: string): Promise<Sent> {
  const { id } = await api.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'backup', content });
  return { id: id as number, content };
}

/** Fills the demo realm of `s` with what a restore must bring back. */
export async function populate(s: TestServer, messages = 20): Promise<OrgFixture> {
  const owner = s.api.as(s.demo.owner);
  const email = `${uniq('kept')}@parley.example`;
  const fullName = 'Kept User';
  const { user_id } = await owner.ok('POST', '/users', { email, password: 'a long password', full_name: fullName });
  const { api_key } = await s.api.ok('POST', '/fetch_api_key', { username: email, password: 'a long password' });
  const user = { id: user_id as number, email, fullName, creds: { email, apiKey: api_key as string } };
  const channel = uniq('backup');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: [s.demo.owner.userId, s.demo.member1.userId, user.id] });
  const data = randomBytes(40 * 1024);
  const fd = new FormData();
  fd.append('file', new Blob([new Uint8Array(data)], { type: 'application/octet-stream' }), 'report.bin');
  const res = await fetch(`${s.urls[0]}/api/v1/user_uploads`, { method: 'POST', headers: auth(s.demo.member1), body: fd });
  const { url } = (await res.json()) as { url: string };
  const sent: Sent[] = [await send(s.api.as(s.demo.member1), channel, `the report: [report.bin](${url})`)];
  for (let i = 0; i < messages; i++) sent.push(await send(s.api.as(i % 2 ? s.demo.owner : user.creds), channel, `message ${i} ${uniq('m')}`));
  const description = `Restored ${uniq('org')}`;
  await owner.ok('PATCH', '/realm', { description });
  return { channel, user, upload: { url, data }, description, sent };
}

/** Sends to the fixture's channel until `stop()`; `acked` holds every acknowledged send. */
export function keepWriting(s: TestServer, org: OrgFixture): { acked: Sent[]; stop(): Promise<void> } {
  const acked: Sent[] = [];
  let running = true;
  const loop = (async () => {
    // Paced: writes keep coming without taking the CPU the backup needs (servers here run without rate limits, NO_LIMITS).
    for (let i = 0; running; i++) {
      acked.push(await send(s.api.as(s.demo.member1), org.channel, `during ${i} ${uniq('w')}`));
      await sleep(20);
    }
  })();
  return {
    acked,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

/** A new server directory holding `s`'s demo credentials (zuliprc files), for a restored or imported realm. */
export function dirWithDemo(s: TestServer): string {
  const dir = mkdtempSync(join(tmpdir(), 'parley-restored-'));
  cpSync(join(s.dataDir!, 'demo'), join(dir, 'demo'), { recursive: true });
  return dir;
}

/** Every message of the fixture's channel on `s`, by ID (raw content). */
export async function channelMessages(s: TestServer, org: OrgFixture): Promise<Map<number, string>> {
  const narrow = [{ operator: 'channel', operand: org.channel }];
  const r = await s.api.as(s.demo.owner).ok('GET', '/messages', { anchor: 'newest', num_before: 5000, num_after: 0, narrow: JSON.stringify(narrow), apply_markdown: false });
  return new Map((r.messages as Array<{ id: number; content: string }>).map((m) => [m.id, m.content]));
}

/**
 * Checks, through the HTTP API of `s`, that the organization of `org` is
 * back: the user (who logs in with their API key), every message of `must`
 * with its content, the upload's bytes for its uploader and for a reader of
 * the message, the changed setting; and that any message of `may` (sent
 * while the backup ran) is either missing or whole.
 */
export async function checkRestored(t: Test, s: TestServer, org: OrgFixture, must: Sent[], may: Sent[] = []): Promise<void> {
  const users = (await s.api.as(s.demo.owner).ok('GET', '/users')).members as Array<{ user_id: number; email: string; full_name: string }>;
  t.match(
    users.find((u) => u.user_id === org.user.id),
    { email: org.user.email, full_name: org.user.fullName },
    'the new user is back under its ID',
  );
  t.equal((await s.api.as(org.user.creds).ok('GET', '/users/me')).user_id, org.user.id, 'and logs in with its API key');
  const got = await channelMessages(s, org);
  const missing = must.filter((m) => got.get(m.id) !== m.content);
  t.same(missing, [], `all ${must.length} acknowledged messages are back with their content`);
  const torn = may.filter((m) => got.has(m.id) && got.get(m.id) !== m.content);
  if (may.length > 0) t.same(torn, [], `messages sent during the backup are whole or absent (${may.filter((m) => got.has(m.id)).length} of ${may.length} in it)`);
  for (const who of [s.demo.member1, org.user.creds]) {
    // The file itself is outside /api/v1 (there, GET gives a temporary URL).
    const res = await fetch(`${s.urls[0]}${org.upload.url}`, { headers: auth(who) });
    t.equal(res.status, 200, `upload served to ${who.email}`);
    t.ok(Buffer.from(await res.arrayBuffer()).equals(org.upload.data), 'with its bytes');
  }
  const reg = await s.api.as(s.demo.owner).ok('POST', '/register', { fetch_event_types: JSON.stringify(['realm']) });
  t.ok((reg.realm_description as string).includes(org.description), 'the changed setting is back');
}

/** A GET through the gateway with the `Host` of an organization (fetch cannot set Host). */
export function hostGet(port: number, host: string, path: string, creds: Creds): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const auth = `Basic ${Buffer.from(`${creds.email}:${creds.apiKey}`).toString('base64')}`;
    const req = httpRequest({ host: '127.0.0.1', port, path, headers: { host, authorization: auth } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}
