/**
 * The user actor: owns one user's personal state (settings, message flags
 * that differ from their defaults) and serves that user's history reads.
 * It calls the realm actor for what the user may see; the realm actor never
 * calls a user actor, so the two cannot wait on each other.
 */
import { type NarrowTerm } from '../../lib/narrow.ts';
import type { UserMsg } from '../protocol.ts';
import type { ActorContext } from '../runtime/context.ts';
import { Parked } from '../runtime/mailbox.ts';
import { MessageReader, type MessageSource } from './messages.ts';
import { DEFAULT_USER_SETTINGS } from './settings.ts';

/** How the user actor asks the realm actor for a user's readable history. */
export type SourcesLookup = (realmId: number, userId: number, narrow: NarrowTerm[]) => Promise<{ sources: MessageSource[] }>;

export class UserActor {
  private constructor(
    private readonly userId: number,
    private readonly ctx: ActorContext,
    private readonly settings: Record<string, unknown>,
    private readonly flags: Map<number, string[]>,
    private readonly lookup: SourcesLookup,
  ) {}

  static async load(ctx: ActorContext, realmId: number, userId: number, lookup: SourcesLookup): Promise<UserActor> {
    const pk = `${realmId}:${userId}`;
    const settings = (await ctx.store.get<Record<string, unknown>>('user_state', pk, 'settings')) ?? {};
    const flags = new Map<number, string[]>();
    for (const { ck, value } of await ctx.store.range<string[]>('user_flags', pk)) flags.set(Number(ck), value);
    return new UserActor(userId, ctx, settings, flags, lookup);
  }

  handle(msg: UserMsg): unknown {
    switch (msg.type) {
      case 'snapshot': {
        const want = (t: string) => msg.fetch === null || msg.fetch.includes(t);
        const settings = want('user_settings') ? { user_settings: { ...DEFAULT_USER_SETTINGS, ...this.settings } } : {};
        if (!want('message') && !want('update_message_flags')) return settings;
        return new Parked(
          this.lookup(msg.realmId, this.userId, []).then(async ({ sources }) => ({
            ...settings,
            unread_msgs: await new MessageReader(this.ctx.store, msg.realmId, this.userId, this.flags).unreads(sources),
          })),
        );
      }
      case 'getMessages':
        // The read runs outside the mailbox: it only reads immutable messages.
        return new Parked(
          this.lookup(msg.realmId, this.userId, msg.narrow).then(({ sources }) =>
            new MessageReader(this.ctx.store, msg.realmId, this.userId, this.flags).fetch(msg, sources),
          ),
        );
      default: {
        const never: never = msg;
        throw new Error(`unhandled user message ${JSON.stringify(never)}`);
      }
    }
  }
}
