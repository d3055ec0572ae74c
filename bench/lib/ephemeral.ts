/**
 * Typing and presence traffic to run beside a send workload: each user sends
 * typing start/stop notices and presence pings at a steady rate, as active
 * clients do (far more often than real ones, to load the ephemeral actor).
 */
import { basicAuth } from './rawhttp.ts';
import type { Credentials } from './server.ts';

export interface EphemeralTraffic {
  stop(): Promise<{ sent: number; failed: number }>;
}

/** Starts `ratePerSec` requests per second, alternating typing notices and presence pings over `users`. */
export function startEphemeralTraffic(site: string, users: Credentials[], ratePerSec: number, recipientIds: number[]): EphemeralTraffic {
  let sent = 0;
  let failed = 0;
  let i = 0;
  const inFlight = new Set<Promise<void>>();
  const one = () => {
    const user = users[i % users.length]!;
    const typing = i % 2 === 0;
    const body = typing
      ? new URLSearchParams({ op: i % 4 === 0 ? 'start' : 'stop', to: JSON.stringify([recipientIds[i % recipientIds.length]]) })
      : new URLSearchParams({ status: 'active', ping_only: 'true' });
    i++;
    const p = fetch(`${site}/api/v1/${typing ? 'typing' : 'users/me/presence'}`, {
      method: 'POST',
      headers: { authorization: basicAuth(user.email, user.apiKey), 'content-type': 'application/x-www-form-urlencoded' },
      body,
    })
      .then(async (r) => {
        await r.arrayBuffer();
        if (r.ok) sent++;
        else failed++;
      })
      .catch(() => void failed++)
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
  };
  const tickMs = 10;
  let carry = 0;
  const timer = setInterval(() => {
    carry += (ratePerSec * tickMs) / 1000;
    for (; carry >= 1; carry--) if (inFlight.size < 256) one();
  }, tickMs);
  return {
    async stop() {
      clearInterval(timer);
      await Promise.all([...inFlight]);
      return { sent, failed };
    },
  };
}
