/**
 * The emails a new human user gets (Zulip's `process_new_human_user`,
 * `send_account_registered_email` and `enqueue_welcome_emails`):
 *
 * - the account email at once: the organization's URL, the account's email,
 *   how to log in, where to start; an administrator's lines; for the
 *   organization's creator, the congratulations of a new organization (a
 *   demo organization's, with its deletion date);
 * - while the organization's `send_welcome_emails` is on, the onboarding
 *   emails on Zulip's schedule (`onboardingSchedule`): about topics (every
 *   new user whose address has no other account, below), the guide for the organization's type (when the type has a
 *   guide; the communities guide to administrators only) and, for the
 *   organization's creator only, about setting the organization up.
 *
 * Zulip leaves the topics email out when the address has other accounts on
 * the server (`other_account_count`: in any organization, active or not).
 * The server-wide address index answers that (`actors/directory/accounts.ts`)
 * after the creation commit: the topics email waits in `onboarding` with no
 * timer (`at` 0) until the new user's `accountAddresses` follow-up brings
 * the count (`account_addresses.ts`), then gets its timer at its day of the
 * schedule, or is dropped (`decideTopicsEmail`).
 *
 * Decided in the user's creation commit (POST /users, an invitation's
 * sign-up, the creator in the organization's `bootstrap`; not imports nor
 * bots), sent by durable timers' effects after it, retried until the SMTP
 * server accepts them. The onboarding emails still due are kept on the user
 * (`onboarding`, each with its timer's time): the one-click unsubscribe link
 * (in every one of these mails) clears them all. Message-IDs are fixed per
 * user and email, so a retried send is one mail to the reader.
 */
import { realmUrl } from '../../../../lib/hosts.ts';
import { sendMail, WELCOME_UNSUBSCRIBE_PATH } from '../../../../lib/mail.ts';
import { isAdmin } from '../../../model.ts';
import { defineTimer, type Tx } from '../../../runtime/action.ts';
import { ensureUnsubscribeKey, unsubscribeToken } from './notifications.ts';
import type { RealmState } from '../../state/state.ts';
import { type OnboardingEmail, T, type UserRecord } from '../../../../storage/tables.ts';

const timer = defineTimer<RealmState>();
const ACCOUNT = 'accountEmail';
const ONBOARDING = 'onboardingEmail';
/** A day of the onboarding schedule; `PARLEY_ONBOARDING_DAY_SECS` shortens it for tests. */
const DAY_MS = Number(process.env.PARLEY_ONBOARDING_DAY_SECS ?? 86_400) * 1000;

const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const asHtml = (lines: string[]) => lines.map((l) => (l ? `<p>${escape(l)}</p>` : '')).join('\n');

/** ISO weekday (Monday 1 … Sunday 7) of `at` in `timezone` ('' or an unknown zone: UTC). */
function isoWeekday(at: Date, timezone: string): number {
  let name: string;
  try {
    name = new Intl.DateTimeFormat('en-US', { weekday: 'short', timeZone: timezone || 'UTC' }).format(at);
  } catch {
    name = new Intl.DateTimeFormat('en-US', { weekday: 'short', timeZone: 'UTC' }).format(at);
  }
  return ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'].indexOf(name) + 1;
}

/**
 * Zulip's `get_onboarding_email_schedule`: days after sign-up, by the
 * weekday of sign-up in the user's time zone, so that no email lands on a
 * weekend and a weekday lies between two; each goes an hour before the day
 * is full (near the top of the inbox when its reader sits down). In ms.
 */
export function onboardingSchedule(joined: Date, timezone: string): Record<OnboardingEmail, number> {
  const days: Record<OnboardingEmail, number> = { topics: 2, guide: 4, team: 6 };
  switch (isoWeekday(joined, timezone)) {
    case 1: // Monday: the team email on Tuesday
      days.team = 8;
      break;
    case 2: // Tuesday: the guide on Monday, the team email on Wednesday
    case 3: // Wednesday: the guide on Tuesday, the team email on Thursday
      days.guide = 6;
      days.team = 8;
      break;
    case 4: // Thursday: Monday, Wednesday, Friday
      Object.assign(days, { topics: 4, guide: 6, team: 8 });
      break;
    case 5: // Friday: Tuesday, Thursday, Monday
      Object.assign(days, { topics: 4, guide: 6, team: 10 });
      break;
    case 7: // Sunday: the team email on Monday
      days.team = 8;
      break;
    // Saturday: Monday, Wednesday, Friday as they are.
  }
  const ms = (d: number) => Math.round(d * DAY_MS - DAY_MS / 24);
  return { topics: ms(days.topics), guide: ms(days.guide), team: ms(days.team) };
}

