/**
 * Mobile push through Zulip's mobile push notification service, as a
 * self-hosted Zulip server reaches it (Zulip's `zerver/lib/remote_server.py`
 * and `push_notifications.py`; the service's side is `zilencer/views.py`).
 *
 * The operator registers the server with the service and sets its
 * credentials: `PARLEY_PUSH_SERVICE_URL` (Zulip's ZULIP_SERVICES_URL, e.g.
 * https://push.zulipchat.com), `PARLEY_PUSH_SERVER_UUID` and
 * `PARLEY_PUSH_SERVER_KEY` (zulip_org_id / zulip_org_key). All three set:
 * push is configured, and every call is an HTTP POST to
 * `<url>/api/v1/remotes/<endpoint>` with HTTP Basic auth (UUID:key). None set:
 * push is off, as on a Zulip server without the service.
 *
 * Payloads are the ones the apps parse (zulip-flutter's
 * `lib/api/notifications.dart`, the legacy plaintext form: `event`,
 * `zulip_message_id`, `stream_id`/`pm_users`, ...).
 */
import sodium from 'libsodium-wrappers';
import { SERVER_VERSION } from './version.ts';

export interface PushService {
  url: string;
  uuid: string;
  key: string;
}

/** The service's configuration, or null when push is not configured. */
export function pushService(env: NodeJS.ProcessEnv = process.env): PushService | null {
  const url = env.PARLEY_PUSH_SERVICE_URL;
  const uuid = env.PARLEY_PUSH_SERVER_UUID;
  const key = env.PARLEY_PUSH_SERVER_KEY;
  return url && uuid && key ? { url: url.replace(/\/$/, ''), uuid, key } : null;
}

export const pushConfigured = (env: NodeJS.ProcessEnv = process.env): boolean => pushService(env) !== null;

/** Token kinds, as Zulip numbers them (PushDeviceToken.APNS / FCM). */
export const TokenKind = { APNS: 1, FCM: 2 } as const;

/** A refusal or failure of the service, with its answer. */
export class PushServiceError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super(`push service answered ${status}: ${JSON.stringify(body).slice(0, 300)}`);
  }
}

/**
 * One call to the service: form-encoded (`send_to_push_bouncer`) or JSON
 * (`send_json_to_push_bouncer`). Throws PushServiceError unless it succeeds.
 */
export async function callService(endpoint: string, body: { form: Record<string, string | number> } | { json: unknown }, auth = true): Promise<Record<string, unknown>> {
  const svc = pushService();
  if (!svc) throw new Error('push is not configured');
  const headers: Record<string, string> = { 'User-Agent': `ZulipServer/${SERVER_VERSION} (Parley)` };
  if (auth) headers.Authorization = `Basic ${Buffer.from(`${svc.uuid}:${svc.key}`).toString('base64')}`;
  let payload: string;
  if ('form' in body) {
    headers['Content-Type'] = 'application/x-www-form-urlencoded';
    payload = new URLSearchParams(Object.entries(body.form).map(([k, v]) => [k, String(v)])).toString();
  } else {
    headers['Content-Type'] = 'application/json';
    payload = JSON.stringify(body.json);
  }
  const r = await fetch(`${svc.url}/api/v1/remotes/${endpoint}`, { method: 'POST', headers, body: payload, signal: AbortSignal.timeout(10_000) });
  const answer = (await r.json().catch(() => null)) as Record<string, unknown> | null;
  if (!r.ok || answer?.result !== 'success') throw new PushServiceError(r.status, answer);
  return answer;
}

/**
 * `remotes/server/register` (Zulip's `manage.py register_server`): tells the
 * service this server's UUID, key, hostname and contact. Idempotent (the
 * service answers `created: false` the second time).
 */
export async function registerServer(hostname: string, contactEmail: string): Promise<boolean> {
  const svc = pushService()!;
  const r = await callService('server/register', { form: { zulip_org_id: svc.uuid, zulip_org_key: svc.key, hostname, contact_email: contactEmail } }, false);
  return r.created === true;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", nbsp: ' ' };

/** A rendered message as the notification's plain text, at most 200 characters (Zulip's get_mobile_push_content, in short). */
export function pushContent(html: string): { content: string; truncated: boolean } {
  const text = html
    .replace(/<span class="user-mention silent"[^>]*>([^<]*)<\/span>/g, '$1')
    .replace(/<br\s*\/?>/g, '\n')
    .replace(/<\/p>\s*<p>/g, '\n')
    .replace(/<[^>]+>/g, '')
    .replace(/&(amp|lt|gt|quot|#39|nbsp);/g, (_, e: string) => ENTITIES[e]!)
    .trim();
  const chars = [...text];
  return chars.length > 200 ? { content: `${chars.slice(0, 200).join('')}…`, truncated: true } : { content: text, truncated: false };
}

/**
 * End-to-end encrypted push (Zulip 12's form, FL 432 and 468): the device
 * gives a symmetric `push_key`, standard base64 of one tag byte (0x31:
 * libsodium's `crypto_secretbox_easy`) and its 32-byte key. A payload is
 * the JSON of the API's mobile-notifications page, encrypted with that key
 * under a fresh 24-byte nonce and given as base64 of the nonce followed by
 * the ciphertext (what zulip-flutter's `PushKeyStore.decryptNotification`
 * opens), so neither the service nor Google or Apple can read it.
 */
const PUSH_KEY_TAG_SECRETBOX = 0x31;

/** The 32-byte secretbox key of a `push_key`, or null when it is not one (Zulip's check_push_key). */
export function pushKeyBytes(b64: string): Uint8Array | null {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64) || b64.length % 4 !== 0) return null;
  const raw = Buffer.from(b64, 'base64');
  if (raw.length !== 33 || raw[0] !== PUSH_KEY_TAG_SECRETBOX) return null;
  return new Uint8Array(raw.subarray(1));
}

/** `payload` encrypted for a device's `push_key`: base64(nonce || crypto_secretbox_easy(JSON)). */
export async function encryptForDevice(pushKey: string, payload: unknown): Promise<string> {
  await sodium.ready;
  const key = pushKeyBytes(pushKey);
  if (!key) throw new Error('not a push key');
  const nonce = sodium.randombytes_buf(sodium.crypto_secretbox_NONCEBYTES);
  const box = sodium.crypto_secretbox_easy(JSON.stringify(payload), nonce, key);
  return Buffer.concat([nonce, box]).toString('base64');
}
