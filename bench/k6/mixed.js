// A realistic organization: most users sit in a long poll, a small share
// send, a few read history. Every account used is subscribed to one channel,
// so each message fans out to every poller's queue: delivery work grows with
// POLL_VUS × SEND_RATE.
//
//   k6 run -e PARLEY_ZULIPRC=owner.zuliprc,admin.zuliprc,member1.zuliprc \
//          -e POLL_VUS=500 -e SEND_RATE=20 -e READ_RATE=5 -e DURATION=2m bench/k6/mixed.js
//
// POLL_VUS (100), SEND_RATE (messages/s, 10), READ_RATE (history reads/s, 2),
// DURATION (60s), PARLEY_CHANNEL (k6-bench), thresholds LATENCY_P99_MS (1000),
// SEND_P99_MS (500), READ_P99_MS (500).
import { check } from 'k6';
import { Counter, Trend } from 'k6/metrics';
import { account, call, CHANNEL, LEAD_SECS, TAIL_SECS, seconds, ok, pollOnce, stampedContent, subscribeAll, summary } from './lib.js';

const duration = __ENV.DURATION || '60s';
const sendRate = Number(__ENV.SEND_RATE || 10);
const readRate = Number(__ENV.READ_RATE ?? 2);

const latency = new Trend('event_latency', true);
const sendTime = new Trend('send_duration', true);
const readTime = new Trend('read_duration', true);
const received = new Counter('events_received');
const heartbeats = new Counter('heartbeats');
const reregistered = new Counter('queue_reregistrations');
const sent = new Counter('messages_sent');

const scenarios = {
  pollers: { executor: 'constant-vus', vus: Number(__ENV.POLL_VUS || 100), duration: `${seconds(duration) + LEAD_SECS + TAIL_SECS}s`, exec: 'pollLoop', gracefulStop: '5s' },
  senders: { executor: 'constant-arrival-rate', rate: sendRate, timeUnit: '1s', duration, startTime: `${LEAD_SECS}s`, preAllocatedVUs: Math.ceil(sendRate / 20) + 2, maxVUs: sendRate + 20, exec: 'send' },
};
if (readRate > 0) {
  scenarios.readers = { executor: 'constant-arrival-rate', rate: readRate, timeUnit: '1s', duration, startTime: `${LEAD_SECS}s`, preAllocatedVUs: 2, maxVUs: readRate + 10, exec: 'read' };
}

export const options = {
  scenarios,
  thresholds: {
    event_latency: [`p(99)<${Number(__ENV.LATENCY_P99_MS || 1000)}`],
    send_duration: [`p(99)<${Number(__ENV.SEND_P99_MS || 500)}`],
    'http_req_failed{name:send}': ['rate<0.01'],
    'http_req_failed{name:events}': ['rate<0.01'],
    events_received: ['count>0'],
    ...(readRate > 0 ? { read_duration: [`p(99)<${Number(__ENV.READ_P99_MS || 500)}`] } : {}),
  },
  summaryTrendStats: ['med', 'p(95)', 'p(99)', 'max', 'count'],
};

export function setup() {
  subscribeAll();
}

export function pollLoop() {
  pollOnce(account(__VU), { latency, received, heartbeats, reregistered });
}

export function send() {
  const res = call(account(__VU), 'POST', '/messages', { type: 'stream', to: CHANNEL, topic: 'k6 mixed', content: stampedContent('k6 mixed') }, { name: 'send' });
  if (check(res, { 'message sent': ok })) {
    sent.add(1);
    sendTime.add(res.timings.duration);
  }
}

export function read() {
  const res = call(account(__VU), 'GET', '/messages', { anchor: 'newest', num_before: 50, num_after: 0, narrow: [{ operator: 'channel', operand: CHANNEL }] }, { name: 'read' });
  if (check(res, { 'history read': ok })) readTime.add(res.timings.duration);
}

export const handleSummary = summary('mixed.js', [
  ['delivery latency (event_latency)', 'event_latency'],
  ['POST /messages (send_duration)', 'send_duration'],
  ['GET /messages (read_duration)', 'read_duration'],
]);
