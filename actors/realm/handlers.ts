/**
 * Every message the realm actor takes, by type: each area of actions/ lists its own handlers
 * (actions/<area>/handlers.ts), and a name taken by two areas stops the process at start.
 */
import { channelsHandlers } from './actions/channels/handlers.ts';
import { messagesHandlers } from './actions/messages/handlers.ts';
import { notificationsHandlers } from './actions/notifications/handlers.ts';
import { organizationHandlers } from './actions/organization/handlers.ts';
import { peopleHandlers } from './actions/people/handlers.ts';

type Intersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;

function merged<T extends object[]>(...tables: T): Intersection<T[number]> {
  const all: Record<string, unknown> = {};
  for (const table of tables) {
    for (const [name, handler] of Object.entries(table)) {
      if (name in all) throw new Error(`realm handler ${name} is defined by two areas`);
      all[name] = handler;
    }
  }
  return all as Intersection<T[number]>;
}

export const realmHandlers = merged(channelsHandlers, messagesHandlers, notificationsHandlers, organizationHandlers, peopleHandlers);
