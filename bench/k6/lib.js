// Shared helpers for Parley's k6 scripts: where the server is, who we are,
// how to call the Zulip-style API, and a compact end-of-test summary.
//
// Configuration (environment variables, passed with `k6 run -e NAME=value` or exported):
//   PARLEY_URL       base URL of the deployment, e.g. https://chat.example.com
//   PARLEY_EMAIL     API email (bot or user)
//   PARLEY_API_KEY   API key
//   PARLEY_ZULIPRC   instead of the three above: a zuliprc file ([api] email=, key=, site=);
//                    several, comma-separated, spread the virtual users over several accounts
import { check } from 'k6';
import http from 'k6/http';
import encoding from 'k6/encoding';

function parseZuliprc(text, path) {
  const get = (k) => {
    const m = new RegExp(`^\\s*${k}\\s*=\\s*(.*?)\\s*$`, 'm').exec(text);
    return m ? m[1] : undefined;
  };
  const c = { email: get('email'), apiKey: get('key'), site: get('site') };
  if (!c.email || !c.apiKey) throw new Error(`${path}: needs email= and key= under [api]`);
  return c;
}

function loadAccounts() {
  if (__ENV.PARLEY_ZULIPRC) {
    return __ENV.PARLEY_ZULIPRC.split(',').map((p) => {
      const path = p.trim();
      // open() resolves relative paths against the script; resolve them against the working directory instead.
      const abs = path.startsWith('/') ? path : `${__ENV.PWD || '.'}/${path}`;
      return parseZuliprc(open(abs), path);
    });
  }
  if (!__ENV.PARLEY_EMAIL || !__ENV.PARLEY_API_KEY) {
    throw new Error('set PARLEY_URL, PARLEY_EMAIL and PARLEY_API_KEY, or PARLEY_ZULIPRC=path/to/zuliprc');
  }
  return [{ email: __ENV.PARLEY_EMAIL, apiKey: __ENV.PARLEY_API_KEY, site: __ENV.PARLEY_URL }];
}

// open() is only allowed in the init context: read credentials once, here.
export const ACCOUNTS = loadAccounts();
export const BASE = (__ENV.PARLEY_URL || ACCOUNTS[0].site || '').replace(/\/+$/, '');
if (!BASE) throw new Error('no server: set PARLEY_URL or put site= in the zuliprc');
export const CHANNEL = __ENV.PARLEY_CHANNEL || 'k6-bench';

/** Seconds in a k6 duration string ("90s", "2m", "1h30m"). */
export function seconds(d) {
  let total = 0;
  for (const [, n, unit] of String(d).matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) total += Number(n) * { ms: 0.001, s: 1, m: 60, h: 3600 }[unit];
  return total;
}

/** Pollers start first and stop last, so every message sent in between is counted. */
export const LEAD_SECS = Number(__ENV.LEAD_SECS || 3);
export const TAIL_SECS = Number(__ENV.TAIL_SECS || 2);

/** The account a virtual user acts as (VUs are spread round-robin). */
export function account(vu) {
  return ACCOUNTS[(vu - 1 + ACCOUNTS.length) % ACCOUNTS.length];
}

function authHeader(acct) {
  return `Basic ${encoding.b64encode(`${acct.email}:${acct.apiKey}`)}`;
}

