import { pino } from 'pino';

/** The process logger; children add `component` so lines say who wrote them. */
export const log = pino({
  level: process.env.PARLEY_LOG_LEVEL ?? 'info',
  base: { pid: process.pid, role: process.env.PARLEY_ROLE ?? 'all' },
});