/** The guide of an organization type (Zulip's ORG_TYPES `onboarding_zulip_guide_url`), with the words naming it; none for the others. */
const GUIDES: Record<number, { url: string; audience: string }> = {
  10: { url: 'https://zulip.com/for/business/', audience: 'businesses' },
  20: { url: 'https://zulip.com/for/open-source/', audience: 'open-source projects' },
  30: { url: 'https://zulip.com/for/education/', audience: 'education' },
  35: { url: 'https://zulip.com/for/education/', audience: 'education' },
  40: { url: 'https://zulip.com/for/research/', audience: 'research' },
  50: { url: 'https://zulip.com/for/events/', audience: 'events and conferences' },
  60: { url: 'https://zulip.com/for/communities/', audience: 'non-profits' },
  90: { url: 'https://zulip.com/for/communities/', audience: 'communities' },
};

/** Whether `user` gets the guide of `orgType`: Zulip sends the communities guide to administrators only (zulip#24822). */
function guideFor(orgType: number, user: UserRecord): boolean {
  const guide = GUIDES[orgType];
  return guide !== undefined && (guide.url !== GUIDES[90]!.url || isAdmin(user));
}

/**
 * Call in a new human user's creation commit: the account email now, and
 * the onboarding emails later if the organization sends them.
 * `realmCreation`: the user created the organization (its first owner).
 */
export function noteNewHuman(state: RealmState, user: UserRecord, tx: Tx, realmCreation = false): void {
  if (user.isBot) return;
  const onboarding = state.org.settings.sendWelcomeEmails;
  tx.setTimer(ACCOUNT, Date.now(), { userId: user.id, onboarding, realmCreation }, user.id);
  if (!onboarding) return;
  ensureUnsubscribeKey(state, tx);
  const orgType = state.org.settings.orgType;
  const emails: OnboardingEmail[] = ['topics', ...(guideFor(orgType, user) ? (['guide'] as const) : []), ...(realmCreation ? (['team'] as const) : [])];
  const schedule = onboardingSchedule(new Date(user.dateJoined), user.timezone);
  // The topics email waits for the address index's answer (`decideTopicsEmail`): no timer yet.
  const pending = emails.map((email) => ({ email, at: email === 'topics' ? AWAITING_INDEX : tx.setTimer(ONBOARDING, Date.parse(user.dateJoined) + schedule[email], { userId: user.id, email, orgType }, user.id) }));
  setOnboarding(state, tx, user.id, pending);
}

/** The `at` of a topics email that waits for the address index: no timer is set. */
const AWAITING_INDEX = 0;

/**
 * The address index answered for a user (`account_addresses.ts`): a topics
 * email still waiting for it is scheduled on its day when the address has
 * no other account on the server, and dropped otherwise (Zulip's
 * `other_account_count == 0`, counted when the account is made). Nothing
 * for a user with none waiting (unsubscribed, deactivated, decided already).
 */
export function decideTopicsEmail(state: RealmState, tx: Tx, userId: number, otherAccounts: number): void {
  const user = state.users.get(userId);
  const pending = user?.onboarding ?? [];
  if (!user || !pending.some((e) => e.email === 'topics' && e.at === AWAITING_INDEX)) return;
  if (otherAccounts > 0) {
    setOnboarding(state, tx, userId, pending.filter((e) => e.email !== 'topics'));
    return;
  }
  const due = Date.parse(user.dateJoined) + onboardingSchedule(new Date(user.dateJoined), user.timezone).topics;
  const at = tx.setTimer(ONBOARDING, due, { userId, email: 'topics', orgType: state.org.settings.orgType }, userId);
  setOnboarding(state, tx, userId, pending.map((e) => (e.email === 'topics' ? { email: 'topics' as const, at } : e)));
}

function setOnboarding(state: RealmState, tx: Tx, userId: number, onboarding: UserRecord['onboarding']): void {
  const next = { ...state.users.get(userId)!, onboarding };
  state.indexUser(next);
  tx.write(T.users.at(state.realmId, userId).put(next));
}

/** The one-click unsubscribe of onboarding emails (Zulip's "welcome" type: `clear_scheduled_emails`): cancels every one still due. */
export function cancelOnboarding(state: RealmState, userId: number, tx: Tx): void {
  const pending = state.users.get(userId)?.onboarding ?? [];
  if (!pending.length) return;
  for (const e of pending) if (e.at !== AWAITING_INDEX) tx.clearTimer(ONBOARDING, e.at, userId);
  setOnboarding(state, tx, userId, []);
}

const unsubscribeLine = (state: Readonly<RealmState>, url: string, userId: number) => `${url}${WELCOME_UNSUBSCRIBE_PATH}/${unsubscribeToken(state, userId, 'welcome')}`;

