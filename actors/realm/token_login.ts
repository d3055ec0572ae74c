/**
 * Sign-in by token: the gateway verifies the JSON web token (`lib/jwt.ts`);
 * the realm issues an API key to the user its `email` claim names (keys are
 * stored as hashes only, so each sign-in gets a new key, as a password login
 * does: `api_keys.ts`).
 */
import { z } from 'zod';
import { ApiError } from '../../lib/errors.ts';
import { defineAction } from '../runtime/action.ts';
import { authenticationFailed, grantKey, type Login, loginEvents, loginPlan, userDeactivated } from './api_keys.ts';
import { userObject } from './people.ts';
import type { RealmState } from './state.ts';

const action = defineAction<RealmState>();

export const apiKeyForToken = action({
  type: 'apiKeyForToken',
  fields: z.object({ email: z.string(), includeProfile: z.boolean() }),
  check(state, msg): Login & { includeProfile: boolean } {
    if (msg.caller.userId !== null) throw new ApiError('UNAUTHORIZED', 'Only the server exchanges tokens', 401);
    const user = msg.email.trim() ? state.usersByEmail.get(msg.email.trim().toLowerCase()) : undefined;
    if (!user || user.isSystemBot) throw authenticationFailed();
    if (!user.isActive) throw userDeactivated();
    return { ...loginPlan(state, user.id), includeProfile: msg.includeProfile };
  },
  apply(state, p, tx) {
    const { api_key, email } = grantKey(state, p, tx);
    const user = state.users.get(p.userId)!;
    return { api_key, email, ...(p.includeProfile ? { user: userObject(state, user, user, { extavatar: false }) } : {}) };
  },
  events: (state, p) => loginEvents(state, p),
});
