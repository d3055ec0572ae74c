/**
 * The realm's system bots (Zulip's internal, "cross-realm" bots): Notification
 * Bot, which announces what happens in the organization, and Welcome Bot,
 * which greets new users. Zulip keeps them in a separate internal realm;
 * here each realm has its own two, stored as user rows (`isSystemBot`) with
 * Zulip's fixed emails, so messages name them like any sender. They are
 * kept apart from the members (`RealmState.systemBots`): never in
 * `realm_users`, groups or audiences, listed in register's
 * `cross_realm_bots`, and nobody can log in as, edit, deactivate or
 * subscribe them. Users may send them direct messages, as in Zulip.
 *
 * A realm gets them when it is created and, for a realm created before they
 * existed, at its next bootstrap (every start) or first action that needs
 * one (`ensureSystemBots`). Their messages are planned, stored and announced
 * inside the action that causes them, in its commit (`sendAsSystemBot`).
 */
import { z } from 'zod';
import { ApiError, badRequest } from '../../../../lib/errors.ts';
import type { StoredMessage, UserRecord } from '../../../../storage/tables.ts';
import type { Delivery } from '../../../events/delivery.ts';
import type { UserObject } from '../../../events/schema.ts';
import { formatUser } from '../../../format.ts';
import { isAdmin, Role } from '../../../model.ts';
import { defineAction, type Tx } from '../../../runtime/action.ts';
import { actingUser } from '../../rules/access.ts';
import { silentMention } from '../../rules/people.ts';
import { applySend, planSend, sendDelivery, type SendRequest } from '../messages/messages.ts';
import type { RealmState } from '../../state/state.ts';
import { addUser } from '../people/users.ts';

/** Zulip's `settings.INTERNAL_BOTS` that Parley has a use for, with Zulip's emails (INTERNAL_BOT_DOMAIN is zulip.com). */
export const SYSTEM_BOTS = {
  notification: { email: 'notification-bot@zulip.com', fullName: 'Notification Bot' },
  welcome: { email: 'welcome-bot@zulip.com', fullName: 'Welcome Bot' },
} as const;
export type SystemBotKey = keyof typeof SYSTEM_BOTS;

/** The system bot, if the realm has it. */
export function systemBot(state: Readonly<RealmState>, key: SystemBotKey): UserRecord | undefined {
  const u = state.usersByEmail.get(SYSTEM_BOTS[key].email);
  return u?.isSystemBot ? u : undefined;
}

/** Creates the system bots the realm lacks (no event: Zulip sends none for `cross_realm_bots`). Call in `apply`. */
export function ensureSystemBots(state: RealmState, tx: Tx): void {
  for (const { email, fullName } of Object.values(SYSTEM_BOTS)) {
    // An address already taken by a member stays theirs; that bot then stays silent.
    if (state.usersByEmail.has(email)) continue;
    // No API key: nobody can act as a system bot.
    addUser(state, tx, { email, fullName, role: Role.MEMBER, isBot: true, botType: 1, isSystemBot: true, passwordHash: null, loggedIn: true, apiKey: '' });
  }
}

/** Register's `cross_realm_bots`. */
export function systemBotObjects(state: Readonly<RealmState>, extavatar: boolean): UserObject[] {
  return [...state.systemBots.values()].sort((a, b) => a.id - b.id).map((u) => formatUser(u, extavatar));
}

/**
 * Plans and stores a message from a system bot, inside the caller's `apply`
 * (after `ensureSystemBots`). Returns null, having changed nothing, when the
 * bot is missing or the message cannot be sent (a recipient or channel
 * became unusable): such a notice is skipped, never a failed request.
 */
export function sendAsSystemBot(state: RealmState, tx: Tx, key: SystemBotKey, req: Pick<SendRequest, 'recipientType' | 'to' | 'topic' | 'content'>, opts: { unreadOnlyFor?: number[] } = {}): StoredMessage | null {
  const bot = systemBot(state, key);
  if (!bot) return null;
  let plan;
  try {
    plan = planSend(state, bot, { ...req, client: 'Internal', readBySender: true });
  } catch (err) {
    if (err instanceof ApiError) return null;
    throw err;
  }
  return applySend(state, opts.unreadOnlyFor ? { ...plan, unreadOnlyFor: opts.unreadOnlyFor } : plan, tx);
}

