/**
 * The directory actor: one per deployment, it owns the list of
 * organizations (which subdomain serves which realm, and whether it is
 * deactivated) and the one-time organization-creation links. Gateways keep
 * a copy (`gateway/organizations.ts`) that every change reaches through a
 * bus announcement, so resolving a request's host costs no actor call.
 *
 * Only the server calls it (the CLI over the bus, the creation page after it
 * checked its link): every handler refuses a caller that is a user, except
 * `changeOrganizationSubdomain`, whose realm decides who may. It calls
 * realm actors (bootstrap, deactivation) from `prepare`, inside its mailbox;
 * a realm calls it only from a follow-up's effect, outside the realm's
 * mailbox (the address index, `accounts.ts`), so the two never wait on each
 * other. Its state is O(organizations), loaded from one partition each; the
 * address index stays in the store.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { ApiError, badRequest, unauthorized } from '../../lib/errors.ts';
import { realmUrl, subdomainProblem } from '../../lib/hosts.ts';
import { newApiKey, sha256Hex } from '../../lib/secrets.ts';
import { type OrganizationLinkRecord, type OrganizationRecord, T } from '../../storage/tables.ts';
import { isOrgType, Role } from '../model.ts';
import { realmActorId, realmRef } from '../realm/ref.ts';
import { BootstrapUser } from '../realm/actions/people/users.ts';
import { type Caller, defineAction, defineQuery, type Tx } from '../runtime/action.ts';
import type { ActorContext } from '../runtime/context.ts';
import { defineActor } from '../runtime/registry.ts';
import { subjects } from '../subjects.ts';
import { accountsWithAddress, addressesIndexed, setAccountAddresses } from './accounts.ts';
import { directoryRef } from './ref.ts';

export interface DirectoryState {
  orgs: Map<number, OrganizationRecord>;
  bySubdomain: Map<string, OrganizationRecord>;
  /** Creation links by the SHA-256 of their token. */
  links: Map<string, OrganizationLinkRecord>;
  /** The organizations whose accounts are all in the address index (`accounts.ts`); the others are backfilled. */
  indexedRealms: Set<number>;
}

/** What every gateway hears when an organization is created or changes. */
export interface DirectoryAnnouncement {
  organization: OrganizationRecord;
}

const action = defineAction<DirectoryState>();
const query = defineQuery<DirectoryState>();

/** Zulip's REALM_CREATION_LINK_VALIDITY_DAYS. */
export const CREATION_LINK_DAYS = 7;
/** Realm IDs tried past an orphan (a realm bootstrapped by a creation that failed before the directory recorded it). */
const MAX_ORPHANS_SKIPPED = 20;

function serverOnly(caller: Caller): void {
  if (caller.userId !== null) throw unauthorized('Only the server manages organizations');
}

const nextRealmId = (s: Readonly<DirectoryState>): number => Math.max(0, ...s.orgs.keys()) + 1;

/** Records an organization: index, row and the announcement to every gateway, together. */
function put(state: DirectoryState, tx: Tx, org: OrganizationRecord): void {
  const old = state.orgs.get(org.realmId);
  if (old && old.subdomain !== org.subdomain) state.bySubdomain.delete(old.subdomain);
  state.orgs.set(org.realmId, org);
  state.bySubdomain.set(org.subdomain, org);
  tx.write(T.organizations.at(org.realmId).put(org));
  const announcement: DirectoryAnnouncement = { organization: org };
  tx.announce(subjects.directory, announcement);
}

/** The link's record when `token` is a creation link that may still be used, else an error. */
function usableLink(state: Readonly<DirectoryState>, token: string): string {
  const hash = sha256Hex(token);
  const link = state.links.get(hash);
  if (!link || link.usedBy !== null || link.expiresAt < Date.now()) throw badRequest('The organization creation link has expired or is not valid.');
  return hash;
}

