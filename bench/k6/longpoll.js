// Long-poll load: each virtual user registers an event queue and long-polls
// it (GET /events) in a loop, measuring each message's delivery latency as
// now minus the send time the sender put in the content (`t=<ms>`; the
// senders here and in send.js/mixed.js do). Sender and receiver are the same
// k6 process, so one clock measures both ends, whatever the deployment.
//
//   k6 run -e PARLEY_ZULIPRC=owner.zuliprc,member1.zuliprc -e VUS=200 -e DURATION=60s bench/k6/longpoll.js
//
// VUS (pollers, 50), DURATION (30s), SEND_RATE (messages/s sent by this script
// so it measures something on its own, 2; 0 = rely on another sender),
// PARLEY_CHANNEL (k6-bench), LATENCY_P99_MS threshold (1000).
import { check } from 'k6';
import { Counter, Trend } from 'k6/metrics';
import { account, call, CHANNEL, LEAD_SECS, TAIL_SECS, seconds, ok, pollOnce, stampedContent, subscribeAll, summary } from './lib.js';

const duration = __ENV.DURATION || '30s';
const sendRate = Number(__ENV.SEND_RATE ?? 2);
const latencyP99 = Number(__ENV.LATENCY_P99_MS || 1000);

const latency = new Trend('event_latency', true);
const received = new Counter('events_received');
const heartbeats = new Counter('heartbeats');
const reregistered = new Counter('queue_reregistrations');
const sent = new Counter('messages_sent');

const scenarios = {
  pollers: { executor: 'constant-vus', vus: Number(__ENV.VUS || 50), duration: `${seconds(duration) + LEAD_SECS + TAIL_SECS}s`, exec: 'pollLoop', gracefulStop: '5s' },
};
if (sendRate > 0) {
  // Starts after every poller has registered and ends before they stop.
  scenarios.sender = { executor: 'constant-arrival-rate', rate: sendRate, timeUnit: '1s', duration, startTime: `${LEAD_SECS}s`, preAllocatedVUs: 2, maxVUs: 20, exec: 'send' };
}

export const options = {
  scenarios,
  thresholds: {
    event_latency: [`p(99)<${latencyP99}`],
    'http_req_failed{name:events}': ['rate<0.01'],
    events_received: ['count>0'],
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
  const res = call(account(__VU), 'POST', '/messages', { type: 'stream', to: CHANNEL, topic: 'k6 longpoll', content: stampedContent('k6 longpoll') }, { name: 'send' });
  if (check(res, { 'message sent': ok })) sent.add(1);
}

export const handleSummary = summary('longpoll.js', [['delivery latency (event_latency)', 'event_latency'], ['POST /messages', 'http_req_duration{name:send}']]);
