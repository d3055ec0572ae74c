/**
 * Organization exports through the API (Zulip's zerver/views/realm_export.py
 * and zerver/actions/realm_export.py): POST /export/realm (FL 182: it
 * answers the export's ID; `export_type` since FL 304), GET /export/realm,
 * DELETE /export/realm/{export_id}, GET /export/realm/consents (FL 295).
 * Administrators only, as Zulip's `require_realm_admin`.
 *
 * The request's commit records the export (`requested`) and sets a durable
 * follow-up (`realmExport`, as Zulip's `deferred_work` queue worker takes it
 * after the transaction); its effect, outside the mailbox, writes the
 * archive (`storage/export.ts`, the same format the operator's CLI imports,
 * without credentials) into the FileStore, the upload store both modes
 * share, and its commit records `succeeded` with the path, or `failed`.
 * Every change sends the administrators the whole list in a `realm_export`
 * event (Zulip's `notify_realm_export`). The archive is served at its
 * `export_url` (`/user_avatars/exports/<realm>/<token>/<file>`, Zulip's path
 * for local uploads) to administrators (`exportFile`).
 *
 * A public export (`public`, stored 1) keeps only what every member may
 * see. A full export (`full_with_consent`, stored 2) keeps everyone's private data, so it is made only when every active
 * member consented (`allow_private_data_export`); Zulip leaves out the
 * private data of those who did not instead.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { realmUrl } from '../../../../lib/hosts.ts';
import { ApiError, badRequest } from '../../../../lib/errors.ts';
import { log as rootLog } from '../../../../lib/log.ts';
import { exportToBuffer } from '../../../../storage/export.ts';
import { fileStoreFor } from '../../../../storage/files.ts';
import type { Scannable, Store } from '../../../../storage/store.ts';
import { type RealmExportRecord, T } from '../../../../storage/tables.ts';
import { toUsers } from '../../../events/delivery.ts';
import type { RealmExportObject } from '../../../events/schema.ts';
import { isAdmin } from '../../../model.ts';
import { defineAction, defineQuery, defineTimer, FOLLOW_UP_DELAY_MS, later, type Tx } from '../../../runtime/action.ts';
import { DEFAULT_USER_SETTINGS } from '../../../user/settings.ts';
import { actingUser } from '../../rules/access.ts';
import { emailVisibility } from '../../rules/emails.ts';
import type { RealmState } from '../../state/state.ts';

const action = defineAction<RealmState>();
const query = defineQuery<RealmState>();
const timer = defineTimer<RealmState>();
const log = rootLog.child({ component: 'realm-export' });

/** Zulip's `RealmExport.EXPORT_PUBLIC` and `EXPORT_FULL_WITH_CONSENT`, as stored. */
export const EXPORT_PUBLIC = 1 as const;
export const EXPORT_FULL_WITH_CONSENT = 2 as const;
/**
 * The API's names of the types (FL 449: strings, in POST /export/realm, its
 * list and `realm_export` events). `full_without_consent` (Zulip's 3) needs
 * the organization's `owner_full_content_access`, which is false here (FL
 * 438: no server administrator sets it), so it is never made.
 */
export const EXPORT_TYPES = ['public', 'full_with_consent', 'full_without_consent'] as const;
export type ExportTypeName = (typeof EXPORT_TYPES)[number];
const typeName = (t: 1 | 2): ExportTypeName => (t === EXPORT_PUBLIC ? 'public' : 'full_with_consent');
/** Exports an organization may ask for in 7 days (Zulip's EXPORT_LIMIT). */
export const EXPORT_LIMIT = 5;
const WEEK_SECS = 7 * 86_400;
const MAKE_EXPORT = 'realmExport';
const REMOVE_EXPORT = 'realmExportRemove';

const requireAdmin = (state: Readonly<RealmState>, caller: { realmId: number; userId: number | null }) => {
  const u = actingUser(state, caller);
  if (!isAdmin(u)) throw new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator', 400);
  return u;
};

/** The active human users: who consents matters for them (Zulip's `is_active=True, is_bot=False`). O(users). */
const activeHumans = (state: Readonly<RealmState>) => [...state.users.values()].filter((u) => u.isActive && !u.isBot && !state.systemBots.has(u.id));
const consented = (state: Readonly<RealmState>, userId: number) => state.setting(userId, 'allow_private_data_export', DEFAULT_USER_SETTINGS.allow_private_data_export!) === true;

