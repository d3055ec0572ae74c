/** POST /users/me/onboarding_steps (FL 233): marks an onboarding step seen (`actors/user/onboarding.ts`). */
import { userActorId, userRef } from '../../actors/user/ref.ts';
import { badRequest } from '../../lib/errors.ts';
import { str } from '../params.ts';
import { caller, me, route } from '../route.ts';

export const markOnboardingStep = route({
  method: 'POST',
  path: '/users/me/onboarding_steps',
  auth: 'required',
  params: { onboarding_step: str() },
  async handle(ctx, p) {
    const u = me(ctx);
    // Zulip's human_users_only: the user's actor does not know who is a bot; the credentials do.
    if (u.isBot) throw badRequest('This endpoint does not accept bot requests.');
    return ctx.actors.raw(userRef, userActorId(u.realmId, u.userId), { type: 'markOnboardingStep', caller: caller(ctx), step: p.onboarding_step });
  },
});
