/**
 * The demo organization seeded on first start: one user of every role (an
 * owner, an administrator, a moderator, two members, a guest) and a bot, a
 * `general` channel they all read, and one zuliprc file per user in the
 * format existing clients read.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Role } from '../actors/model.ts';
import { DIRECTORY_ID, directoryRef, SERVER_CALLER } from '../actors/directory/ref.ts';
import { realmActorId, realmRef } from '../actors/realm/ref.ts';
import type { ActorClient } from '../actors/runtime/client.ts';
import { ApiError } from './errors.ts';
import { newApiKey } from './secrets.ts';

export const DEMO_REALM_ID = 1;

export const DEMO_USERS = [
  { key: 'owner', email: 'olivia@parley.example', fullName: 'Olivia Owner', role: Role.OWNER, canCreateUsers: true, canChangeUserEmails: true },
  { key: 'admin', email: 'adam@parley.example', fullName: 'Adam Admin', role: Role.ADMIN, canCreateUsers: false },
  { key: 'member1', email: 'maria@parley.example', fullName: 'Maria Member', role: Role.MEMBER, canCreateUsers: false },
  { key: 'member2', email: 'mateo@parley.example', fullName: 'Mateo Member', role: Role.MEMBER, canCreateUsers: false },
  { key: 'moderator', email: 'mona@parley.example', fullName: 'Mona Moderator', role: Role.MODERATOR, canCreateUsers: false },
  { key: 'guest', email: 'gus@parley.example', fullName: 'Gus Guest', role: Role.GUEST, canCreateUsers: false },
  { key: 'bot', email: 'demo-bot@parley.example', fullName: 'Demo Bot', role: Role.MEMBER, canCreateUsers: false, isBot: true },
] as const;

/**
 * Server settings for a load test driven by the demo users (the bench, the
 * cluster tests' traffic): each demo user gets a rate limit of its own, far
 * above the default, and as many event queues as the test holds, so the
 * limiter still runs on every request (its cost is measured) but does not
 * cut the load off. Documented in README's configuration section.
 */
export function loadTestLimits(requestsPerMinute = 10_000_000, queuesPerUser = 1_000_000): Record<string, string> {
  return {
    PARLEY_RATE_LIMIT_OVERRIDES: DEMO_USERS.map((u) => `${u.email}=${requestsPerMinute}/60`).join(','),
    PARLEY_MAX_QUEUES_PER_USER: String(queuesPerUser),
  };
}

export interface DemoCredential {
  key: string;
  email: string;
  /** Known only when the realm was created by this call (keys are stored hashed); otherwise null. */
  apiKey: string | null;
  fullName: string;
  role: number;
  isBot: boolean;
}

/** Creates the demo realm if it is empty (idempotent) and returns every demo user's credentials. */
export async function seedDemo(actors: ActorClient, deadlineMs = 60_000): Promise<DemoCredential[]> {
  const realm = realmActorId(DEMO_REALM_ID);
  const started = Date.now();
  let result;
  // The keys are chosen here, so a retry whose first attempt did the work (and
  // timed out) is told they hold.
  const users = DEMO_USERS.map(({ key: _k, ...u }) => ({ ...u, apiKey: newApiKey() }));
  // Whether an attempt failed: one that did the work may not have been answered.
  let retried = false;
  // In cluster mode the realm's shard may not have an owner yet: retry until it does.
  while (!result) {
    try {
      // The demo is the organization at the root domain, with its realm ID fixed (an older data directory holds it already).
      // Its users have Gravatars, as Zulip's development fixtures do (a new organization's default is Jdenticons).
      result = await actors.call(directoryRef, DIRECTORY_ID, { type: 'createOrganization', caller: SERVER_CALLER, subdomain: '', name: 'Parley Demo', users, realmId: DEMO_REALM_ID, defaultAvatarSource: 'G' as const });
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 503) || Date.now() - started > deadlineMs) throw err;
      retried = true;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  const creds = DEMO_USERS.map((spec) => {
    const u = result.users.find((x: { email: string }) => x.email === spec.email);
    if (!u) throw new Error(`demo user ${spec.email} missing`);
    return { key: spec.key, email: u.email, apiKey: u.apiKey, fullName: u.fullName, role: u.role, isBot: u.isBot, userId: u.userId };
  });
  // An organization that existed is left as its users made it: who left #general, who was deactivated.
  if (!result.created && !retried) return creds;
  const owner = creds[0]!;
  // The demo organization (local runs, the tests, the bench) is made without Notification Bot's
  // "channel events" notices (FL 434), so that a new channel's history is what its users post;
  // other organizations get Zulip's default, on. A test that wants them turns them on.
  // As below, an attempt that failed may have made it: a retried creation counts as one.
  if (result.created || retried) await actors.call(realmRef, realm, { type: 'updateRealm', caller: { realmId: DEMO_REALM_ID, userId: owner.userId }, send_channel_events_messages: false, groups: {} });
  await actors.call(realmRef, realm, {
    type: 'subscribe',
    caller: { realmId: DEMO_REALM_ID, userId: owner.userId },
    subscriptions: [{ name: 'general', description: 'Everyone, everything.' }],
    principals: creds.map((c) => c.email),
    authorizationErrorsFatal: true,
    inviteOnly: false,
    isWebPublic: false,
    isDefaultStream: true,
    historyPublicToSubscribers: null,
    messageRetentionDays: null,
    topicsPolicy: null,
    groups: {},
    announce: false,
  });
  if (result.created) {
    // Every organization starts with something to read (Zulip's welcome messages); clients
    // such as zulip-terminal cannot show an empty history.
    await actors.call(realmRef, realm, {
      type: 'sendMessage',
      caller: { realmId: DEMO_REALM_ID, userId: owner.userId },
      client: 'internal',
      recipientType: 'stream',
      to: 'general',
      topic: 'welcome',
      content: 'Welcome to **Parley Demo**! Everyone here reads #**general**: say hello, start a topic of your own, or reply to this one.',
      readBySender: true,
      queueId: null,
      localId: null,
    });
  }
  return creds;
}

/**
 * Writes `<dir>/<key>.zuliprc` for each demo user whose key was just
 * created. Keys are stored hashed, so for a realm that already existed the
 * files written when it was created are kept (their site updated) and their
 * keys reported back in `creds`.
 */
export function writeZuliprcs(dir: string, site: string, creds: DemoCredential[]): string[] {
  // Each file holds an API key in plain text: the directory and the files are the server's user's alone.
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  return creds.map((c) => {
    const path = join(dir, `${c.key}.zuliprc`);
    if (c.apiKey === null && existsSync(path)) c.apiKey = /^key=(.*)$/m.exec(readFileSync(path, 'utf8'))?.[1]?.trim() ?? null;
    if (c.apiKey !== null) {
      writeFileSync(path, `[api]\nemail=${c.email}\nkey=${c.apiKey}\nsite=${site}\n`, { mode: 0o600 });
      chmodSync(path, 0o600); // `mode` applies only when the file is created
    }
    return path;
  });
}
