// Send load: POST /messages to one channel, at a fixed arrival rate or with
// a fixed number of virtual users sending back to back.
//
//   k6 run -e PARLEY_ZULIPRC=~/.zuliprc -e RATE=200 -e DURATION=60s bench/k6/send.js
//   k6 run -e PARLEY_URL=https://chat.example.com -e PARLEY_EMAIL=bot@example.com \
//          -e PARLEY_API_KEY=... -e VUS=50 bench/k6/send.js
//
// RATE (messages/s, open loop; default) or VUS (closed loop), DURATION (30s),
// PARLEY_CHANNEL (k6-bench), SEND_P99_MS threshold (500), MAX_VUS (RATE/5+50).
import { check } from 'k6';
import { Counter, Trend } from 'k6/metrics';
import { account, call, CHANNEL, ok, stampedContent, subscribeAll, summary } from './lib.js';

const duration = __ENV.DURATION || '30s';
const rate = Number(__ENV.RATE || (__ENV.VUS ? 0 : 50));
const p99 = Number(__ENV.SEND_P99_MS || 500);

const sendTime = new Trend('send_duration', true);
const sent = new Counter('messages_sent');

export const options = {
  scenarios: {
    send: rate > 0
      ? { executor: 'constant-arrival-rate', rate, timeUnit: '1s', duration, preAllocatedVUs: Math.min(200, Math.ceil(rate / 10) + 5), maxVUs: Number(__ENV.MAX_VUS || Math.ceil(rate / 5) + 50) }
      : { executor: 'constant-vus', vus: Number(__ENV.VUS), duration },
  },
  thresholds: {
    'http_req_failed{name:send}': ['rate<0.01'],
    send_duration: [`p(99)<${p99}`],
  },
  summaryTrendStats: ['med', 'p(95)', 'p(99)', 'max', 'count'],
};

export function setup() {
  subscribeAll();
}

export default function () {
  const res = call(account(__VU), 'POST', '/messages', { type: 'stream', to: CHANNEL, topic: 'k6 send', content: stampedContent('k6 send') }, { name: 'send' });
  if (check(res, { 'message sent': ok })) {
    sent.add(1);
    sendTime.add(res.timings.duration);
  }
}

export const handleSummary = summary('send.js', [['POST /messages (send_duration)', 'send_duration']]);
