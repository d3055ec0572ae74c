/**
 * A bot's storage (`GET`, `PUT`, `DELETE /bot_storage`; Zulip's
 * `zerver/lib/bot_storage.py`): string values by string key, kept by the
 * bot's own user actor, one row per key in the bot's partition of
 * `bot_storage`. Only bots may use it (FL 494: the gateway refuses others, as
 * the credentials say who is a bot); a bot reaches only its own actor, so one
 * bot never sees another's storage. Nothing here sends events: Zulip has none
 * for it, and no register field shows it.
 *
 * Memory holds each key's size, not its value: the values (up to the limit,
 * ten million characters) stay in the store and a read fetches them.
 */
import { z } from 'zod';
import { badRequest } from '../../lib/errors.ts';
import { T } from '../../storage/tables.ts';
import { defineAction, defineQuery, later } from '../runtime/action.ts';
import type { ActorContext } from '../runtime/context.ts';
import type { UserState } from './actor.ts';

const action = defineAction<UserState>();
const query = defineQuery<UserState>();

/** Zulip's USER_STATE_SIZE_LIMIT: the characters of every key and value of one bot, together. */
export const BOT_STORAGE_LIMIT = 10_000_000;

/**
 * Parley's own bound on a key (Zulip's is a text column): the key is the
 * row's clustering key, and a store key has a size limit (lmdb: 1978 bytes).
 */
export const MAX_BOT_STORAGE_KEY_LENGTH = 400;

/** The keys of a bot's storage with their sizes, and their total (what the limit bounds). */
export class BotStorageIndex {
  private readonly sizes = new Map<string, number>();
  private sum = 0;

  static async load(ctx: ActorContext, realmId: number, userId: number): Promise<BotStorageIndex> {
    const index = new BotStorageIndex();
    for (const row of await T.botStorage.partition(realmId, userId).range(ctx.store)) index.set(String(row.ck), entrySize(String(row.ck), row.value.value));
    return index;
  }

  get total(): number {
    return this.sum;
  }

  has(key: string): boolean {
    return this.sizes.has(key);
  }

  /** The size the key takes now (0 when absent). */
  sizeOf(key: string): number {
    return this.sizes.get(key) ?? 0;
  }

  keys(): string[] {
    return [...this.sizes.keys()];
  }

  set(key: string, size: number): void {
    this.sum += size - this.sizeOf(key);
    this.sizes.set(key, size);
  }

  delete(key: string): void {
    this.sum -= this.sizeOf(key);
    this.sizes.delete(key);
  }
}

/** Characters as Zulip counts them (Python's len: code points), without copying the string. */
function codePoints(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

const entrySize = (key: string, value: string): number => codePoints(key) + codePoints(value);

const keyMissing = () => badRequest('Key does not exist.');

/** The keys a request names, or every key when it names none (Zulip: an absent or empty list means all). */
const keysOf = (s: Readonly<UserState>, keys: string[] | null): string[] => (keys?.length ? keys : s.botStorage.keys());

/** GET /bot_storage: the values of `keys` (every key when null or empty); a key the bot has not stored is refused. O(keys asked). */
export const getBotStorage = query({
  type: 'getBotStorage',
  fields: z.object({ keys: z.array(z.string()).nullable() }),
  run(s, msg, ctx) {
    const asked = msg.keys?.length ? msg.keys : null;
    if (asked && !asked.every((k) => s.botStorage.has(k))) throw keyMissing();
    const { realmId, userId } = s;
    return later(async () => {
      const storage: Record<string, string> = {};
      const put = (key: string, value: string) => Object.defineProperty(storage, key, { value, enumerable: true, writable: true, configurable: true });
      if (!asked) {
        for (const row of await T.botStorage.partition(realmId, userId).range(ctx.store)) put(String(row.ck), row.value.value);
        return { storage };
      }
      const rows = await Promise.all(asked.map((k) => T.botStorage.at(realmId, userId, k).get(ctx.store)));
      // A key deleted by a request answered after this one was checked: as if this read came after it.
      for (const [i, row] of rows.entries()) {
        if (!row) throw keyMissing();
        put(asked[i]!, row.value);
      }
      return { storage };
    });
  },
});

/** PUT /bot_storage: sets every entry, or none when the storage would then be over its limit. O(entries). */
export const putBotStorage = action({
  type: 'putBotStorage',
  fields: z.object({ entries: z.array(z.tuple([z.string(), z.string()])) }),
  check(s, msg) {
    let total = s.botStorage.total;
    const sized: Array<{ key: string; value: string; size: number }> = [];
    // One entry per key (the last, as a JSON object's), so the total counts each key once.
    for (const [key, value] of new Map(msg.entries)) {
      if (codePoints(key) > MAX_BOT_STORAGE_KEY_LENGTH) throw badRequest(`Key is too long (limit: ${MAX_BOT_STORAGE_KEY_LENGTH} characters)`);
      const size = entrySize(key, value);
      total += size - s.botStorage.sizeOf(key);
      sized.push({ key, value, size });
    }
    if (total > BOT_STORAGE_LIMIT) throw badRequest(`Request exceeds storage limit by ${total - BOT_STORAGE_LIMIT} characters. The limit is ${BOT_STORAGE_LIMIT} characters.`);
    return sized;
  },
  apply(s, entries, tx) {
    for (const { key, value, size } of entries) {
      s.botStorage.set(key, size);
      tx.write(T.botStorage.at(s.realmId, s.userId, key).put({ value }));
    }
    return {};
  },
});

/** DELETE /bot_storage: removes `keys` (every key when null or empty), or nothing when one of them is not stored. O(keys). */
export const removeBotStorage = action({
  type: 'removeBotStorage',
  fields: z.object({ keys: z.array(z.string()).nullable() }),
  check(s, msg) {
    const keys = keysOf(s, msg.keys);
    // As Zulip counts: fewer stored rows than keys named (a key twice included) is refused.
    const distinct = new Set(keys);
    if (distinct.size < keys.length || ![...distinct].every((k) => s.botStorage.has(k))) throw keyMissing();
    return [...distinct];
  },
  apply(s, keys, tx) {
    for (const key of keys) {
      s.botStorage.delete(key);
      tx.write(T.botStorage.at(s.realmId, s.userId, key).delete());
    }
    return {};
  },
});
