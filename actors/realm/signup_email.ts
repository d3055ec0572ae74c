/**
 * The emails a new human user gets (Zulip's `process_new_human_user`):
 * the account-registered email at once (`send_account_registered_email`:
 * the organization's URL, the account's email, how to log in, where to
 * start; an administrator's variant), and, while the organization's
 * `send_welcome_emails` is on, an onboarding email later (Zulip's
 * `onboarding_zulip_topics`, after `PARLEY_ONBOARDING_SECS`, two days by
 * default), with a one-click unsubscribe link (in both mails) that cancels it.
 * Decided in the user's creation commit (POST /users, an invitation's
 * sign-up; not imports nor bots), sent by durable timers' effects after it,
 * retried until the SMTP server accepts them; Message-IDs are fixed per
 * user, so a retried send is one mail to the reader.
 */
import { realmUrl } from '../../lib/hosts.ts';
import { sendMail, WELCOME_UNSUBSCRIBE_PATH } from '../../lib/mail.ts';
import { isAdmin } from '../model.ts';
import { defineTimer, type Tx } from '../runtime/action.ts';
import { ensureUnsubscribeKey, unsubscribeToken } from './notifications.ts';
import type { RealmState } from './state.ts';
import { T, type UserRecord } from '../../storage/tables.ts';

const timer = defineTimer<RealmState>();
const ACCOUNT = 'accountEmail';
const ONBOARDING = 'onboardingEmail';
/** When the onboarding email goes out after sign-up (Zulip: two days); `PARLEY_ONBOARDING_SECS` shortens it for tests. */
const ONBOARDING_SECS = Number(process.env.PARLEY_ONBOARDING_SECS ?? 2 * 24 * 3600);


const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const asHtml = (lines: string[]) => lines.map((l) => (l ? `<p>${escape(l)}</p>` : '')).join('\n');

/** Call in a new human user's creation commit: the account email now, the onboarding email later if the organization sends them. */
export function noteNewHuman(state: RealmState, user: UserRecord, tx: Tx): void {
  if (user.isBot) return;
  const onboarding = state.org.settings.sendWelcomeEmails;
  tx.setTimer(ACCOUNT, Date.now(), { userId: user.id, onboarding }, user.id);
  if (!onboarding) return;
  ensureUnsubscribeKey(state, tx);
  const at = tx.setTimer(ONBOARDING, Date.now() + ONBOARDING_SECS * 1000, { userId: user.id }, user.id);
  setOnboardingAt(state, tx, user.id, at);
}

function setOnboardingAt(state: RealmState, tx: Tx, userId: number, at: number | null): void {
  const next = { ...state.users.get(userId)!, onboardingAt: at };
  state.indexUser(next);
  tx.write(T.users.at(state.realmId, userId).put(next));
}

/** The one-click unsubscribe of the onboarding email (Zulip's "welcome" type): cancels the user's pending one. */
export function cancelOnboarding(state: RealmState, userId: number, tx: Tx): void {
  const at = state.users.get(userId)?.onboardingAt ?? null;
  if (at === null) return;
  tx.clearTimer(ONBOARDING, at, userId);
  setOnboardingAt(state, tx, userId, null);
}

export const accountEmail = timer({
  name: ACCOUNT,
  async effect(state, p: { userId: number; onboarding: boolean }, ctx): Promise<undefined> {
    const u = state.users.get(p.userId);
    if (!u?.isActive) return undefined;
    const realmName = state.meta?.name ?? 'Parley';
    const url = realmUrl(ctx.siteUrl, state.meta?.stringId ?? '');
    const lines = [
      `Your account on ${realmName} is ready.`,
      '',
      `Organization: ${url}`,
      `Your account: ${u.email}`,
      '',
      `To log in, open ${url} and sign in with ${u.email} and your password, or add the organization in a desktop or mobile app with its URL.`,
      `To get started, pick a few channels to follow (${url}/#channels/all), set up your profile (${url}/#settings/profile) and say hello.`,
      ...(isAdmin(u)
        ? ['', `As an administrator, you can invite people (${url}/#invite), choose the default channels new users join and review the organization's settings (${url}/#organization).`]
        : []),
      ...(p.onboarding && state.unsubscribeKey !== null
        ? ['', `In a couple of days we will send you a tip or two on using ${realmName}. Don't want them? Unsubscribe: ${url}${WELCOME_UNSUBSCRIBE_PATH}/${unsubscribeToken(state, u.id, 'welcome')}`]
        : []),
    ];
    await sendMail({
      to: u.email,
      subject: `Welcome to ${realmName}: your account is ready`,
      text: lines.join('\n'),
      html: asHtml(lines),
      messageId: `<account.${state.realmId}.${u.id}@parley>`,
    });
    return undefined;
  },
  check: () => null,
  apply: () => null,
});

export const onboardingEmail = timer({
  name: ONBOARDING,
  async effect(state, p: { userId: number }, ctx): Promise<undefined> {
    const u = state.users.get(p.userId);
    // Unsubscribed (the timer's clearing raced its firing): nothing to send.
    if (!u?.isActive || u.onboardingAt === null || state.unsubscribeKey === null) return undefined;
    const realmName = state.meta?.name ?? 'Parley';
    const url = realmUrl(ctx.siteUrl, state.meta?.stringId ?? '');
    const unsubscribe = `${url}${WELCOME_UNSUBSCRIBE_PATH}/${unsubscribeToken(state, u.id, 'welcome')}`;
    const lines = [
      `A tip for ${realmName}: every message belongs to a topic.`,
      '',
      'A channel holds many conversations, each under its own topic, so you can read one conversation from start to end, catch up topic by topic, and reply where a discussion belongs even hours later.',
      `When you write, give your message a short topic naming what it is about; start a new topic for a new subject. Your recent conversations are at ${url}/#recent.`,
      '',
      `You get this email once, after signing up. Don't want it? Unsubscribe: ${unsubscribe}`,
    ];
    await sendMail({
      to: u.email,
      subject: `Keep conversations organized with topics`,
      text: lines.join('\n'),
      html: asHtml(lines),
      messageId: `<onboarding.${state.realmId}.${u.id}@parley>`,
      listUnsubscribe: unsubscribe,
    });
    return undefined;
  },
  check: (_state, p: { userId: number }) => ({ userId: p.userId }),
  apply(state, p, tx) {
    // Sent: nothing pending any more.
    if (state.users.get(p.userId)?.onboardingAt != null) setOnboardingAt(state, tx, p.userId, null);
    return null;
  },
});
