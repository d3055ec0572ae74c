/**
 * The new-login email (Zulip's `zerver/signals.py` `email_on_new_login`):
 * a user who logs in (POST /fetch_api_key and the login page, POST
 * /jwt/fetch_api_key: where Zulip's `process_api_key_fetch_authenticate_result`
 * sends it too) with `enable_login_emails` on is mailed the browser and
 * operating system (Zulip's names, from the User-Agent), the IP address and
 * the time in the user's time zone and clock, unless the account was created
 * within the last minute (JUST_CREATED_THRESHOLD; here also a user's first
 * login, which makes their account). The mail carries a one-click link that
 * turns `enable_login_emails` off (Zulip's "login" unsubscribe type). Decided
 * in the login's commit, sent by a durable timer's effect after it (retried
 * until the SMTP server accepts it).
 */
import { realmUrl } from '../../../../lib/hosts.ts';
import { LOGIN_UNSUBSCRIBE_PATH, sendMail } from '../../../../lib/mail.ts';
import { defineTimer, type Tx } from '../../../runtime/action.ts';
import { DEFAULT_USER_SETTINGS } from '../../../user/settings.ts';
import { ensureUnsubscribeKey, unsubscribeToken } from './notifications.ts';
import type { RealmState } from '../../state/state.ts';

const timer = defineTimer<RealmState>();
const LOGIN = 'loginEmail';
/** Zulip's JUST_CREATED_THRESHOLD; `PARLEY_JUST_CREATED_SECS` shortens it for tests. */
const JUST_CREATED_SECS = Number(process.env.PARLEY_JUST_CREATED_SECS ?? 60);

interface Device {
  userAgent: string;
  ip: string;
}

/** Zulip's get_device_browser, in its order (a Chromium-based browser names itself Chrome too; Opera and Edge say so). */
function browserOf(ua: string): string | null {
  const l = ua.toLowerCase();
  if (l.includes('zulip')) return 'Zulip';
  if (l.includes('edge')) return 'Edge';
  if (l.includes('opera') || l.includes('opr/')) return 'Opera';
  if ((l.includes('chrome') || l.includes('crios')) && !l.includes('chromium')) return 'Chrome';
  if (l.includes('firefox') && !l.includes('seamonkey') && !l.includes('chrome')) return 'Firefox';
  if (l.includes('chromium')) return 'Chromium';
  if (l.includes('safari')) return 'Safari';
  if (l.includes('msie') || l.includes('trident')) return 'Internet Explorer';
  return null;
}
/** Zulip's get_device_os, in its order ("ios" names the Zulip apps' own User-Agents, e.g. `ZulipMobile/27.192 (iOS 14.4)`). */
function osOf(ua: string): string | null {
  const l = ua.toLowerCase();
  if (l.includes('windows')) return 'Windows';
  if (l.includes('macintosh')) return 'macOS';
  if (l.includes('linux') && !l.includes('android')) return 'Linux';
  if (l.includes('android')) return 'Android';
  if (l.includes('ios') || l.includes('like mac os x')) return 'iOS';
  if (l.includes(' cros ')) return 'ChromeOS';
  return null;
}

/** Zulip's login time: "Monday, December 07, 2026 at 18:30 UTC" in the user's time zone (UTC when unset) and clock. */
export function loginTime(at: number, timezone: string, twentyFourHour: boolean): string {
  const format = (timeZone: string) => {
    const parts = Object.fromEntries(
      new Intl.DateTimeFormat('en-US', { timeZone, weekday: 'long', month: 'long', day: '2-digit', year: 'numeric', hour: '2-digit', minute: '2-digit', hour12: !twentyFourHour, timeZoneName: 'short' })
        .formatToParts(new Date(at))
        .map((p) => [p.type, p.value]),
    );
    const hour = twentyFourHour && parts.hour === '24' ? '00' : parts.hour;
    return `${parts.weekday}, ${parts.month} ${parts.day}, ${parts.year} at ${hour}:${parts.minute}${twentyFourHour ? '' : parts.dayPeriod} ${parts.timeZoneName}`;
  };
  try {
    return format(timezone || 'UTC');
  } catch {
    return format('UTC');
  }
}

/** Call in the login's commit: sets the mail's timer when the user wants it. */
export function noteLogin(state: RealmState, userId: number, device: Device, tx: Tx): void {
  const u = state.users.get(userId);
  if (!u || u.isBot || !u.loggedIn) return; // a first login is the account's creation
  if (state.setting(userId, 'enable_login_emails', DEFAULT_USER_SETTINGS.enable_login_emails!) !== true) return;
  if (Date.now() - Date.parse(u.dateJoined) <= JUST_CREATED_SECS * 1000) return;
  const at = Date.now();
  ensureUnsubscribeKey(state, tx);
  tx.setTimer(LOGIN, at, { userId, at, ...device }, userId);
}

export const loginEmail = timer({
  name: LOGIN,
  async effect(state, p: { userId: number; at: number } & Device, ctx): Promise<undefined> {
    const u = state.users.get(p.userId);
    if (!u?.isActive) return undefined;
    const browser = browserOf(p.userAgent) ?? 'An unknown browser';
    const os = osOf(p.userAgent) ?? 'an unknown operating system';
    const realmName = state.meta?.name ?? 'Parley';
    const url = realmUrl(ctx.siteUrl, state.meta?.stringId ?? '');
    const when = loginTime(p.at, u.timezone, state.setting(u.id, 'twenty_four_hour_time', DEFAULT_USER_SETTINGS.twenty_four_hour_time!) === true);
    // Set in the login's commit since this build; a timer set before it may find no key (then no link).
    const unsubscribe = state.unsubscribeKey === null ? null : `${url}${LOGIN_UNSUBSCRIBE_PATH}/${unsubscribeToken(state, u.id, 'login')}`;
    const lines = [
      `Your account ${u.email} on ${realmName} (${url}) was just logged in to from a new device.`,
      '',
      `Date and time: ${when}`,
      `Device: ${browser} on ${os}`,
      `IP address: ${p.ip || 'Unknown IP address'}`,
      '',
      'If you do not recognize this login, or think your account may have been compromised, change your password and regenerate your API key at once.',
      `You can turn these emails off in your notification settings (${url}/#settings/notifications)${unsubscribe ? `, or at once: ${unsubscribe}` : ''}.`,
    ];
    await sendMail({
      to: u.email,
      subject: `New login from ${browser} on ${os}`,
      text: lines.join('\n'),
      html: lines.map((l) => (l ? `<p>${l.replace(/&/g, '&amp;').replace(/</g, '&lt;')}</p>` : '')).join('\n'),
      ...(unsubscribe ? { listUnsubscribe: unsubscribe } : {}),
      messageId: `<login.${state.realmId}.${p.userId}.${p.at}@parley>`,
    });
    return undefined;
  },
  check: () => null,
  apply: () => null,
});
