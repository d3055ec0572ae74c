/**
 * Check mode (`PARLEY_CHECK=1`, set by the test suites): every event is
 * validated against its strict schema where it is made, whether or not a
 * test polls it. A violation is logged and appended to
 * `PARLEY_VIOLATIONS_FILE`, which `test/run.sh` requires to be empty.
 */
import { appendFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { Delivery } from './delivery.ts';
import { ClientEvent } from './schema.ts';

export const CHECK = process.env.PARLEY_CHECK === '1';
const FILE = process.env.PARLEY_VIOLATIONS_FILE;

function violation(log: Logger, what: string, value: unknown, message: string): void {
  log.error({ what, message }, 'event breaks its schema');
  if (FILE) appendFileSync(FILE, `${JSON.stringify({ what, message, value, pid: process.pid })}\n`);
}

/** Validates a delivery as an action made it. */
export function checkDelivery(d: unknown, log: Logger): void {
  if (!CHECK) return;
  const r = Delivery.safeParse(d);
  if (!r.success) violation(log, 'delivery', d, r.error.message);
}

/** Validates an event as a queue is about to hold it (its JSON text, with its id). */
export function checkClientEvent(json: string, log: Logger): void {
  if (!CHECK) return;
  const value: unknown = JSON.parse(json);
  const r = ClientEvent.safeParse(value);
  if (!r.success) violation(log, 'client event', value, r.error.message);
}
