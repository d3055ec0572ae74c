/**
 * Invitations: email invitations (POST /invites), reusable links (POST
 * /invites/multiuse), listing (GET /invites), revoking (DELETE /invites/{id},
 * DELETE /invites/multiuse/{id}), resending (POST /invites/{id}/resend), the
 * durable timer that expires them, and accepting one on the sign-up page
 * (`gateway/pages/join.ts`), which creates the account with the invited
 * role and channels.
 *
 * The realm decides and records; the gateway sends the emails once the
 * invitations are durable (`lib/mail.ts`), with the tokens the reply carries.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { ApiError, badRequest, type ErrorExtra } from '../../../../lib/errors.ts';
import { type InviteRecord, type StoredMessage, T, type UserRecord } from '../../../../storage/tables.ts';
import { type Delivery, toUsers } from '../../../events/delivery.ts';
import { isAdmin, isGuest, Role, SYSTEM_GROUPS } from '../../../model.ts';
import { defineAction, defineQuery, defineTimer, type Tx } from '../../../runtime/action.ts';
import { actingUser } from '../../rules/access.ts';
import { type EmailProblem, emailProblem } from '../organization/realm_domains.ts';
import { realmGroupSetting } from '../organization/realm_settings.ts';
import { noteAccountAddresses } from '../../state/account_index.ts';
import type { RealmState } from '../../state/state.ts';
import { defaultStreamIds, hasContentAccess } from '../channels/streams.ts';
import { newApiKey } from '../../../../lib/secrets.ts';
import { addUser, checkUniqueName, newUserEvents, subscribeNewUser } from './users.ts';
import { noteNewHuman } from '../notifications/signup_email.ts';
import { ensureSystemBots, sendAsSystemBot, sendWelcome, systemBotDeliveries } from '../organization/system_bots.ts';
import { silentMention } from '../../rules/people.ts';

const action = defineAction<RealmState>();
const query = defineQuery<RealmState>();
const timer = defineTimer<RealmState>();

/** Zulip's INVITATION_LINK_VALIDITY_MINUTES default: ten days. */
export const DEFAULT_INVITE_MINUTES = 14_400;
/** Invitations an organization may send in one day. */
export const INVITES_PER_DAY = 100;
export const MAX_WELCOME_MESSAGE_LENGTH = 8000;
const EXPIRE = 'expireInvite';
const ROLES = [Role.OWNER, Role.ADMIN, Role.MODERATOR, Role.MEMBER, Role.GUEST] as number[];

const InviteFields = {
  expiresInMinutes: z.number().int().nullable().optional(),
  inviteAs: z.number().int(),
  streamIds: z.array(z.number().int()),
  groupIds: z.array(z.number().int()),
  includeRealmDefaultSubscriptions: z.boolean(),
  welcomeMessageCustomText: z.string().nullable().optional(),
};

const now = () => Math.floor(Date.now() / 1000);
const newToken = () => randomBytes(18).toString('base64url');

/** Whether an invitation can still be used. */
export function isLive(i: InviteRecord, at = now()): boolean {
  return !i.revoked && !(i.email !== null && i.used) && (i.expiresAt === null || i.expiresAt > at);
}