export const accountEmail = timer({
  name: ACCOUNT,
  async effect(state, p: { userId: number; onboarding: boolean; realmCreation?: boolean }, ctx): Promise<undefined> {
    const u = state.users.get(p.userId);
    if (!u?.isActive) return undefined;
    const realmName = state.meta?.name ?? 'Parley';
    const url = realmUrl(ctx.siteUrl, state.meta?.stringId ?? '');
    const demoUntil = state.meta?.demoOrganizationScheduledDeletionDate ?? null;
    const opening = !p.realmCreation
      ? [`Your account on ${realmName} is ready.`]
      : demoUntil !== null
        ? [`Congratulations, you have created a new demo organization: ${realmName}.`, `A demo organization is deleted on ${new Date(demoUntil * 1000).toUTCString()} (30 days after its creation) unless you make it permanent by giving it a new URL in its settings (${url}/#organization/organization-profile).`]
        : [`Congratulations, you have created a new organization: ${realmName}.`];
    const lines = [
      ...opening,
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
        ? ['', `Over the next days we will send you a few tips on using ${realmName}. Don't want them? Unsubscribe: ${unsubscribeLine(state, url, u.id)}`]
        : []),
    ];
    await sendMail({
      to: u.email,
      subject: p.realmCreation ? `Welcome to ${realmName}: your organization is ready` : `Welcome to ${realmName}: your account is ready`,
      text: lines.join('\n'),
      html: asHtml(lines),
      messageId: `<account.${state.realmId}.${u.id}@parley>`,
    });
    return undefined;
  },
  check: () => null,
  apply: () => null,
});

/** What each onboarding email says: its subject and its lines (`url`: the organization's). */
function onboardingText(email: OnboardingEmail, realmName: string, url: string, orgType: number): { subject: string; lines: string[] } {
  switch (email) {
    case 'topics':
      return {
        subject: 'Keep conversations organized with topics',
        lines: [
          `A tip for ${realmName}: every message belongs to a topic.`,
          '',
          'A channel holds many conversations, each under its own topic, so you can read one conversation from start to end, catch up topic by topic, and reply where a discussion belongs even hours later.',
          `When you write, give your message a short topic naming what it is about; start a new topic for a new subject. Your recent conversations are at ${url}/#recent.`,
          'A conversation that went astray can be moved to another topic or channel, and a topic renamed, by anyone allowed to in the organization.',
        ],
      };
    case 'guide': {
      const guide = GUIDES[orgType]!;
      return {
        subject: `A guide to ${realmName} for ${guide.audience}`,
        lines: [
          `As you get started with ${realmName}, here is a guide to the features that serve organizations like yours best: the guide for ${guide.audience},`,
          guide.url,
        ],
      };
    }
    case 'team':
      return {
        subject: `Setting up ${realmName} for your team`,
        lines: [
          `If you have decided to use ${realmName} for your organization, welcome: start by inviting your team (${url}/#invite), choosing the channels new members join (${url}/#organization/default-channels-list) and reviewing the organization's settings (${url}/#organization).`,
          '',
          'If you are still trying it out, two suggestions from teams who chose a chat tool:',
          `1. Invite a few teammates to explore it with you (${url}/#invite), and talk about your impressions in it.`,
          '2. Run a week-long trial with your team without any other chat tool: it is the only way to see how it changes the way your team communicates.',
        ],
      };
  }
}

export const onboardingEmail = timer({
  name: ONBOARDING,
  // `email` and `orgType` are absent from timers set before the guide and team emails existed: those were the topics email.
  async effect(state, p: { userId: number; email?: OnboardingEmail; orgType?: number }, ctx): Promise<undefined> {
    const u = state.users.get(p.userId);
    const email = p.email ?? 'topics';
    // Unsubscribed (the timer's clearing raced its firing): nothing to send.
    if (!u?.isActive || !u.onboarding.some((e) => e.email === email) || state.unsubscribeKey === null) return undefined;
    const realmName = state.meta?.name ?? 'Parley';
    const url = realmUrl(ctx.siteUrl, state.meta?.stringId ?? '');
    const unsubscribe = unsubscribeLine(state, url, u.id);
    const { subject, lines } = onboardingText(email, realmName, url, p.orgType ?? state.org.settings.orgType);
    lines.push('', `You get a few of these emails after signing up. Don't want them? Unsubscribe from onboarding emails for ${realmName}: ${unsubscribe}`);
    await sendMail({
      to: u.email,
      subject,
      text: lines.join('\n'),
      html: asHtml(lines),
      // The topics email keeps the Message-ID it had when it was the only one.
      messageId: email === 'topics' ? `<onboarding.${state.realmId}.${u.id}@parley>` : `<onboarding.${state.realmId}.${u.id}.${email}@parley>`,
      listUnsubscribe: unsubscribe,
    });
    return undefined;
  },
  check: (_state, p: { userId: number; email?: OnboardingEmail }) => ({ userId: p.userId, email: p.email ?? 'topics' }),
  apply(state, p, tx) {
    // Sent: no longer due.
    const pending = state.users.get(p.userId)?.onboarding ?? [];
    if (pending.some((e) => e.email === p.email)) setOnboarding(state, tx, p.userId, pending.filter((e) => e.email !== p.email));
    return null;
  },
});
