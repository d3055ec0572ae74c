/**
 * Sign-in by token: the gateway verifies the JSON web token (`lib/jwt.ts`);
 * the realm issues an API key to the user its `email` claim names (keys are
 * stored as hashes only, so each sign-in gets a new key, as a password login
 * does: `api_keys.ts`).
 */
import { z } from 'zod';
import { ApiError } from '../../../../lib/errors.ts';
import { defineAction } from '../../../runtime/action.ts';
import { authenticationFailed, grantKey, type Login, loginEvents, loginPlan, userDeactivated } from './api_keys.ts';
import { noteLogin } from '../notifications/login_email.ts';
import { userObject } from '../../rules/people.ts';
import type { RealmState } from '../../state/state.ts';

const action = defineAction<RealmState>();

export const apiKeyForToken = action({
  type: 'apiKeyForToken',
  fields: z.object({ email: z.string(), includeProfile: z.boolean(), userAgent: z.string().max(2000).default(''), ip: z.string().max(100).default('') }),
  check(state, msg): Login & { includeProfile: boolean; device: { userAgent: string; ip: string } } {
    if (msg.caller.userId !== null) throw new ApiError('UNAUTHORIZED', 'Only the server exchanges tokens', 401);
    const user = msg.email.trim() ? state.usersByEmail.get(msg.email.trim().toLowerCase()) : undefined;
    if (!user || user.isSystemBot) throw authenticationFailed();
    if (!user.isActive) throw userDeactivated();
    return { ...loginPlan(state, user.id), includeProfile: msg.includeProfile, device: { userAgent: msg.userAgent, ip: msg.ip } };
  },
  apply(state, p, tx) {
    // Zulip's jwt_fetch_api_key mails the new login too (process_api_key_fetch_authenticate_result).
    noteLogin(state, p.userId, p.device, tx);
    const { api_key, email } = grantKey(state, p, tx);
    const user = state.users.get(p.userId)!;
    return { api_key, email, ...(p.includeProfile ? { user: userObject(state, user, user, { extavatar: false }) } : {}) };
  },
  events: (state, p) => loginEvents(state, p),
});
