/**
 * A mobile push notification service for tests: an HTTP server on 127.0.0.1
 * and a free port that implements the part of Zulip's service API a server
 * uses (`zilencer/views.py`: `remotes/server/register`, `remotes/push/register`,
 * `/unregister`, `/notify`, `/test_notification`, and for end-to-end encrypted
 * push `remotes/push/e2ee/register` and `/e2ee/notify` in Zulip 12's form,
 * FL 468: devices named by `token_id`), with its checks (HTTP Basic auth by a
 * registered server's UUID and key, token kinds, ios_app_id for APNs, known
 * devices; an E2EE registration sealed for the service's own key,
 * `bouncerPublicKey`, not older than a day, whose `token_id` is the first 8
 * bytes of the SHA-256 of the token it seals), and records every call it
 * answers.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import sodium from 'libsodium-wrappers';

export interface ServiceCall {
  endpoint: string;
  /** The server's UUID from the Basic credentials (null for server/register). */
  server: string | null;
  /** Form fields or the JSON body. */
  body: Record<string, any>;
}

export interface PushServiceDouble {
  url: string;
  uuid: string;
  key: string;
  calls: ServiceCall[];
  /** Registered devices: `${user_id}:${kind}:${token}`. */
  devices: Set<string>;
  /** The service's public key (base64) a device seals its E2EE registration for. */
  bouncerPublicKey: string;
  /** E2EE devices by `${realm_uuid}:${token_id}` (Zulip 12's RemotePushDevice): what their sealed registration said. */
  e2eeDevices: Map<string, { realm_uuid: string; token_id: string; token: string; token_kind: string; ios_app_id?: string }>;
  /** While true, `push/notify` answers 503 and records nothing (a service outage); `refused` counts them. */
  down: boolean;
  refused: number;
  of(endpoint: string): ServiceCall[];
  waitFor(pred: () => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

const read = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString()));
  });

