import type { Logger } from 'pino';
import type { Store } from '../../storage/store.ts';
import type { Delivery } from '../events.ts';
import type { Journal } from './journal.ts';

/** What the runtime gives an actor: its store, its journal and event publishing. */
export interface ActorContext {
  store: Store;
  journal: Journal;
  /** Sends events to the queue actors of the recipients (after the write is durable). */
  publish(delivery: Delivery): void;
  siteUrl: string;
  log: Logger;
}