/** The message events of what `sendAsSystemBot` stored. */
export const systemBotDeliveries = (state: Readonly<RealmState>, sent: Array<StoredMessage | null>): Delivery[] => sent.filter((m) => m !== null).map((m) => sendDelivery(state, m, null));


/**
 * Welcome Bot's direct messages to a new human user (Zulip's
 * `send_initial_direct_message`): a greeting, then, as a separate message,
 * the custom text: the invitation's when it has one (null: none given), or
 * else the organization's `welcome_message_custom_text`; an empty text sends
 * no second message.
 */
export function sendWelcome(state: RealmState, tx: Tx, user: UserRecord, inviteText: string | null): Array<StoredMessage | null> {
  ensureSystemBots(state, tx);
  const realmName = state.meta?.name ?? '';
  const greeting = [
    `Hello, and welcome to ${realmName}! :wave: This is a direct message from me, Welcome Bot.`,
    isAdmin(user) ? 'As an administrator, you can set up the organization (channels, default channels, invitations and permissions) in its settings.' : 'Channels organize the conversation here, and topics keep each channel tidy: browse the channels to find where people talk.',
  ].join('\n\n');
  const dm = (content: string) => sendAsSystemBot(state, tx, 'welcome', { recipientType: 'private', to: [user.id], topic: null, content });
  const sent = [dm(greeting)];
  const custom = inviteText ?? state.org.settings.welcomeMessageCustomText;
  if (custom.trim()) sent.push(dm(custom));
  return [...announceSignup(state, tx, user), ...sent];
}

/**
 * Notification Bot's notice of a new user in the organization's signup
 * announcements channel (Zulip's `notify_new_user`, FL 241's
 * `signup_announcements_stream_id`): none when the channel is unset or
 * archived, nor for the organization's first user. O(users) to count them,
 * once per sign-up.
 */
function announceSignup(state: RealmState, tx: Tx, user: UserRecord): Array<StoredMessage | null> {
  const target = state.org.settings.signupAnnouncementsStreamId;
  const channel = target === null ? undefined : state.channels.get(target);
  if (!channel || channel.isArchived) return [];
  let humans = 0;
  for (const u of state.users.values()) if (u.isActive && !u.isBot) humans++;
  if (humans <= 1) return [];
  return [sendAsSystemBot(state, tx, 'notification', { recipientType: 'stream', to: channel.id, topic: 'signups', content: `${silentMention(user)} joined this organization.` })];
}

/** Zulip's MAX_REALM_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH. */
const MAX_WELCOME_TEXT = 8000;

/**
 * POST /realm/test_welcome_bot_custom_message (FL 416): Welcome Bot sends
 * the acting administrator the custom text alone, as a new user would get it
 * after the greeting; the reply names that message.
 */
export const testWelcomeBotCustomMessage = defineAction<RealmState>()({
  type: 'testWelcomeBotCustomMessage',
  fields: z.object({ text: z.string() }),
  check(state, msg) {
    const user = actingUser(state, msg.caller);
    if (!isAdmin(user)) throw new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator', 400);
    if ([...msg.text].length > MAX_WELCOME_TEXT) throw badRequest(`welcome_message_custom_text is too long (limit: ${MAX_WELCOME_TEXT} characters).`);
    if (msg.text.length === 0) throw badRequest('Message must not be empty');
    return { user, text: msg.text, sent: null as StoredMessage | null };
  },
  apply(state, p, tx) {
    ensureSystemBots(state, tx);
    p.sent = sendAsSystemBot(state, tx, 'welcome', { recipientType: 'private', to: [p.user.id], topic: null, content: p.text });
    if (!p.sent) throw badRequest('Welcome Bot could not send the message');
    return { message_id: p.sent.id };
  },
  events(state, p) {
    return systemBotDeliveries(state, [p.sent]);
  },
});