const CreateFields = z.object({
  subdomain: z.string().trim().toLowerCase(),
  name: z.string().trim().min(1).max(40),
  /** The first users; the first must be an owner (keys made up here when absent, and returned once). */
  users: z.array(BootstrapUser).min(1).max(100),
  /** Registers this realm ID (an organization that exists already, such as the seeded demo) instead of a new one. */
  realmId: z.number().int().positive().optional(),
  /** A one-time creation link, used up by this creation. */
  link: z.string().optional(),
  /** A demo organization: deleted after Zulip's 30 days unless its owner makes it permanent (FL 94, 104). */
  demo: z.boolean().default(false),
  /** The organization's type (Zulip's org_type, one of its ORG_TYPES; 0: unspecified). */
  orgType: z.number().int().default(0),
  /** Its new users' avatars (FL 456): Jdenticons, Zulip's default for a new organization, unless told otherwise. */
  defaultAvatarSource: z.enum(['G', 'J']).default('J'),
});
type CreateFields = z.output<typeof CreateFields>;

function checkCreate(state: Readonly<DirectoryState>, msg: CreateFields & { caller: Caller }): string | null {
  serverOnly(msg.caller);
  const problem = subdomainProblem(msg.subdomain);
  if (problem) throw badRequest(problem, { var_name: 'subdomain' });
  const taken = state.bySubdomain.get(msg.subdomain);
  if (taken && taken.realmId !== msg.realmId) throw badRequest('Subdomain already in use. Please choose a different one.', { var_name: 'subdomain' });
  if (!isOrgType(msg.orgType)) throw badRequest('Invalid org_type', { var_name: 'org_type' });
  if (msg.realmId === undefined && msg.users[0]!.role !== Role.OWNER) throw badRequest('The first user of an organization is its owner');
  return msg.link === undefined ? null : usableLink(state, msg.link);
}

/** Creates the realm actor's organization: tries realm IDs from `first` until one is new (or, adopting, takes `first` as it is). */
async function bootstrapRealm(ctx: ActorContext, msg: CreateFields, first: number) {
  const users = msg.users.map((u) => ({ ...u, apiKey: u.apiKey ?? newApiKey() }));
  // A new organization's first owner created it (the page, `parley org create`); an adopted realm (an import, the seeded demo) has no creator to mail.
  const realmCreation = msg.realmId === undefined;
  for (let realmId = first; realmId < first + MAX_ORPHANS_SKIPPED; realmId++) {
    const r = await ctx.actors.call(realmRef, realmActorId(realmId), { type: 'bootstrap', caller: { realmId, userId: null }, name: msg.name, subdomain: msg.subdomain, demo: msg.demo, defaultAvatarSource: msg.defaultAvatarSource, users, realmCreation, orgType: msg.orgType });
    // Ours when created now, or created by an earlier try of this creation (its owner's key holds), or adopted.
    if (r.created || r.users[0]?.apiKey != null || msg.realmId !== undefined) return { realmId, users: r.users, created: r.created };
    ctx.log.warn({ realmId }, 'realm exists but is in no organization (an interrupted creation): trying the next ID');
  }
  throw new ApiError('INTERNAL_SERVER_ERROR', 'No free organization ID', 500);
}

/** Creates an organization with its first users (or registers an existing realm, `realmId`). The reply carries new API keys once. */
export const createOrganization = action({
  type: 'createOrganization',
  fields: CreateFields,
  async prepare(state, msg, ctx) {
    checkCreate(state, msg);
    const existing = msg.realmId === undefined ? undefined : state.orgs.get(msg.realmId);
    // Adopting a realm the directory already lists changes nothing but tells the caller its users.
    const made = await bootstrapRealm(ctx, msg, existing?.realmId ?? msg.realmId ?? nextRealmId(state));
    // A realm made now tells the index of its users itself; one adopted now (an import) is backfilled (one listed already was asked at the directory's load).
    if (!made.created && !existing && !state.indexedRealms.has(made.realmId)) await startBackfill(ctx, made.realmId);
    return made;
  },
  check(state, msg, made) {
    const linkHash = checkCreate(state, msg);
    const old = state.orgs.get(made.realmId);
    const org: OrganizationRecord = old ?? { realmId: made.realmId, subdomain: msg.subdomain, name: msg.name, deactivated: false, dateCreated: Math.floor(Date.now() / 1000) };
    return { org, isNew: !old, linkHash, users: made.users, created: made.created };
  },
  apply(state, plan, tx) {
    if (plan.isNew) put(state, tx, plan.org);
    if (plan.created && !state.indexedRealms.has(plan.org.realmId)) {
      state.indexedRealms.add(plan.org.realmId);
      tx.write(T.accountIndexDone.at(plan.org.realmId).put({ at: Math.floor(Date.now() / 1000) }));
    }
    if (plan.linkHash !== null) {
      const link = { ...state.links.get(plan.linkHash)!, usedBy: plan.org.realmId };
      state.links.set(plan.linkHash, link);
      tx.write(T.organizationLinks.at(plan.linkHash).put(link));
    }
    return { organization: plan.org, created: plan.isNew, users: plan.users };
  },
});