/** The checks POST /invites and POST /invites/multiuse share (Zulip's `invite_users_backend`). */
function checkCommon(state: Readonly<RealmState>, user: UserRecord, msg: { expiresInMinutes?: number | null; inviteAs: number; streamIds: number[]; groupIds: number[]; welcomeMessageCustomText?: string | null }) {
  if (!ROLES.includes(msg.inviteAs)) throw badRequest('Invalid invite_as', { var_name: 'invite_as' });
  // An inviter can only invite for roles equal to or more restricted than their own.
  if (msg.inviteAs < user.role && !(msg.inviteAs === Role.MODERATOR && isAdmin(user))) throw badRequest('Insufficient permission');
  if (msg.expiresInMinutes !== undefined && msg.expiresInMinutes !== null && msg.expiresInMinutes < 1) throw badRequest('Invalid invite_expires_in_minutes', { var_name: 'invite_expires_in_minutes' });
  const defaults = new Set(defaultStreamIds(state));
  for (const id of msg.streamIds) {
    const c = state.channels.get(id);
    if (!c || c.isArchived || !hasContentAccess(state, c, user)) throw badRequest(`Invalid channel ID ${id}. No invites were sent.`);
  }
  const canSubscribeOthers = state.can(realmGroupSetting(state, 'can_add_subscribers_group'), user);
  if (msg.streamIds.some((id) => !defaults.has(id)) && !canSubscribeOthers) throw badRequest('You do not have permission to subscribe other users to channels.');
  for (const id of msg.groupIds) {
    // Only system groups exist yet, and their membership follows roles: nobody can be added to them.
    if (!SYSTEM_GROUPS.some((g) => g.id === id)) throw badRequest(`Invalid user group ID: ${id}`);
    throw badRequest(`Insufficient permission to add users to group ${id}`);
  }
  const text = msg.welcomeMessageCustomText;
  if (text && [...text].length > MAX_WELCOME_MESSAGE_LENGTH) throw badRequest(`welcome_message_custom_text is too long (limit: ${MAX_WELCOME_MESSAGE_LENGTH} characters).`);
  const minutes = msg.expiresInMinutes === undefined ? DEFAULT_INVITE_MINUTES : msg.expiresInMinutes;
  return {
    expiresAt: minutes === null ? null : now() + minutes * 60,
    // Only administrators may set a custom welcome message; for others it is null.
    welcomeMessageCustomText: isAdmin(user) ? (text ?? null) : null,
  };
}

function recordInvite(state: RealmState, tx: Tx, i: Omit<InviteRecord, 'id' | 'token'>): InviteRecord {
  const invite: InviteRecord = { ...i, id: state.org.take('invite', state.realmId, tx), token: newToken() };
  state.org.indexInvite(invite);
  tx.write(T.invites.at(state.realmId, invite.id).put(invite));
  if (invite.expiresAt !== null) tx.setTimer(EXPIRE, invite.expiresAt * 1000, { id: invite.id }, invite.id);
  return invite;
}

/** `invites_changed` goes to administrators and to the invitation's referrer (clients then fetch GET /invites). */
function invitesChanged(state: Readonly<RealmState>, referrerId: number): Delivery {
  const ids = new Set([...state.users.values()].filter((u) => u.isActive && isAdmin(u)).map((u) => u.id));
  if (state.users.get(referrerId)?.isActive) ids.add(referrerId);
  return toUsers(state.realmId, [...ids], { type: 'invites_changed' });
}

const EMAIL = /^[^\s@,<>]+@[^\s@,<>]+\.[^\s@,<>]+$/;

/** Zulip's `validate_email_is_valid`: an invitation's per-address error for the organization's address rules. */
const INVITE_EMAIL_ERROR: Record<EmailProblem, string> = {
  domain: 'Outside your domain.',
  disposable: 'Please use your real email address.',
  plus: 'Email addresses containing + are not allowed.',
};

/** Zulip's sign-up form (`HomepageForm.clean_email`): why an invitation's address may not join after all. */
const SIGNUP_EMAIL_ERROR: Record<EmailProblem, (email: string) => string> = {
  domain: (email) => `Your email address, ${email}, is not in one of the domains that are permitted to register accounts in this organization.`,
  disposable: () => 'Please use your real email address.',
  plus: () => 'Email addresses containing + are not allowed in this organization.',
};

