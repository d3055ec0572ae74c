// "A working day" of a large organization (issue 20), compressed in time,
// against any deployment. Each active user is one virtual user that does
// what a client left open all day does:
//
//   - holds a long poll (GET /events) on its own event queue, on one of the
//     gateways (GATEWAYS, spread round-robin), and measures the delivery
//     latency of every stamped message it receives;
//   - reports its presence every 60 s / SCALE (POST /users/me/presence, as
//     the web app: the first with last_update_id=-1, then echoing the
//     server's presence_last_update_id);
//   - now and then (Poisson, per-hour rates × SCALE) starts typing, sends to
//     a small channel, sends a direct message to another active user, and
//     reads a channel's history.
//
// Besides them: BIG_RATE messages/s to the big channel (not scaled: it is
// the issue's 10 messages/s), and at the middle of the day a burst of
// BURST registers as a deploy's reconnect storm (clients registering again
// with the web app's modern parameters).
//
//   k6 run -e USERS_FILE=/path/keys.csv -e PARLEY_URL=http://127.0.0.1:9991 \
//          -e ACTIVE=1000 -e DURATION=2m -e SCALE=10 bench/k6/workday.js
//
// Accounts: USERS_FILE, a CSV `email,user_id,api_key` with a header (what
// `npm run bench:generate` writes as keys.csv; the first ACTIVE rows are the
// active users, the burst registers as any row), or PARLEY_ZULIPRC (comma-
// separated zuliprc files; active users are spread over them round-robin,
// several queues per account). Credentials are read once into a SharedArray.
//
// Gates (Mattermost's load-test gates, on every request but the long polls):
// average ≤ 100 ms, p99 ≤ 2 s, 5xx ≤ 0.025% (a request that got no answer
// at all, status 0, counts as a 5xx); and the big channel's delivery p99 ≤
// 2 s (issue 20). Each threshold fails the run (exit code 99).
//
// Knobs (env): see the table in bench/k6/README.md.
import { check } from 'k6';
import { SharedArray } from 'k6/data';
import encoding from 'k6/encoding';
import exec from 'k6/execution';
import http from 'k6/http';
import { Counter, Rate, Trend } from 'k6/metrics';
import { setTimeout } from 'k6/timers';

const env = (k, d) => (__ENV[k] === undefined || __ENV[k] === '' ? d : __ENV[k]);
const num = (k, d) => Number(env(k, d));

/** Seconds in a k6 duration string ("90s", "2m", "1h30m"). */
function seconds(d) {
  let total = 0;
  for (const [, n, unit] of String(d).matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) total += Number(n) * { ms: 0.001, s: 1, m: 60, h: 3600 }[unit];
  return total;
}

function parseZuliprc(text, path) {
  const get = (k) => {
    const m = new RegExp(`^\\s*${k}\\s*=\\s*(.*?)\\s*$`, 'm').exec(text);
    return m ? m[1] : undefined;
  };
  const email = get('email');
  const key = get('key');
  if (!email || !key) throw new Error(`${path}: needs email= and key= under [api]`);
  return { email, userId: null, key, site: get('site') || '' };
}

const abs = (p) => (p.startsWith('/') ? p : `${__ENV.PWD || '.'}/${p}`);

const USERS = new SharedArray('users', () => {
  if (__ENV.USERS_FILE) {
    const lines = open(abs(__ENV.USERS_FILE)).split('\n');
    const header = lines[0].split(',').map((s) => s.trim());
    const [ie, ii, ik] = ['email', 'user_id', 'api_key'].map((h) => header.indexOf(h));
    if (ie < 0 || ik < 0) throw new Error(`${__ENV.USERS_FILE}: needs a header with email and api_key (and user_id)`);
    const out = [];
    for (const line of lines.slice(1)) {
      if (!line.trim()) continue;
      const f = line.split(',');
      out.push({ email: f[ie], userId: ii >= 0 ? Number(f[ii]) : null, key: f[ik], site: '' });
    }
    return out;
  }
  if (__ENV.PARLEY_ZULIPRC) return __ENV.PARLEY_ZULIPRC.split(',').map((p) => parseZuliprc(open(abs(p.trim())), p.trim()));
  throw new Error('set USERS_FILE=keys.csv (email,user_id,api_key) or PARLEY_ZULIPRC=a.zuliprc,b.zuliprc');
});

const GATEWAYS = env('GATEWAYS', env('PARLEY_URL', USERS[0].site))
  .split(',')
  .map((u) => u.trim().replace(/\/+$/, ''))
  .filter(Boolean);
