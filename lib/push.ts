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
 * End-to-end encrypted push (Zulip 11's E2EE notifications): a payload is
 * sealed for the device's public key (libsodium's `crypto_box_seal`: an
 * ephemeral X25519 key, XSalsa20-Poly1305) and given as standard base64, so
 * neither the service nor Google or Apple can read it; the device opens it
 * with its private key.
 */
export async function sealForDevice(publicKeyB64: string, payload: unknown): Promise<string> {
  await sodium.ready;
  const key = sodium.from_base64(publicKeyB64, sodium.base64_variants.ORIGINAL);
  return sodium.to_base64(sodium.crypto_box_seal(JSON.stringify(payload), key), sodium.base64_variants.ORIGINAL);
}

/** Whether `b64` is a standard-base64 X25519 public key (32 bytes: 43 characters and one `=`). */
export const isPublicKey = (b64: string): boolean => /^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/.test(b64);