export const createInvites = action({
  type: 'createInvites',
  fields: z.object({ emails: z.array(z.string()), notifyReferrerOnJoin: z.boolean(), ...InviteFields }),
  check(state, msg) {
    const user = actingUser(state, msg.caller);
    if (isGuest(user) || !state.can(realmGroupSetting(state, 'can_invite_users_group'), user)) throw badRequest('Insufficient permission');
    const emails = [...new Set(msg.emails.map((e) => e.trim()).filter(Boolean))];
    if (!emails.length) throw badRequest('You must specify at least one email address.');
    const common = checkCommon(state, user, msg);
    const errors: Array<[string, string, boolean]> = [];
    // The organization's address rules (restricted domains, disposable providers) as Zulip's do_invite_users: any failure sends nothing.
    const invalid = emails.flatMap((e): Array<[string, string, boolean]> => {
      if (!EMAIL.test(e)) return [[e, 'Invalid address.', false]];
      const problem = emailProblem(state, e);
      return problem ? [[e, INVITE_EMAIL_ERROR[problem], false]] : [];
    });
    if (invalid.length) throw new ApiError('INVITATION_FAILED', 'Some emails did not validate, so we didn\'t send any invitations.', 400, failure(invalid, false));
    const toSend: string[] = [];
    for (const email of emails) {
      const existing = state.usersByEmail.get(email.toLowerCase());
      if (existing) errors.push([email, existing.isActive ? 'Already has an account.' : 'Account has been deactivated.', existing.isActive ? false : true]);
      else toSend.push(email);
    }
    if (!toSend.length) throw new ApiError('INVITATION_FAILED', "We weren't able to invite anyone.", 400, failure(errors, false));
    const since = now() - 86_400;
    const today = [...state.org.invites.values()].filter((i) => i.email !== null && i.invitedAt > since).length;
    if (today + toSend.length > INVITES_PER_DAY) {
      throw new ApiError('INVITATION_FAILED', 'To protect users, this server limits the number of invitations you can send in one day. Because you have reached the limit, no invitations were sent.', 400, failure([], false, true));
    }
    return { user, emails: toSend, errors, common, msg, sent: [] as InviteRecord[] };
  },
  apply(state, p, tx) {
    for (const email of p.emails) {
      p.sent.push(
        recordInvite(state, tx, {
          email,
          referrerId: p.user.id,
          role: p.msg.inviteAs,
          streamIds: p.msg.streamIds,
          groupIds: p.msg.groupIds,
          includeRealmDefaultSubscriptions: p.msg.includeRealmDefaultSubscriptions,
          notifyReferrerOnJoin: p.msg.notifyReferrerOnJoin,
          welcomeMessageCustomText: p.common.welcomeMessageCustomText,
          invitedAt: now(),
          expiresAt: p.common.expiresAt,
          used: false,
          revoked: false,
        }),
      );
    }
    return {
      /** For the gateway to send the emails; never shown to the client. */
      mail: p.sent.map((i) => ({ email: i.email!, token: i.token, referrer: p.user.fullName, realmName: state.meta?.name ?? '', expiresAt: i.expiresAt })),
      /** Addresses that were skipped: the client gets INVITATION_FAILED with `sent_invitations` true. */
      partial: p.errors.length ? failure(p.errors, true) : null,
    };
  },
  events(state, p) {
    return [invitesChanged(state, p.user.id)];
  },
});

/** INVITATION_FAILED's extra fields. */
function failure(errors: Array<[string, string, boolean]>, sent: boolean, dailyLimit = false): ErrorExtra {
  return { errors, sent_invitations: sent, license_limit_reached: false, daily_limit_reached: dailyLimit };
}
export const PARTIAL_INVITE_MESSAGE = "Some of those addresses are already using this server, so we didn't send them an invitation. We did send invitations to everyone else!";

export const createMultiuseInvite = action({
  type: 'createMultiuseInvite',
  fields: z.object(InviteFields),
  check(state, msg) {
    const user = actingUser(state, msg.caller);
    if (!state.can(realmGroupSetting(state, 'create_multiuse_invite_group'), user)) throw badRequest('Insufficient permission');
    return { user, common: checkCommon(state, user, msg), msg };
  },
  apply(state, p, tx) {
    const invite = recordInvite(state, tx, {
      email: null,
      referrerId: p.user.id,
      role: p.msg.inviteAs,
      streamIds: p.msg.streamIds,
      groupIds: p.msg.groupIds,
      includeRealmDefaultSubscriptions: p.msg.includeRealmDefaultSubscriptions,
      notifyReferrerOnJoin: false,
      welcomeMessageCustomText: p.common.welcomeMessageCustomText,
      invitedAt: now(),
      expiresAt: p.common.expiresAt,
      used: false,
      revoked: false,
    });
    return { token: invite.token };
  },
  events(state, p) {
    return [invitesChanged(state, p.user.id)];
  },
});

