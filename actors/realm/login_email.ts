/**
 * The new-login email (Zulip's `zerver/signals.py` `email_on_new_login`):
 * a user who logs in (here: POST /fetch_api_key, where Zulip sends it too)
 * with `enable_login_emails` on is mailed the device, the address and the
 * time, unless the account was created within the last minute
 * (JUST_CREATED_THRESHOLD). Decided in the login's commit, sent by a durable
 * timer's effect after it (retried until the SMTP server accepts it).
 */
import { realmUrl } from '../../lib/hosts.ts';
import { sendMail } from '../../lib/mail.ts';
import { defineTimer, type Tx } from '../runtime/action.ts';
import { DEFAULT_USER_SETTINGS } from '../user/settings.ts';
import type { RealmState } from './state.ts';

const timer = defineTimer<RealmState>();
const LOGIN = 'loginEmail';
/** Zulip's JUST_CREATED_THRESHOLD; `PARLEY_JUST_CREATED_SECS` shortens it for tests. */
const JUST_CREATED_SECS = Number(process.env.PARLEY_JUST_CREATED_SECS ?? 60);

interface Device {
  userAgent: string;
  ip: string;
}

/** Zulip's get_device_browser / get_device_os, in short. */
function browserOf(ua: string): string | null {
  const l = ua.toLowerCase();
  if (l.includes('zulip')) return 'Zulip';
  if (l.includes('edg/')) return 'Edge';
  if (l.includes('firefox')) return 'Firefox';
  if (l.includes('chromium')) return 'Chromium';
  if (l.includes('chrome')) return 'Chrome';
  if (l.includes('safari')) return 'Safari';
  if (l.includes('msie') || l.includes('trident')) return 'Internet Explorer';
  return null;
}
function osOf(ua: string): string | null {
  const l = ua.toLowerCase();
  if (l.includes('windows')) return 'Windows';
  if (l.includes('android')) return 'Android';
  if (l.includes('iphone') || l.includes('ipad') || l.includes('like mac os x')) return 'iOS';
  if (l.includes('macintosh')) return 'macOS';
  if (l.includes(' cros ')) return 'ChromeOS';
  if (l.includes('linux')) return 'Linux';
  return null;
}

/** Call in the login's commit: sets the mail's timer when the user wants it. */
export function noteLogin(state: RealmState, userId: number, device: Device, tx: Tx): void {
  const u = state.users.get(userId);
  if (!u || u.isBot || !u.loggedIn) return; // a first login is the account's creation
  if (state.setting(userId, 'enable_login_emails', DEFAULT_USER_SETTINGS.enable_login_emails!) !== true) return;
  if (Date.now() - Date.parse(u.dateJoined) <= JUST_CREATED_SECS * 1000) return;
  const at = Date.now();
  tx.setTimer(LOGIN, at, { userId, at, ...device }, userId);
}

export const loginEmail = timer({
  name: LOGIN,
  async effect(state, p: { userId: number; at: number } & Device, ctx): Promise<undefined> {
    const u = state.users.get(p.userId);
    if (!u?.isActive) return undefined;
    const browser = browserOf(p.userAgent) ?? 'an unknown browser';
    const os = osOf(p.userAgent) ?? 'an unknown operating system';
    const realmName = state.meta?.name ?? 'Parley';
    const url = realmUrl(ctx.siteUrl, state.meta?.stringId ?? '');
    const when = new Date(p.at).toUTCString();
    const lines = [
      `Your account ${u.email} on ${realmName} (${url}) was just logged in to from a new device.`,
      '',
      `Date and time: ${when}`,
      `Device: ${browser} on ${os}`,
      `IP address: ${p.ip || 'unknown'}`,
      '',
      'If you do not recognize this login, or think your account may have been compromised, change your password and regenerate your API key at once.',
      `You can turn these emails off in your notification settings (${url}/#settings/notifications).`,
    ];
    await sendMail({
      to: u.email,
      subject: `New login from ${browser} on ${os}`,
      text: lines.join('\n'),
      html: lines.map((l) => (l ? `<p>${l.replace(/&/g, '&amp;').replace(/</g, '&lt;')}</p>` : '')).join('\n'),
      messageId: `<login.${state.realmId}.${p.userId}.${p.at}@parley>`,
    });
    return undefined;
  },
  check: () => null,
  apply: () => null,
});