if (GATEWAYS.length === 0) throw new Error('no server: set PARLEY_URL or GATEWAYS=url1,url2');

const ACTIVE = Math.max(1, num('ACTIVE', Math.min(1000, USERS.length)));
const DURATION = seconds(env('DURATION', '2m'));
/** Time compression: presence every 60 / SCALE s, per-user rates × SCALE. */
const SCALE = num('SCALE', 10);
/** Active users register over this long before the day starts (spread, not a storm), and poll this long after it. */
const LEAD = num('LEAD_SECS', Math.min(60, Math.max(5, ACTIVE / 100)));
const TAIL = num('TAIL_SECS', 3);
const PRESENCE_SECS = 60 / SCALE;
// Per active user per real hour (before SCALE).
const RATES = {
  typing: num('TYPING_PER_HOUR', 20),
  small: num('SMALL_PER_HOUR', 4),
  dm: num('DM_PER_HOUR', 6),
  read: num('READS_PER_HOUR', 10),
};
const BIG_CHANNEL = env('BIG_CHANNEL', 'everyone-big');
const BIG_RATE = num('BIG_RATE', 10);
const BURST = num('BURST', Math.min(ACTIVE, 1000));
const BURST_VUS = num('BURST_VUS', Math.min(BURST, 200));
const BURST_AT = num('BURST_AT_SECS', LEAD + DURATION / 2);
/** Event types the active users' queues ask for (the big channel's traffic comes through `message`). */
const EVENT_TYPES = env('EVENT_TYPES', 'message,typing,presence').split(',');

const apiLatency = new Trend('api_duration', true);
const serverErrors = new Rate('server_errors');
const delivery = new Trend('delivery_latency', true);
const bigDelivery = new Trend('big_delivery_latency', true);
const dmDelivery = new Trend('dm_delivery_latency', true);
const received = new Counter('events_received');
const typingEvents = new Counter('typing_events');
const presenceEvents = new Counter('presence_events');
const reregistered = new Counter('queue_reregistrations');
const sent = new Counter('messages_sent');
/** Latency by endpoint (the `name` of each call), for the summary. */
const ENDPOINTS = ['presence', 'typing', 'send small', 'send dm', 'send big', 'read history', 'register', 'burst register', 'delete queue'];
const byName = Object.fromEntries(ENDPOINTS.map((n) => [n, new Trend(`${n.replace(/ /g, '_')}_duration`, true)]));

const dayEnd = LEAD + DURATION;
export const options = {
  scenarios: {
    users: { executor: 'per-vu-iterations', vus: ACTIVE, iterations: 1, maxDuration: `${Math.ceil(dayEnd + TAIL + 5)}s`, gracefulStop: '70s', exec: 'activeUser' },
    ...(BIG_RATE > 0
      ? { big: { executor: 'constant-arrival-rate', rate: BIG_RATE, timeUnit: '1s', duration: `${DURATION}s`, startTime: `${LEAD}s`, preAllocatedVUs: Math.ceil(BIG_RATE / 5) + 2, maxVUs: BIG_RATE * 4 + 20, exec: 'bigSend' } }
      : {}),
    ...(BURST > 0 ? { burst: { executor: 'shared-iterations', vus: BURST_VUS, iterations: BURST, startTime: `${BURST_AT}s`, maxDuration: `${Math.max(30, DURATION)}s`, exec: 'reconnect' } } : {}),
  },
  setupTimeout: '300s',
  thresholds: {
    // Mattermost's gates, on every request but the held polls.
    api_duration: ['avg<=100', 'p(99)<=2000'],
    server_errors: ['rate<=0.00025'],
    // Issue 20: a message to the big channel answers the held polls of its subscribers within 2 s (p99).
    ...(BIG_RATE > 0 ? { big_delivery_latency: [`p(99)<=${num('BIG_DELIVERY_P99_MS', 2000)}`] } : {}),
    events_received: ['count>0'],
  },
  summaryTrendStats: ['avg', 'med', 'p(95)', 'p(99)', 'max', 'count'],
};

// ---- calls ---------------------------------------------------------------------