/**
 * Deactivates or reactivates an organization: its realm first (which tells
 * its clients, and decides whether a user caller, an owner deactivating
 * their own organization, may), then the directory.
 */
export const setOrganizationDeactivated = action({
  type: 'setOrganizationDeactivated',
  fields: z.object({ realmId: z.number().int(), deactivated: z.boolean(), deletionDelayDays: z.number().int().nullable().default(null) }),
  async prepare(state, msg, ctx) {
    if (msg.caller.userId !== null && msg.caller.realmId !== msg.realmId) serverOnly(msg.caller);
    if (!state.orgs.has(msg.realmId)) throw badRequest(`No organization with ID ${msg.realmId}`);
    const caller = msg.caller.userId === null ? { realmId: msg.realmId, userId: null } : msg.caller;
    await ctx.actors.call(realmRef, realmActorId(msg.realmId), { type: 'setRealmDeactivated', caller, deactivated: msg.deactivated, deletionDelayDays: msg.deletionDelayDays });
  },
  check(state, msg) {
    const org = state.orgs.get(msg.realmId)!;
    return { org: { ...org, deactivated: msg.deactivated }, changed: org.deactivated !== msg.deactivated };
  },
  apply(state, plan, tx) {
    if (plan.changed) put(state, tx, plan.org);
    return { organization: plan.org };
  },
});

/** The subdomain `subdomain` may become (Zulip's check_subdomain: its messages), else an error. */
function checkNewSubdomain(state: Readonly<DirectoryState>, realmId: number, subdomain: string): void {
  const problem = subdomainProblem(subdomain);
  if (problem) throw badRequest(problem);
  const taken = state.bySubdomain.get(subdomain);
  if (taken && taken.realmId !== realmId) throw badRequest('Subdomain already in use. Please choose a different one.');
}

/**
 * PATCH /realm `string_id` (FL 104): a demo organization's owner gives it a
 * new subdomain, which makes it permanent. The caller is that user: their
 * realm decides whether they may (owner, demo organization), then the
 * subdomain is checked, then the realm records it and this commit moves the
 * organization to its new host (every gateway's copy follows the
 * announcement; the old host names no organization any more). Both calls
 * run in this mailbox's `prepare`, so nothing else changes the subdomains
 * in between; a realm that committed before a crash here accepts the retry.
 */
export const changeOrganizationSubdomain = action({
  type: 'changeOrganizationSubdomain',
  fields: z.object({ subdomain: z.string() }),
  async prepare(state, msg, ctx) {
    const org = state.orgs.get(msg.caller.realmId);
    if (!org || msg.caller.userId === null) throw unauthorized('Only an organization owner changes its subdomain');
    const ask = (dryRun: boolean) => ctx.actors.call(realmRef, realmActorId(org.realmId), { type: 'convertDemoOrganization', caller: msg.caller, subdomain: msg.subdomain, current: org.subdomain, dryRun });
    await ask(true);
    checkNewSubdomain(state, org.realmId, msg.subdomain);
    await ask(false);
    return ctx.siteUrl;
  },
  check(state, msg, siteUrl: string) {
    checkNewSubdomain(state, msg.caller.realmId, msg.subdomain);
    const org = state.orgs.get(msg.caller.realmId)!;
    return { org: { ...org, subdomain: msg.subdomain }, url: realmUrl(siteUrl, msg.subdomain) };
  },
  apply(state, plan, tx) {
    put(state, tx, plan.org);
    return { realm_uri: plan.url, realm_url: plan.url };
  },
});