export const listInvites = query({
  type: 'listInvites',
  fields: z.object({}),
  run(state, msg) {
    const user = actingUser(state, msg.caller);
    if (isGuest(user)) throw badRequest('Not allowed for guest users');
    const at = now();
    return {
      invites: [...state.org.invites.values()]
        .filter((i) => isLive(i, at) && (isAdmin(user) || i.referrerId === user.id))
        .sort((a, b) => a.id - b.id)
        .map((i) => ({
          id: i.id,
          invited_by_user_id: i.referrerId,
          invited: i.invitedAt,
          expiry_date: i.expiresAt,
          invited_as: i.role,
          email: i.email ?? undefined,
          notify_referrer_on_join: i.notifyReferrerOnJoin,
          is_multiuse: i.email === null,
          /** Filled in by the gateway from the token (the link of a reusable invitation). */
          token: i.email === null ? i.token : undefined,
        })),
    };
  },
});

/** The caller's own invitation, or any for an administrator. */
function manageable(state: Readonly<RealmState>, caller: { realmId: number; userId: number | null }, id: number, multiuse: boolean): InviteRecord {
  const user = actingUser(state, caller);
  const i = state.org.invites.get(id);
  if (!i || !isLive(i) || (i.email === null) !== multiuse) throw badRequest(multiuse ? 'Invalid invitation ID' : 'No such invitation');
  if (!isAdmin(user) && i.referrerId !== user.id) throw new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator', 400);
  return i;
}

function revoke(state: RealmState, i: InviteRecord, tx: Tx): void {
  const revoked = { ...i, revoked: true };
  state.org.indexInvite(revoked);
  tx.write(T.invites.at(state.realmId, i.id).put(revoked));
  if (i.expiresAt !== null) tx.clearTimer(EXPIRE, i.expiresAt * 1000, i.id);
}

export const revokeInvite = action({
  type: 'revokeInvite',
  fields: z.object({ id: z.number().int(), multiuse: z.boolean() }),
  check: (state, msg) => manageable(state, msg.caller, msg.id, msg.multiuse),
  apply(state, i, tx) {
    revoke(state, i, tx);
    return {};
  },
  events: (state, i) => [invitesChanged(state, i.referrerId)],
});

export const resendInvite = action({
  type: 'resendInvite',
  fields: z.object({ id: z.number().int() }),
  check: (state, msg) => manageable(state, msg.caller, msg.id, false),
  apply(state, i, tx) {
    const again = { ...i, invitedAt: now() };
    state.org.indexInvite(again);
    tx.write(T.invites.at(state.realmId, i.id).put(again));
    const referrer = state.users.get(i.referrerId);
    return { mail: [{ email: i.email!, token: i.token, referrer: referrer?.fullName ?? '', realmName: state.meta?.name ?? '', expiresAt: i.expiresAt }] };
  },
  events: (state, i) => [invitesChanged(state, i.referrerId)],
});

/** At its expiry an invitation is dropped (a link checks the time too, so a late timer changes nothing visible). */
export const expireInvite = timer({
  name: EXPIRE,
  check(state, payload: { id: number }) {
    const i = state.org.invites.get(payload.id);
    if (!i || i.revoked || (i.email !== null && i.used)) throw new ApiError('BAD_REQUEST', 'Invitation already gone', 400);
    return i;
  },
  apply(state, i, tx) {
    state.org.invites.delete(i.id);
    state.org.invitesByToken.delete(i.token);
    tx.write(T.invites.at(state.realmId, i.id).delete());
    return null;
  },
  events: (state, i) => [invitesChanged(state, i.referrerId)],
});

// ---- the sign-up page ------------------------------------------------------

