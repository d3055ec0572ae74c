/**
 * The realm actor: owns one organization's members, channels, subscriptions
 * and message routing. One instance per realm, in the shard its ID hashes to.
 */
import { badRequest } from '../../lib/errors.ts';
import { Role } from '../model.ts';
import type { RealmMsg } from '../protocol.ts';
import type { ActorContext } from '../runtime/context.ts';
import { checkSendMessage, doSendMessage, messageSources } from './messages.ts';
import { serverSettings, snapshot } from './snapshot.ts';
import { type RealmMeta, RealmState } from './state.ts';
import { listSubscriptions, subscribe } from './subscriptions.ts';
import { authenticate, buildUser, createUser, listUsers, requireUser } from './users.ts';

/** Internal (never reachable from the gateway): creates the realm with its first users if it is empty. */
export interface BootstrapMsg {
  type: 'bootstrap';
  name: string;
  users: Array<{ email: string; fullName: string; role: number; isBot?: boolean; canCreateUsers?: boolean; password?: string }>;
}

export class RealmActor {
  private constructor(
    private readonly state: RealmState,
    private readonly ctx: ActorContext,
  ) {}

  static async load(ctx: ActorContext, realmId: number): Promise<RealmActor> {
    return new RealmActor(await RealmState.load(ctx.store, realmId), ctx);
  }

  handle(msg: RealmMsg | BootstrapMsg): unknown {
    const { state, ctx } = this;
    if (msg.type !== 'bootstrap' && msg.type !== 'serverSettings' && !state.meta) throw badRequest('Organization does not exist');
    switch (msg.type) {
      case 'bootstrap':
        return this.bootstrap(msg);
      case 'authenticate':
        return authenticate(state, msg.email, msg.apiKey);
      case 'serverSettings':
        return serverSettings(state, ctx.siteUrl);
      case 'sendMessage':
        return doSendMessage(state, ctx, msg, checkSendMessage(state, msg));
      case 'subscribe':
        return subscribe(state, ctx, msg);
      case 'listSubscriptions':
        return listSubscriptions(state, msg.userId, msg.includeSubscribers);
      case 'snapshot':
        return snapshot(state, msg);
      case 'listUsers':
        requireUser(state, msg.userId);
        return listUsers(state, msg.userIds, msg.clientExtavatar);
      case 'createUser':
        return createUser(state, ctx, msg.actorId, msg.email, msg.password, msg.fullName);
      case 'messageSources':
        return messageSources(state, msg.userId, msg.narrow);
      default: {
        const never: never = msg;
        throw new Error(`unhandled realm message ${JSON.stringify(never)}`);
      }
    }
  }

  private async bootstrap(msg: BootstrapMsg) {
    const { state, ctx } = this;
    if (!state.meta) {
      const meta: RealmMeta = {
        name: msg.name,
        stringId: '',
        dateCreated: Math.floor(Date.now() / 1000),
        topicsPolicy: 'allow_empty_topic',
        emptyTopicDisplayName: 'general chat',
        canMentionManyUsersGroup: 6,
      };
      const ops: Parameters<typeof ctx.journal.append>[0] = [{ op: 'put', table: 'realm_meta', pk: state.pk, ck: 'meta', value: meta }];
      const owner = msg.users.find((u) => u.role === Role.OWNER);
      for (const spec of msg.users) {
        const ownerId = spec.isBot ? [...state.users.values()].find((u) => u.email === owner?.email)?.id ?? null : null;
        const built = buildUser(state, { ...spec, botOwnerId: ownerId });
        state.indexUser(built.user);
        ops.push(...built.ops);
      }
      await ctx.journal.append(ops);
      state.meta = meta;
    }
    return {
      users: msg.users
        .map((spec) => state.usersByEmail.get(spec.email.toLowerCase()))
        .filter((u) => u !== undefined)
        .map((u) => ({ email: u.email, apiKey: u.apiKey, fullName: u.fullName, role: u.role, isBot: u.isBot })),
    };
  }
}