/** A one-time link to the organization-creation page (Zulip's generate_realm_creation_link). The token is in the reply only. */
export const createOrganizationLink = action({
  type: 'createOrganizationLink',
  fields: z.object({ validDays: z.number().positive().max(365).default(CREATION_LINK_DAYS) }),
  check(_state, msg) {
    serverOnly(msg.caller);
    const token = randomBytes(24).toString('base64url');
    return { token, hash: sha256Hex(token), expiresAt: Date.now() + Math.round(msg.validDays * 86_400_000) };
  },
  apply(state, plan, tx) {
    const link: OrganizationLinkRecord = { expiresAt: plan.expiresAt, usedBy: null };
    state.links.set(plan.hash, link);
    tx.write(T.organizationLinks.at(plan.hash).put(link));
    return { token: plan.token, expiresAt: plan.expiresAt };
  },
});

/** Whether a creation link may still be used (the page asks before it shows its form). */
export const checkOrganizationLink = query({
  type: 'checkOrganizationLink',
  fields: z.object({ token: z.string() }),
  run(state, msg) {
    serverOnly(msg.caller);
    usableLink(state, msg.token);
    return { valid: true };
  },
});

/** Every organization, for the gateways' copies and the CLI. */
export const listOrganizations = query({
  type: 'listOrganizations',
  fields: z.object({}),
  run(state, msg) {
    serverOnly(msg.caller);
    return { organizations: [...state.orgs.values()].sort((a, b) => a.realmId - b.realmId) };
  },
});

export const directoryHandlers = { createOrganization, setOrganizationDeactivated, changeOrganizationSubdomain, createOrganizationLink, checkOrganizationLink, listOrganizations, setAccountAddresses, accountsWithAddress, addressesIndexed };

/** Asks a realm to send all its accounts' addresses to the index, in batches (it ends with `complete`). */
async function startBackfill(ctx: ActorContext, realmId: number): Promise<void> {
  await ctx.actors.call(realmRef, realmActorId(realmId), { type: 'startAddressBackfill', caller: { realmId, userId: null } });
}

/**
 * The one-time backfill of the address index: each organization not yet in
 * it (those of a server older than the index) is asked to send its
 * accounts, one after another, after every load of the directory until its
 * last batch is recorded. Outside the mailbox: a realm's answer never waits
 * on the directory.
 */
function backfillUnindexed(ctx: ActorContext, state: DirectoryState): void {
  const pending = [...state.orgs.keys()].filter((id) => !state.indexedRealms.has(id)).sort((a, b) => a - b);
  if (!pending.length) return;
  void (async () => {
    for (const realmId of pending) {
      try {
        await startBackfill(ctx, realmId);
      } catch (err) {
        ctx.log.warn({ err, realmId }, 'address index: the backfill could not start (again at the next load)');
      }
    }
  })();
}

export const directoryActor = defineActor({
  ref: directoryRef,
  durable: true,
  load: async (ctx) => {
    const orgs = await T.organizations.partition().values(ctx.store);
    const links = await T.organizationLinks.partition().range(ctx.store);
    const indexed = await T.accountIndexDone.partition().range(ctx.store);
    const state: DirectoryState = {
      orgs: new Map(orgs.map((o) => [o.realmId, o])),
      bySubdomain: new Map(orgs.map((o) => [o.subdomain, o])),
      links: new Map(links.map((l) => [String(l.ck), l.value])),
      indexedRealms: new Set(indexed.map((r) => Number(r.ck))),
    };
    setTimeout(() => backfillUnindexed(ctx, state), 0);
    return state;
  },
  handlers: directoryHandlers,
});
