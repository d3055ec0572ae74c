/**
 * A real SMTP server for tests (`smtp-server` from npm) on 127.0.0.1 and a
 * free port: every message it accepts is parsed (`mailparser`) and kept, so
 * a test reads what a server under test mailed through `PARLEY_SMTP_URL`.
 */
import type { AddressInfo } from 'node:net';
import { type ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface Mailbox {
  /** `smtp://127.0.0.1:<port>`, for PARLEY_SMTP_URL. */
  url: string;
  /** Every message accepted so far, in order. */
  messages: ParsedMail[];
  /** Messages to `to` (an address). */
  to(address: string): ParsedMail[];
  /** Waits until `pred` holds of the messages (or throws after `timeoutMs`). */
  waitFor(pred: (messages: ParsedMail[]) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** What a mail of the server is, from its Message-ID (`<kind.realm.user...@parley>`): missed, digest, login, account, onboarding. */
export const mailKind = (m: ParsedMail): string => /^<([a-z]+)\./.exec(m.messageId ?? '')?.[1] ?? '';

export async function startSmtp(): Promise<Mailbox> {
  const messages: ParsedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, _session, done) {
      simpleParser(stream)
        .then((m) => {
          messages.push(m);
          done();
        })
        .catch((err: Error) => done(err));
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;
  const recipients = (m: ParsedMail) => (Array.isArray(m.to) ? m.to : m.to ? [m.to] : []).flatMap((a) => a.value.map((v) => v.address?.toLowerCase()));
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    to: (address) => messages.filter((m) => recipients(m).includes(address.toLowerCase())),
    async waitFor(pred, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (!pred(messages)) {
        if (Date.now() > deadline) throw new Error(`mail did not arrive in time (${messages.length} received)`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
