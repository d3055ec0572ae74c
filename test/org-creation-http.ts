/**
 * Requests with the `Host` a browser sends for an organization's address
 * (`acme.localhost:PORT`) to a gateway on the loopback address: fetch cannot
 * set `Host`, so this goes through node:http. Form-encoded like the Python
 * client; the body parsed as JSON when it is JSON (an API reply), else the
 * text (a page).
 */
import { request } from 'node:http';
import { type Creds, encodeValue, type Params } from './helpers/api.ts';

export interface HostReply {
  status: number;
  body: any;
}

/** `method path` at the gateway `base` (http://127.0.0.1:PORT), as the organization at `sub` of `localhost` (the root for ''). */
export function atHost(base: string, sub: string, method: string, path: string, params: Params = {}, creds?: Creds): Promise<HostReply> {
  const url = new URL(base);
  const form = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined).map(([k, v]) => [k, encodeValue(v)]));
  const query = method === 'GET' && Object.keys(params).length ? `?${form}` : '';
  const body = method === 'GET' ? '' : form.toString();
  const headers: Record<string, string> = { host: `${sub ? `${sub}.` : ''}localhost:${url.port}`, 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(Buffer.byteLength(body)) };
  if (creds) headers.authorization = `Basic ${Buffer.from(`${creds.email}:${creds.apiKey}`).toString('base64')}`;
  return new Promise((res, rej) => {
    const req = request({ host: url.hostname, port: url.port, method, path: `${path}${query}`, headers }, (r) => {
      let text = '';
      r.on('data', (d: Buffer) => (text += d.toString()));
      r.on('end', () => {
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          // A page: its HTML as it is.
        }
        res({ status: r.statusCode!, body: parsed });
      });
    });
    req.on('error', rej);
    req.end(body);
  });
}