/** Where a succeeded export is served (Zulip's local-uploads URL of an export tarball). */
export function exportUrlPath(path: string): string {
  const [realm, , token, filename] = path.split('/');
  return `/user_avatars/exports/${[realm!, token!, filename!].map(encodeURIComponent).join('/')}`;
}

export function formatExport(state: Readonly<RealmState>, e: RealmExportRecord): RealmExportObject {
  return {
    id: e.id,
    export_time: e.requestedAt,
    acting_user_id: e.actingUserId,
    export_url: e.status === 'succeeded' && e.path ? `${realmUrl(state.siteUrl, state.meta?.stringId ?? '')}${exportUrlPath(e.path)}` : null,
    deleted_timestamp: e.deletedAt,
    failed_timestamp: e.failedAt,
    pending: e.status === 'requested',
    export_type: typeName(e.exportType),
  };
}

const exportsOf = (state: Readonly<RealmState>) => [...state.org.exports.values()].sort((a, b) => a.id - b.id).map((e) => formatExport(state, e));

/** `realm_export` with the whole list, to the active human administrators (Zulip's `notify_realm_export`). O(users). */
function exportsEvent(state: Readonly<RealmState>) {
  const admins = activeHumans(state).filter(isAdmin).map((u) => u.id);
  return [toUsers(state.realmId, admins, { type: 'realm_export', exports: exportsOf(state) })];
}

/** `realm_export_consent`, when a user changes `allow_private_data_export`: to the active human administrators (Zulip's do_change_user_setting). */
export function consentEvent(state: Readonly<RealmState>, userId: number, consentedNow: boolean) {
  const admins = activeHumans(state).filter(isAdmin).map((u) => u.id);
  return toUsers(state.realmId, admins, { type: 'realm_export_consent', user_id: userId, consented: consentedNow });
}

function put(state: RealmState, e: RealmExportRecord, tx: Tx) {
  state.org.exports.set(e.id, e);
  tx.write(T.realmExports.at(state.realmId, e.id).put(e));
}

/** POST /export/realm. */
export const requestExport = action({
  type: 'requestExport',
  fields: z.object({ exportType: z.string() }),
  check(state, msg) {
    const user = requireAdmin(state, msg.caller);
    // Integers (before FL 449) are refused as any other value: the parameter is the name now.
    if (!(EXPORT_TYPES as readonly string[]).includes(msg.exportType)) throw badRequest('Invalid export_type');
    // owner_full_content_access is false here (realm_owner_full_content_access at register), so no full export without consent.
    if (msg.exportType === 'full_without_consent') throw badRequest('This organization does not allow full exports without member consent.');
    const exportType: 1 | 2 = msg.exportType === 'public' ? EXPORT_PUBLIC : EXPORT_FULL_WITH_CONSENT;
    const now = Date.now() / 1000;
    const recent = [...state.org.exports.values()].filter((e) => e.requestedAt >= now - WEEK_SECS).length;
    if (recent >= EXPORT_LIMIT) throw badRequest('Exceeded rate limit.');
    if (exportType === EXPORT_FULL_WITH_CONSENT) {
      const refusing = activeHumans(state).filter((u) => !consented(state, u.id)).length;
      if (refusing > 0) throw badRequest(`Make sure every member consents to the export of their private data (allow_private_data_export): ${refusing} ${refusing === 1 ? 'does' : 'do'} not.`);
    }
    return { userId: user.id, exportType, now };
  },
  apply(state, p, tx) {
    const id = state.org.take('export', state.realmId, tx);
    put(state, { id, exportType: p.exportType, actingUserId: p.userId, status: 'requested', requestedAt: p.now, path: null, succeededAt: null, failedAt: null, deletedAt: null }, tx);
    tx.setTimer(MAKE_EXPORT, Date.now() + FOLLOW_UP_DELAY_MS, { id }, id);
    return { id };
  },
  events: (state) => exportsEvent(state),
});

