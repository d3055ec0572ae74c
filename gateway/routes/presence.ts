/** POST /typing, POST /messages/{message_id}/typing, POST /users/me/presence, GET /realm/presence, GET /users/{user_id_or_email}/presence. */
import { z } from 'zod';
import { ephemeralRef, presenceActorId, sharedPresenceVersion, typingActorId } from '../../actors/ephemeral/ref.ts';
import { badRequest, missingParam } from '../../lib/errors.ts';
import { bool, int, json, str, unsupported } from '../params.ts';
import { caller, me, route } from '../route.ts';

export const setTyping = route({
  method: 'POST',
  path: '/typing',
  auth: 'required',
  params: {
    type: str().pipe(z.enum(['direct', 'private', 'stream', 'channel'], { message: 'must be direct or stream' })).optional(),
    op: str().pipe(z.enum(['start', 'stop'], { message: "must be 'start' or 'stop'" })),
    to: json(z.array(z.number().int())).optional(),
    stream_id: int().optional(),
    topic: str().optional(),
  },
  async handle(ctx, p) {
    const u = me(ctx);
    const messageType = p.type === 'stream' || p.type === 'channel' ? 'stream' : 'direct';
    if (messageType === 'direct' && p.to === undefined) throw missingParam('to');
    return ctx.actors.raw(ephemeralRef, typingActorId(u.realmId, u.userId), {
      type: 'setTyping',
      caller: caller(ctx),
      op: p.op,
      messageType,
      to: p.to ?? null,
      streamId: p.stream_id ?? null,
      topic: p.topic ?? null,
    });
  },
});

/**
 * POST /messages/{message_id}/typing (FL 351 as POST /message_edit_typing with
 * message_id in the body; renamed at FL 361, Zulip 12 serves only this path).
 */
export const setEditTyping = route({
  method: 'POST',
  path: '/messages/{message_id}/typing',
  auth: 'required',
  params: {
    message_id: int(),
    op: str().pipe(z.enum(['start', 'stop'], { message: "must be 'start' or 'stop'" })),
  },
  async handle(ctx, p) {
    const u = me(ctx);
    return ctx.actors.raw(ephemeralRef, typingActorId(u.realmId, u.userId), { type: 'setEditTyping', caller: caller(ctx), op: p.op, messageId: p.message_id });
  },
});

export const updatePresence = route({
  method: 'POST',
  path: '/users/me/presence',
  auth: 'required',
  sharedReply: true,
  params: {
    status: str(),
    ping_only: bool().optional(),
    new_user_input: bool().optional(),
    slim_presence: bool().optional(),
    last_update_id: int().optional(),
    history_limit_days: int().optional(),
    // Legacy mirroring of another chat system.
    is_zephyr_mirror: unsupported(bool()),
  },
  async handle(ctx, p) {
    const realmId = me(ctx).realmId;
    const slim = p.slim_presence ?? false;
    const historyLimitDays = p.history_limit_days ?? null;
    const withUpdateId = p.last_update_id !== undefined;
    // Every ping's write reaches the presence actor; everyone's presence, the web app's answer, is the same
    // for the second: this gateway fetches it at most once a second per form and presence version (someone
    // came online or changed status), one fetch in flight, after a write, so that it shows the write.
    const written = await ctx.actors.raw(ephemeralRef, presenceActorId(realmId), {
      type: 'updatePresence',
      caller: caller(ctx),
      status: p.status,
      pingOnly: p.ping_only ?? false,
      newUserInput: p.new_user_input ?? false,
      slim,
      lastUpdateId: p.last_update_id ?? null,
      historyLimitDays,
      sharedAnswer: true,
    });
    const version = sharedPresenceVersion(written.text);
    if (version === null) return written;
    return ctx.presenceAnswers.get(`${realmId}:${slim}:${historyLimitDays}:${withUpdateId}`, version, () =>
      ctx.actors.raw(ephemeralRef, presenceActorId(realmId), { type: 'pingAnswer', caller: caller(ctx), slim, historyLimitDays, withUpdateId }),
    );
  },
});

export const realmPresence = route({
  method: 'GET',
  path: '/realm/presence',
  auth: 'required',
  params: {},
  async handle(ctx) {
    const r = await ctx.actors.call(ephemeralRef, presenceActorId(me(ctx).realmId), { type: 'getPresences', caller: caller(ctx), slim: false, historyLimitDays: null });
    return { presences: r.presences, server_timestamp: r.server_timestamp };
  },
});

export const userPresence = route({
  method: 'GET',
  path: '/users/{user_id_or_email}/presence',
  auth: 'required',
  params: { user_id_or_email: str() },
  async handle(ctx, p) {
    return ctx.actors.raw(ephemeralRef, presenceActorId(me(ctx).realmId), { type: 'getUserPresence', caller: caller(ctx), who: p.user_id_or_email });
  },
});
