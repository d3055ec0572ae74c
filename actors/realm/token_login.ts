/**
 * Sign-in by token: the gateway verifies the JSON web token (`lib/jwt.ts`);
 * the realm gives the API key of the user its `email` claim names.
 */
import { z } from 'zod';
import { ApiError } from '../../lib/errors.ts';
import { formatUser } from '../format.ts';
import { defineQuery } from '../runtime/action.ts';
import type { RealmState } from './state.ts';

const query = defineQuery<RealmState>();

export const apiKeyForToken = query({
  type: 'apiKeyForToken',
  fields: z.object({ email: z.string(), includeProfile: z.boolean() }),
  run(state, msg) {
    if (msg.caller.userId !== null) throw new ApiError('UNAUTHORIZED', 'Only the server exchanges tokens', 401);
    const user = state.usersByEmail.get(msg.email.trim().toLowerCase());
    if (!user || !msg.email.trim()) throw new ApiError('AUTHENTICATION_FAILED', 'Your username or password is incorrect', 401);
    if (!user.isActive) throw new ApiError('USER_DEACTIVATED', 'Account is deactivated', 401);
    return { api_key: user.apiKey, email: user.email, ...(msg.includeProfile ? { user: formatUser(user, false) } : {}) };
  },
});