function form(params) {
  return Object.entries(params)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(typeof v === 'string' ? v : JSON.stringify(v))}`)
    .join('&');
}

/** Calls /api/v1<path>. `name` tags the request so thresholds can target one endpoint. */
export function call(acct, method, path, params = {}, opts = {}) {
  const headers = { Authorization: authHeader(acct), 'User-Agent': 'parley-k6' };
  const tags = { name: opts.name || `${method} ${path}` };
  const timeout = opts.timeout || '60s';
  const body = form(params);
  let res;
  if (method === 'GET') {
    res = http.get(`${BASE}/api/v1${path}${body ? `?${body}` : ''}`, { headers, tags, timeout });
  } else {
    headers['Content-Type'] = 'application/x-www-form-urlencoded';
    res = http.request(method, `${BASE}/api/v1${path}`, body, { headers, tags, timeout });
  }
  return res;
}

export function ok(res) {
  if (res.status !== 200) return false;
  try {
    return res.json('result') === 'success';
  } catch (e) {
    return false;
  }
}

/** Subscribes every configured account to the bench channel (creates it if needed). */
export function subscribeAll() {
  for (const acct of ACCOUNTS) {
    const res = call(acct, 'POST', '/users/me/subscriptions', { subscriptions: [{ name: CHANNEL }] }, { name: 'subscribe' });
    if (!ok(res)) throw new Error(`subscribe ${acct.email} to ${CHANNEL}: ${res.status} ${res.body}`);
  }
}

/** Message content that carries its send time, so receivers can measure delivery latency. */
export function stampedContent(label) {
  return `${label} t=${Date.now()}`;
}

/** Delivery latency of a received message event, or null if it carries no send time. */
export function latencyOf(event, now) {
  if (event.type !== 'message' || !event.message) return null;
  const m = /t=(\d+(?:\.\d+)?)/.exec(event.message.content || '');
  return m ? now - Number(m[1]) : null;
}

/** Registers an event queue for messages. Returns {queueId, lastEventId} or null. */
export function register(acct) {
  const res = call(acct, 'POST', '/register', { event_types: ['message'] }, { name: 'register' });
  if (!ok(res)) return null;
  return { queueId: res.json('queue_id'), lastEventId: res.json('last_event_id') };
}

/**
 * One long poll. Returns {events, badQueue}; `badQueue` means the server no
 * longer knows the queue (restart, idle timeout) and the caller must register again.
 */
export function poll(acct, q) {
  const res = call(acct, 'GET', '/events', { queue_id: q.queueId, last_event_id: q.lastEventId, dont_block: false }, { name: 'events', timeout: '120s' });
  if (res.status === 200) {
    const events = res.json('events') || [];
    for (const e of events) if (e.id > q.lastEventId) q.lastEventId = e.id;
    return { events, badQueue: false, ok: true };
  }
  let code = '';
  try {
    code = res.json('code');
  } catch (e) {
    // not JSON
  }
  return { events: [], badQueue: code === 'BAD_EVENT_QUEUE_ID', ok: false };
}

// ---- summary ------------------------------------------------------------------

function trendLine(name, m) {
  if (!m || !m.values) return null;
  const v = m.values;
  const f = (x) => (x === undefined ? 'n/a' : `${x.toFixed(x < 10 ? 2 : 0)} ms`);
  return `  ${name.padEnd(34)} p50 ${f(v.med).padStart(9)}  p95 ${f(v['p(95)']).padStart(9)}  p99 ${f(v['p(99)']).padStart(9)}  max ${f(v.max).padStart(9)}  n=${v.count ?? ''}`;
}

/**
 * handleSummary: p50/p95/p99 per endpoint and for delivery latency, request
 * rate, threshold results; writes the full k6 summary as JSON to SUMMARY_JSON if set.
 */
export function summary(title, trends) {
  return (data) => {
    const m = data.metrics;
    const lines = [`\n${title} against ${BASE} (${ACCOUNTS.length} account(s))`];
    const dur = data.state ? data.state.testRunDurationMs / 1000 : 0;
    if (m.http_reqs) lines.push(`  requests: ${m.http_reqs.values.count} in ${dur.toFixed(1)} s = ${m.http_reqs.values.rate.toFixed(1)} req/s`);
    if (m.http_req_failed) lines.push(`  failed requests: ${(m.http_req_failed.values.rate * 100).toFixed(2)}%`);
    for (const [label, key] of trends) {
      const l = trendLine(label, m[key]);
      if (l) lines.push(l);
    }
    for (const [key, label] of [['messages_sent', 'messages sent'], ['events_received', 'message events received'], ['heartbeats', 'heartbeats'], ['queue_reregistrations', 're-registrations']]) {
      if (m[key]) lines.push(`  ${label}: ${m[key].values.count} (${m[key].values.rate.toFixed(1)}/s)`);
    }
    const failed = [];
    for (const [name, metric] of Object.entries(m)) {
      for (const [th, res] of Object.entries(metric.thresholds || {})) {
        lines.push(`  threshold ${name} ${th}: ${res.ok ? 'PASS' : 'FAIL'}`);
        if (!res.ok) failed.push(name);
      }
    }
    lines.push(failed.length ? `  RESULT: thresholds failed (${failed.join(', ')})` : '  RESULT: all thresholds passed');
    const out = { stdout: `${lines.join('\n')}\n` };
    if (__ENV.SUMMARY_JSON) out[__ENV.SUMMARY_JSON] = JSON.stringify(data, null, 2);
    return out;
  };
}

// This VU's event queue (each VU is its own JavaScript runtime).
let vuQueue = null;

/**
 * One long poll for this VU: registers a queue on first use and again after
 * BAD_EVENT_QUEUE_ID, and records delivery latency, messages and heartbeats
 * into the given metrics.
 */
export function pollOnce(acct, m) {
  if (!vuQueue) {
    vuQueue = register(acct);
    if (!check(vuQueue, { 'queue registered': (q) => q !== null })) return;
  }
  const r = poll(acct, vuQueue);
  if (r.badQueue) {
    m.reregistered.add(1);
    vuQueue = null;
    return;
  }
  const now = Date.now();
  for (const e of r.events) {
    if (e.type === 'heartbeat') m.heartbeats.add(1);
    const l = latencyOf(e, now);
    if (l !== null) {
      m.latency.add(l);
      m.received.add(1);
    }
  }
}
