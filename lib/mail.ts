/**
 * Outgoing email: through SMTP when `PARLEY_SMTP_URL` is set (nodemailer),
 * otherwise into an outbox directory, one RFC 822 file per message
 * (`PARLEY_OUTBOX_DIR`, default `<PARLEY_DATA_DIR>/outbox`), so that mail can
 * be read where no mail server exists (development, tests).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import nodemailer, { type Transporter } from 'nodemailer';

/** What a mail says: its subject and its text, with an HTML version where it has one. */
export interface MailPart {
  subject: string;
  text: string;
  html?: string;
}

export interface Mail extends MailPart {
  to: string;
  /** A Message-ID of the sender's choosing (`<id@host>`): the same for a mail sent again, so a repeat is recognizable. */
  messageId?: string;
  /** A List-Unsubscribe URL (RFC 2369), which mail clients offer as a button. */
  listUnsubscribe?: string;
}

/** Where a missed-message email's unsubscribe link leads (Zulip's /accounts/unsubscribe/<type>/<key>): `gateway/pages/unsubscribe.ts`. */
export const UNSUBSCRIBE_PATH = '/accounts/unsubscribe/missed_messages';
/** Where a digest email's unsubscribe link leads (Zulip's /accounts/unsubscribe/digest/<key>). */
export const DIGEST_UNSUBSCRIBE_PATH = '/accounts/unsubscribe/digest';
/** Where an onboarding email's unsubscribe link leads (Zulip's /accounts/unsubscribe/welcome/<key>). */
export const WELCOME_UNSUBSCRIBE_PATH = '/accounts/unsubscribe/welcome';
/** Where a new-login email's unsubscribe link leads (Zulip's /accounts/unsubscribe/login/<key>). */
export const LOGIN_UNSUBSCRIBE_PATH = '/accounts/unsubscribe/login';

let transport: Transporter | null = null;
const FROM = () => process.env.PARLEY_MAIL_FROM ?? 'Parley <noreply@parley.invalid>';

/** Where mail goes when no SMTP server is configured. */
export const outboxDir = (env: NodeJS.ProcessEnv = process.env): string => env.PARLEY_OUTBOX_DIR ?? join(env.PARLEY_DATA_DIR ?? '.parley/data', 'outbox');

export async function sendMail({ listUnsubscribe, ...rest }: Mail): Promise<void> {
  const mail = { ...rest, ...(listUnsubscribe ? { list: { unsubscribe: listUnsubscribe } } : {}) };
  if (process.env.PARLEY_SMTP_URL) {
    transport ??= nodemailer.createTransport(process.env.PARLEY_SMTP_URL);
    await transport.sendMail({ from: FROM(), ...mail });
    return;
  }
  transport ??= nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  const info = await transport.sendMail({ from: FROM(), ...mail });
  const dir = outboxDir();
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${Date.now()}-${randomBytes(4).toString('hex')}.eml`), info.message as Buffer);
}

/** The site's base URL, for links in mail and API answers (PARLEY_SITE_URL, or the configured host and port). */
export function siteUrl(env: NodeJS.ProcessEnv = process.env): string {
  if (env.PARLEY_SITE_URL) return env.PARLEY_SITE_URL.replace(/\/$/, '');
  const host = env.PARLEY_HOST && env.PARLEY_HOST !== '0.0.0.0' ? env.PARLEY_HOST : '127.0.0.1';
  return `http://${host}:${env.PARLEY_PORT ?? '9991'}`;
}