export async function startPushService(): Promise<PushServiceDouble> {
  const uuid = randomUUID();
  const key = 'k'.repeat(64);
  const servers = new Map<string, string>(); // registered UUID -> key
  const calls: ServiceCall[] = [];
  const devices = new Set<string>();
  await sodium.ready;
  const bouncer = sodium.crypto_box_keypair();
  const bouncerPublicKey = sodium.to_base64(bouncer.publicKey, sodium.base64_variants.ORIGINAL);
  const e2eeDevices: PushServiceDouble['e2eeDevices'] = new Map();
  let double: PushServiceDouble;
  const server = createServer(async (req, res) => {
    const reply = (status: number, body: Record<string, unknown>) => {
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const fail = (msg: string, code = 'BAD_REQUEST', status = 400) => reply(status, { result: 'error', msg, code });
    const raw = await read(req);
    const endpoint = (req.url ?? '').replace(/^\/api\/v1\/remotes\//, '');
    const json = (req.headers['content-type'] ?? '').startsWith('application/json');
    const body: Record<string, any> = json ? JSON.parse(raw) : Object.fromEntries(new URLSearchParams(raw));
    if (req.method !== 'POST') return fail('Method not allowed', 'BAD_REQUEST', 405);
    if (double.down && endpoint === 'push/notify') {
      double.refused++;
      return fail('Service unavailable', 'INTERNAL_SERVER_ERROR', 503);
    }
    if (endpoint === 'server/register') {
      if (!/^[0-9a-f-]{36}$/.test(body.zulip_org_id ?? '') || (body.zulip_org_key ?? '').length !== 64) return fail('Invalid UUID');
      if (!body.hostname || !/@/.test(body.contact_email ?? '')) return fail('Invalid email address.');
      const known = servers.get(body.zulip_org_id);
      if (known !== undefined && known !== body.zulip_org_key) return fail(`Zulip server auth failure: key does not match role ${body.zulip_org_id}`, 'INVALID_ZULIP_SERVER', 401);
      servers.set(body.zulip_org_id, body.zulip_org_key);
      calls.push({ endpoint, server: null, body });
      return reply(200, { result: 'success', msg: '', created: known === undefined });
    }
    const [who, secret] = Buffer.from((req.headers.authorization ?? '').replace(/^Basic /, ''), 'base64').toString().split(':');
    if (!who || servers.get(who) !== secret) return fail(`Zulip server auth failure: ${who} is not registered`, 'INVALID_ZULIP_SERVER', 401);
    if (endpoint === 'push/e2ee/register') {
      calls.push({ endpoint, server: who, body });
      for (const name of ['realm_uuid', 'token_id', 'encrypted_push_registration', 'bouncer_public_key']) {
        if (typeof body[name] !== 'string') return fail(`Missing '${name}' argument`, 'REQUEST_VARIABLE_MISSING');
      }
      if (body.bouncer_public_key !== bouncerPublicKey) return fail('Invalid bouncer_public_key', 'INVALID_BOUNCER_PUBLIC_KEY');
      let reg: { token: string; token_kind: string; timestamp: number; ios_app_id?: string };
      try {
        const sealed = sodium.from_base64(body.encrypted_push_registration, sodium.base64_variants.ORIGINAL);
        reg = JSON.parse(sodium.to_string(sodium.crypto_box_seal_open(sealed, bouncer.publicKey, bouncer.privateKey)));
      } catch {
        return fail('Invalid encrypted_push_registration', 'INVALID_ENCRYPTED_PUSH_REGISTRATION');
      }
      if (Date.now() / 1000 - reg.timestamp > 86_400) return fail('Request expired', 'REQUEST_EXPIRED');
      // The token_id names the token the registration seals (what the app computes), or the registration is refused.
      const digest = createHash('sha256').update(reg.token ?? '').digest().subarray(0, 8);
      if (!Buffer.from(body.token_id, 'base64').equals(digest)) return fail('Invalid encrypted_push_registration', 'INVALID_ENCRYPTED_PUSH_REGISTRATION');
      // One device per token of an organization: the same registration again changes nothing.
      e2eeDevices.set(`${body.realm_uuid}:${body.token_id}`, { realm_uuid: body.realm_uuid, token_id: body.token_id, token: reg.token, token_kind: reg.token_kind, ios_app_id: reg.ios_app_id });
      return reply(200, { result: 'success', msg: '' });
    }
    if (endpoint === 'push/e2ee/notify') {
      calls.push({ endpoint, server: who, body });
      const requests = body.push_requests as Array<{ token_id: string; payload: { push_key_id: number | string; encrypted_data: string } }>;
      if (!Array.isArray(requests) || requests.some((r) => typeof r.token_id !== 'string')) return fail("Missing 'token_id' in push_requests");
      // A token the service does not know for the organization is for the server to forget (Zulip 12's delete_token_ids).
      const known = requests.map((r) => e2eeDevices.get(`${body.realm_uuid}:${r.token_id}`));
      const kinds = known.flatMap((d) => (d ? [d.token_kind] : []));
      const unknown = requests.filter((_r, i) => !known[i]).map((r) => r.token_id);
      return reply(200, { result: 'success', msg: '', android_successfully_sent_count: kinds.filter((k) => k === 'fcm').length, apple_successfully_sent_count: kinds.filter((k) => k === 'apns').length, delete_token_ids: [...new Set(unknown)] });
    }
    const user = body.user_id !== undefined ? String(body.user_id) : null;
    if (user === null && body.user_uuid === undefined) return fail('Missing user_id or user_uuid');
    calls.push({ endpoint, server: who, body });
    switch (endpoint) {
      case 'push/register': {
        const kind = Number(body.token_kind);
        if (kind !== 1 && kind !== 2) return fail('Invalid token type');
        if (kind === 1 && !body.ios_app_id) return fail('Missing ios_app_id');
        devices.add(`${user}:${kind}:${body.token}`);
        return reply(200, { result: 'success', msg: '' });
      }
      case 'push/unregister':
        if (!devices.delete(`${user}:${Number(body.token_kind)}:${body.token}`)) return fail('Token does not exist');
        return reply(200, { result: 'success', msg: '' });
      case 'push/test_notification':
        if (!devices.has(`${user}:${body.token_kind}:${body.token}`)) return fail('Device not recognized by the push bouncer', 'INVALID_REMOTE_PUSH_DEVICE_TOKEN');
        return reply(200, { result: 'success', msg: '' });
      case 'push/notify': {
        const mine = [...devices].filter((d) => d.startsWith(`${user}:`));
        return reply(200, {
          result: 'success',
          msg: '',
          total_android_devices: mine.filter((d) => d.split(':')[1] === '2').length,
          total_apple_devices: mine.filter((d) => d.split(':')[1] === '1').length,
          deleted_devices: { android_devices: [], apple_devices: [] },
          realm: null,
        });
      }
      default:
        return fail('Not found', 'BAD_REQUEST', 404);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  double = {
    url: `http://127.0.0.1:${port}`,
    uuid,
    key,
    calls,
    devices,
    bouncerPublicKey,
    e2eeDevices,
    of: (endpoint) => calls.filter((c) => c.endpoint === endpoint),
    async waitFor(pred, timeoutMs = 15_000) {
      const until = Date.now() + timeoutMs;
      while (!pred()) {
        if (Date.now() > until) throw new Error('push service: timed out waiting');
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
    down: false,
    refused: 0,
  };
  return double;
}
