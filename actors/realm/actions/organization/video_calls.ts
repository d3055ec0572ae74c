/**
 * Video calls: the realm keeps each user's access token with the configured
 * provider (the gateway talks to the provider, `lib/videoprovider.ts`) and
 * tells the user's clients whether they have one (`has_videoprovider_token`).
 */
import { z } from 'zod';
import { ApiError } from '../../../../lib/errors.ts';
import { T } from '../../../../storage/tables.ts';
import { toUsers } from '../../../events/delivery.ts';
import { defineAction, defineQuery } from '../../../runtime/action.ts';
import { actingUser } from '../../rules/access.ts';
import type { RealmState } from '../../state/state.ts';

const action = defineAction<RealmState>();
const query = defineQuery<RealmState>();

const serverOnly = (caller: { userId: number | null }) => {
  if (caller.userId !== null) throw new ApiError('UNAUTHORIZED', 'Only the server stores provider tokens', 401);
};

/** Stores (token) or forgets (null) a user's provider token; the server calls it after the OAuth step. */
export const setVideoProviderToken = action({
  type: 'setVideoProviderToken',
  fields: z.object({ userId: z.number().int(), accessToken: z.string().nullable() }),
  check(state, msg) {
    serverOnly(msg.caller);
    const user = state.users.get(msg.userId);
    if (!user?.isActive) throw new ApiError('UNAUTHORIZED', 'Account is deactivated', 401);
    return { userId: user.id, accessToken: msg.accessToken, changed: state.org.videoTokens.has(user.id) !== (msg.accessToken !== null) };
  },
  apply(state, p, tx) {
    if (p.accessToken === null) {
      state.org.videoTokens.delete(p.userId);
      tx.write(T.videoProviderTokens.at(state.realmId, p.userId).delete());
    } else {
      const row = { accessToken: p.accessToken, obtainedAt: Math.floor(Date.now() / 1000) };
      state.org.videoTokens.set(p.userId, row);
      tx.write(T.videoProviderTokens.at(state.realmId, p.userId).put(row));
    }
    return {};
  },
  events(state, p) {
    return p.changed ? [toUsers(state.realmId, [p.userId], { type: 'has_videoprovider_token', value: p.accessToken !== null })] : [];
  },
});

/** The caller's provider token (null when they have not authorized the provider). */
export const videoProviderToken = query({
  type: 'videoProviderToken',
  fields: z.object({}),
  run(state, msg) {
    const user = actingUser(state, msg.caller);
    return { userId: user.id, accessToken: state.org.videoTokens.get(user.id)?.accessToken ?? null };
  },
});