/** The follow-up that makes the archive: its effect writes the file, its commit records the outcome. */
export const makeExport = timer({
  name: MAKE_EXPORT,
  async effect(state, p: { id: number }, ctx): Promise<{ path: string } | { failed: true } | null> {
    const e = state.org.exports.get(p.id);
    if (e?.status !== 'requested') return null;
    const store = ctx.store as Store & Partial<Scannable>;
    try {
      if (typeof store.scan !== 'function') throw new Error('this store cannot be scanned');
      const files = fileStoreFor(ctx.store);
      const { data, counts } = await exportToBuffer(store as Store & Scannable, files, state.realmId, e.exportType === EXPORT_PUBLIC ? 'public' : 'full');
      const filename = `parley-export-${state.meta?.stringId || 'realm'}-${e.id}.jsonl.gz`;
      const path = `${state.realmId}/exports/${randomBytes(16).toString('hex')}/${filename}`;
      await files.put(path, { contentType: 'application/gzip', filename, data });
      log.info({ realmId: state.realmId, exportId: e.id, bytes: data.length, ...counts }, 'organization exported');
      return { path };
    } catch (err) {
      log.error({ err, realmId: state.realmId, exportId: e.id }, 'organization export failed');
      return { failed: true };
    }
  },
  check: (state, p, _ctx, done) => {
    const e = state.org.exports.get(p.id);
    return e?.status === 'requested' && done ? { e, done } : null;
  },
  apply(state, plan, tx) {
    if (!plan) return false;
    const now = Date.now() / 1000;
    const next: RealmExportRecord = 'path' in plan.done ? { ...plan.e, status: 'succeeded', path: plan.done.path, succeededAt: now } : { ...plan.e, status: 'failed', failedAt: now };
    put(state, next, tx);
    return true;
  },
  events: (state, _plan, changed) => (changed ? exportsEvent(state) : []),
});

/** DELETE /export/realm/{export_id}: the archive is removed by a follow-up once the deletion is durable. */
export const deleteExport = action({
  type: 'deleteExport',
  fields: z.object({ id: z.number().int() }),
  check(state, msg) {
    requireAdmin(state, msg.caller);
    const e = state.org.exports.get(msg.id);
    if (!e) throw badRequest('Invalid data export ID');
    if (e.status === 'deleted') throw badRequest('Export already deleted');
    if (e.status === 'failed') throw badRequest('Export failed, nothing to delete');
    if (e.status === 'requested') throw badRequest('Export still in progress');
    return e;
  },
  apply(state, e, tx) {
    put(state, { ...e, status: 'deleted', deletedAt: Date.now() / 1000 }, tx);
    if (e.path) tx.setTimer(REMOVE_EXPORT, Date.now() + FOLLOW_UP_DELAY_MS, { path: e.path }, e.id);
    return {};
  },
  events: (state) => exportsEvent(state),
});

/** Removes a deleted export's archive from the FileStore (again, harmlessly, if it runs twice). */
export const removeExportFile = timer({
  name: REMOVE_EXPORT,
  async effect(_state, p: { path: string }, ctx) {
    await fileStoreFor(ctx.store).delete(p.path);
  },
  check: () => null,
  apply: () => null,
});

/** GET /export/realm. */
export const listExports = query({
  type: 'listExports',
  fields: z.object({}),
  run(state, msg) {
    requireAdmin(state, msg.caller);
    return { exports: exportsOf(state) };
  },
});

/** GET /export/realm/consents: each active human user's `allow_private_data_export` and `email_address_visibility` (FL 430). O(users). */
export const exportConsents = query({
  type: 'exportConsents',
  fields: z.object({}),
  run(state, msg) {
    requireAdmin(state, msg.caller);
    return { export_consents: activeHumans(state).map((u) => ({ user_id: u.id, consented: consented(state, u.id), email_address_visibility: emailVisibility(state, u) })) };
  },
});

const notFound = () => new ApiError('BAD_REQUEST', 'Not Found', 404);

/** The archive at an export URL, for an administrator; 404 for one that does not exist or was deleted. */
export const exportFile = query({
  type: 'exportFile',
  fields: z.object({ token: z.string(), filename: z.string() }),
  run(state, msg, ctx) {
    requireAdmin(state, msg.caller);
    const path = `${state.realmId}/exports/${msg.token}/${msg.filename}`;
    const e = [...state.org.exports.values()].find((x) => x.path === path);
    if (e?.status !== 'succeeded') throw notFound();
    return later(async () => {
      const file = await fileStoreFor(ctx.store).get(path);
      if (!file) throw notFound();
      return { contentType: file.contentType, filename: file.filename, data: file.data.toString('base64') };
    });
  },
});