/** What the sign-up page shows for a link. */
export const inviteInfo = query({
  type: 'inviteInfo',
  fields: z.object({ token: z.string() }),
  run(state, msg) {
    if (msg.caller.userId !== null) throw new ApiError('UNAUTHORIZED', 'Only the server reads invitations', 401);
    const i = state.org.invitesByToken.get(msg.token);
    if (!i || !isLive(i)) return { valid: false as const, realmName: state.meta?.name ?? '' };
    return { valid: true as const, realmName: state.meta?.name ?? '', email: i.email, role: i.role };
  },
});

export const acceptInvite = action({
  type: 'acceptInvite',
  /** The gateway checks the password's strength and hashes it (slow: never in the mailbox). */
  fields: z.object({ token: z.string(), email: z.string().nullable(), fullName: z.string(), passwordHash: z.string() }),
  check(state, msg) {
    if (msg.caller.userId !== null) throw new ApiError('UNAUTHORIZED', 'Only the server accepts invitations', 401);
    const i = state.org.invitesByToken.get(msg.token);
    if (!i || !isLive(i)) throw badRequest('This invitation link is invalid or has expired.');
    const email = (i.email ?? msg.email ?? '').trim();
    if (!EMAIL.test(email)) throw badRequest('Enter a valid email address.');
    if (state.usersByEmail.has(email.toLowerCase())) throw badRequest(`Email '${email}' already in use`);
    // The rules as they are now: an invitation made before a restriction does not bypass it (Zulip's accounts_register).
    const problem = emailProblem(state, email);
    if (problem) throw badRequest(SIGNUP_EMAIL_ERROR[problem](email));
    const fullName = msg.fullName.trim();
    if (!fullName) throw badRequest('Name too short!');
    if ([...fullName].length > 100) throw badRequest('Name too long!');
    checkUniqueName(state, fullName, null);
    const channels = [...new Set([...i.streamIds, ...(i.includeRealmDefaultSubscriptions ? defaultStreamIds(state) : [])])];
    return { invite: i, email, fullName, passwordHash: msg.passwordHash, apiKey: newApiKey(), channels, user: null as UserRecord | null, subscribed: [] as number[], notices: [] as Array<StoredMessage | null> };
  },
  apply(state, p, tx) {
    const user = addUser(state, tx, { email: p.email, fullName: p.fullName, role: p.invite.role, passwordHash: p.passwordHash, loggedIn: true, apiKey: p.apiKey });
    noteAccountAddresses(tx, [user.id]);
    const id = user.id;
    p.user = user;
    p.subscribed = subscribeNewUser(state, tx, id, p.channels);
    if (p.invite.email !== null) {
      const used = { ...p.invite, used: true };
      state.org.indexInvite(used);
      tx.write(T.invites.at(state.realmId, used.id).put(used));
      if (used.expiresAt !== null) tx.clearTimer(EXPIRE, used.expiresAt * 1000, used.id);
    }
    // Zulip's process_new_human_user: Notification Bot tells the referrer, then Welcome Bot greets the new user.
    ensureSystemBots(state, tx);
    const referrer = state.users.get(p.invite.referrerId);
    if (p.invite.notifyReferrerOnJoin && referrer?.isActive) {
      const content = `${silentMention(user)} accepted your invitation to join ${state.meta?.name ?? 'the organization'}!`;
      p.notices.push(sendAsSystemBot(state, tx, 'notification', { recipientType: 'private', to: [referrer.id], topic: null, content }));
    }
    p.notices.push(...sendWelcome(state, tx, user, p.invite.welcomeMessageCustomText));
    noteNewHuman(state, user, tx);
    return { email: user.email, apiKey: p.apiKey, userId: user.id, fullName: user.fullName };
  },
  events(state, p) {
    const out = newUserEvents(state, p.user!, p.subscribed);
    if (p.invite.email !== null) out.push(invitesChanged(state, p.invite.referrerId));
    out.push(...systemBotDeliveries(state, p.notices));
    return out;
  },
});