function form(params) {
  return Object.entries(params)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(typeof v === 'string' ? v : JSON.stringify(v))}`)
    .join('&');
}

function timed(name, res) {
  apiLatency.add(res.timings.duration, { name });
  byName[name].add(res.timings.duration);
}

const authOf = (u) => `Basic ${encoding.b64encode(`${u.email}:${u.key}`)}`;

/** One API call (async). `name` tags it; every call but the long poll counts towards the gates. */
async function call(u, gw, method, path, params, name, opts = {}) {
  const headers = { Authorization: authOf(u), 'User-Agent': 'parley-k6-workday' };
  const body = form(params || {});
  const o = { headers, tags: { name }, timeout: opts.timeout || '60s', responseType: opts.responseType || 'text' };
  let res;
  if (method === 'GET') res = await http.asyncRequest('GET', `${gw}/api/v1${path}${body ? `?${body}` : ''}`, null, o);
  else {
    headers['Content-Type'] = 'application/x-www-form-urlencoded';
    res = await http.asyncRequest(method, `${gw}/api/v1${path}`, body, o);
  }
  serverErrors.add(res.status === 0 || res.status >= 500, { name });
  if (!opts.poll) timed(name, res);
  return res;
}

const success = (res) => {
  if (res.status !== 200) return false;
  try {
    return res.json('result') === 'success';
  } catch (e) {
    return false;
  }
};

const sleepMs = (ms) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
/** Exponential wait for a Poisson process of `perSec` events per second, in ms. */
const expWait = (perSec) => (-Math.log(1 - Math.random()) / perSec) * 1000;

/** A channel index skewed to the first (largest) channels, as the generator's history is. */
const skewed = (n) => Math.min(n - 1, Math.floor(n * Math.random() ** 3));

// ---- setup: the channels, and who each active user is --------------------------

export function setup() {
  const u = USERS[0];
  const res = http.get(`${GATEWAYS[0]}/api/v1/streams`, { headers: { Authorization: authOf(u) }, timeout: '120s' });
  if (res.status !== 200) throw new Error(`GET /streams as ${u.email}: ${res.status} ${res.body && res.body.slice(0, 300)}`);
  const all = res.json('streams').filter((s) => !s.invite_only);
  const big = all.find((s) => s.name === BIG_CHANNEL);
  if (BIG_RATE > 0 && !big) throw new Error(`no public channel named ${BIG_CHANNEL} (set BIG_CHANNEL, or BIG_RATE=0)`);
  // Small channels: the others, fewest subscribers last; a deployment of a few channels uses what it has.
  const small = all.filter((s) => s.name !== BIG_CHANNEL).map((s) => ({ id: s.stream_id, name: s.name }));
  if (small.length === 0 && big) small.push({ id: big.stream_id, name: big.name });
  // User IDs the users file lacks (zuliprc accounts): asked once each.
  const ids = [];
  for (let i = 0; i < Math.min(ACTIVE, USERS.length); i++) {
    if (USERS[i].userId) ids.push(USERS[i].userId);
    else {
      const me = http.get(`${GATEWAYS[0]}/api/v1/users/me`, { headers: { Authorization: authOf(USERS[i]) } });
      ids.push(me.json('user_id'));
    }
  }
  return { small, big: big ? big.name : null, ids, t0: Date.now() };
}

// ---- an active user's day --------------------------------------------------------

function record(events, now, q) {
  for (const e of events) {
    if (e.id > q.lastEventId) q.lastEventId = e.id;
    if (e.type === 'typing') typingEvents.add(1);
    else if (e.type === 'presence') presenceEvents.add(1);
    if (e.type !== 'message' || !e.message) continue;
    const m = /t=(\d+)/.exec(e.message.content || '');
    if (!m) continue;
    const l = now - Number(m[1]);
    received.add(1);
    delivery.add(l);
    if (e.message.type === 'private') dmDelivery.add(l);
    else if (e.message.display_recipient === BIG_CHANNEL) bigDelivery.add(l);
  }
}

async function register(u, gw) {
  const res = await call(u, gw, 'POST', '/register', { event_types: EVENT_TYPES, slim_presence: true, client_capabilities: { notification_settings_null: true, bulk_message_deletion: true, user_avatar_url_field_optional: true, stream_typing_notifications: true, user_settings_object: true, simplified_presence_events: true } }, 'register');
  if (!check(res, { 'queue registered': success })) return null;
  return { queueId: res.json('queue_id'), lastEventId: res.json('last_event_id') };
}

async function pollLoop(u, gw, until) {
  let q = null;
  while (Date.now() < until) {
    if (!q) {
      q = await register(u, gw);
      if (!q) {
        await sleepMs(1000);
        continue;
      }
    }
    const res = await call(u, gw, 'GET', '/events', { queue_id: q.queueId, last_event_id: q.lastEventId }, 'events', { poll: true, timeout: '120s' });
    if (res.status === 200) record(res.json('events') || [], Date.now(), q);
    else {
      let code = '';
      try {
        code = res.json('code');
      } catch (e) {
        // not JSON
      }
      if (code === 'BAD_EVENT_QUEUE_ID') {
        reregistered.add(1);
        q = null;
      } else await sleepMs(1000);
    }
  }
  if (q) await call(u, gw, 'DELETE', '/events', { queue_id: q.queueId }, 'delete queue');
}

async function presenceLoop(u, gw, start, end) {
  let lastUpdateId = -1;
  // A random phase: users' pings are spread over the period, as real clients' are.
  await sleepMs(start - Date.now() + Math.random() * PRESENCE_SECS * 1000);
  while (Date.now() < end) {
    const due = Date.now() + PRESENCE_SECS * 1000;
    const res = await call(u, gw, 'POST', '/users/me/presence', { status: 'active', new_user_input: 'true', last_update_id: String(lastUpdateId) }, 'presence');
    if (check(res, { 'presence reported': success })) {
      // Only the head of the reply is needed; the presences follow it.
      const m = /"presence_last_update_id":(-?\d+)/.exec(res.body || '');
      if (m) lastUpdateId = Number(m[1]);
    }
    await sleepMs(due - Date.now());
  }
}

async function chatter(u, gw, me, data, start, end) {
  const perSec = {};
  let total = 0;
  for (const [k, perHour] of Object.entries(RATES)) total += perSec[k] = (perHour * SCALE) / 3600;
  if (total <= 0) return;
  await sleepMs(start - Date.now());
  for (;;) {
    await sleepMs(expWait(total));
    if (Date.now() >= end) return;
    let r = Math.random() * total;
    let what = 'read';
    for (const [k, v] of Object.entries(perSec)) {
      if (r < v) {
        what = k;
        break;
      }
      r -= v;
    }
    const ch = data.small[skewed(data.small.length)];
    const peer = data.ids[Math.floor(Math.random() * data.ids.length)];
    if (what === 'typing') {
      const p = Math.random() < 0.5 ? { type: 'stream', op: 'start', stream_id: ch.id, topic: 'workday' } : { type: 'direct', op: 'start', to: [peer] };
      check(await call(u, gw, 'POST', '/typing', p, 'typing'), { 'typing sent': success });
    } else if (what === 'small') {
      const res = await call(u, gw, 'POST', '/messages', { type: 'stream', to: ch.name, topic: `workday ${Math.floor(Math.random() * 20)}`, content: `small t=${Date.now()}` }, 'send small');
      if (check(res, { 'message sent': success })) sent.add(1);
    } else if (what === 'dm') {
      const res = await call(u, gw, 'POST', '/messages', { type: 'direct', to: [peer === me ? data.ids[0] : peer], content: `dm t=${Date.now()}` }, 'send dm');
      if (check(res, { 'direct message sent': success })) sent.add(1);
    } else {
      const res = await call(u, gw, 'GET', '/messages', { anchor: 'newest', num_before: 50, num_after: 0, narrow: [{ operator: 'channel', operand: ch.name }], apply_markdown: 'true' }, 'read history');
      check(res, { 'history read': success });
    }
  }
}

export async function activeUser(data) {
  const i = exec.scenario.iterationInTest;
  const u = USERS[i % USERS.length];
  const gw = GATEWAYS[i % GATEWAYS.length];
  const dayStart = data.t0 + LEAD * 1000;
  const dayStop = data.t0 + dayEnd * 1000;
  // Connect at a random moment of the lead, not all at once.
  await sleepMs(Math.random() * (LEAD - 1) * 1000 - (Date.now() - data.t0));
  await Promise.all([pollLoop(u, gw, dayStop + TAIL * 1000), presenceLoop(u, gw, dayStart, dayStop), chatter(u, gw, data.ids[i % data.ids.length], data, dayStart, dayStop)]);
}

// ---- the big channel and the reconnect storm --------------------------------------

export function bigSend(data) {
  const i = Math.floor(Math.random() * Math.min(ACTIVE, USERS.length));
  const res = http.post(`${GATEWAYS[i % GATEWAYS.length]}/api/v1/messages`, form({ type: 'stream', to: data.big, topic: 'all hands', content: `big t=${Date.now()}` }), {
    headers: { Authorization: authOf(USERS[i]), 'Content-Type': 'application/x-www-form-urlencoded' },
    tags: { name: 'send big' },
    timeout: '60s',
  });
  serverErrors.add(res.status === 0 || res.status >= 500, { name: 'send big' });
  timed('send big', res);
  if (check(res, { 'big message sent': success })) sent.add(1);
}

/** A client reconnecting after a deploy: a full register as the web app makes it, then its queue is dropped again. */
export function reconnect() {
  const i = exec.scenario.iterationInTest;
  const u = USERS[i % USERS.length];
  const gw = GATEWAYS[i % GATEWAYS.length];
  const params = {
    apply_markdown: 'true',
    client_gravatar: 'true',
    slim_presence: 'true',
    include_subscribers: 'partial',
    client_capabilities: { notification_settings_null: true, bulk_message_deletion: true, user_avatar_url_field_optional: true, stream_typing_notifications: true, user_settings_object: true, linkifier_url_template: true, user_list_incomplete: true, include_deactivated_groups: true, archived_channels: true, empty_topic_name: true, simplified_presence_events: true },
  };
  const res = http.post(`${gw}/api/v1/register`, form(params), { headers: { Authorization: authOf(u), 'Content-Type': 'application/x-www-form-urlencoded' }, tags: { name: 'burst register' }, timeout: '120s', responseType: 'none' });
  serverErrors.add(res.status === 0 || res.status >= 500, { name: 'burst register' });
  timed('burst register', res);
  check(res, { 'burst register answered 200': (r) => r.status === 200 });
}

// ---- summary ------------------------------------------------------------------------

function line(label, m) {
  if (!m || !m.values) return null;
  const v = m.values;
  const f = (x) => (x === undefined ? 'n/a' : `${x.toFixed(x < 10 ? 2 : 0)} ms`);
  return `  ${label.padEnd(30)} avg ${f(v.avg).padStart(9)}  p50 ${f(v.med).padStart(9)}  p99 ${f(v['p(99)']).padStart(9)}  max ${f(v.max).padStart(9)}  n=${v.count ?? ''}`;
}

export function handleSummary(data) {
  const m = data.metrics;
  const dur = data.state ? data.state.testRunDurationMs / 1000 : 0;
  const out = [`\nworkday.js against ${GATEWAYS.join(', ')}: ${ACTIVE} active users of ${USERS.length}, a ${DURATION} s day at ×${SCALE} (presence every ${PRESENCE_SECS.toFixed(1)} s), ${BIG_RATE} msg/s to ${BIG_CHANNEL}, burst of ${BURST} registers`];
  if (m.http_reqs) out.push(`  requests: ${m.http_reqs.values.count} in ${dur.toFixed(1)} s = ${m.http_reqs.values.rate.toFixed(1)} req/s`);
  if (m.server_errors) out.push(`  5xx or no answer: ${m.server_errors.values.passes} of ${m.server_errors.values.passes + m.server_errors.values.fails} (${(m.server_errors.values.rate * 100).toFixed(4)}%)`);
  for (const [label, key] of [
    ['every API call (gates)', 'api_duration'],
    ...ENDPOINTS.map((n) => [n === 'register' ? 'register (active users)' : n, `${n.replace(/ /g, '_')}_duration`]),
    ['delivery, all messages', 'delivery_latency'],
    ['delivery, big channel', 'big_delivery_latency'],
    ['delivery, direct', 'dm_delivery_latency'],
  ]) {
    const l = line(label, m[key]);
    if (l) out.push(l);
  }
  for (const [key, label] of [['messages_sent', 'messages sent'], ['events_received', 'stamped message events received'], ['typing_events', 'typing events'], ['presence_events', 'presence events'], ['queue_reregistrations', 're-registrations']]) {
    if (m[key]) out.push(`  ${label}: ${m[key].values.count}`);
  }
  const failed = [];
  for (const [name, metric] of Object.entries(m)) {
    for (const [th, res] of Object.entries(metric.thresholds || {})) {
      out.push(`  gate ${name} ${th}: ${res.ok ? 'PASS' : 'FAIL'}`);
      if (!res.ok) failed.push(name);
    }
  }
  out.push(failed.length ? `  RESULT: gates failed (${[...new Set(failed)].join(', ')})` : '  RESULT: every gate passed');
  const files = { stdout: `${out.join('\n')}\n` };
  if (__ENV.SUMMARY_JSON) files[__ENV.SUMMARY_JSON] = JSON.stringify(data, null, 2);
  return files;
}
