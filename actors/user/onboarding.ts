/**
 * Onboarding steps (FL 233; one-time notices only since FL 259): the
 * notices the web app shows once each. Register's `onboarding_steps` lists
 * those the user has not seen; POST /users/me/onboarding_steps marks one
 * seen and sends the new list (Zulip's `do_mark_onboarding_step_as_read`).
 */
import { z } from 'zod';
import { badRequest } from '../../lib/errors.ts';
import { T } from '../../storage/tables.ts';
import { toUsers } from '../events/delivery.ts';
import { defineAction } from '../runtime/action.ts';
import type { UserState } from './actor.ts';

const action = defineAction<UserState>();

/**
 * Zulip's ONE_TIME_NOTICES. `navigation_tour_video` is left out: this
 * server has no tour video (`navigation_tour_video_url` is null), which
 * Zulip treats as seen.
 */
export const ONE_TIME_NOTICES = [
  'visibility_policy_banner',
  'intro_inbox_view_modal',
  'intro_recent_view_modal',
  'first_stream_created_banner',
  'jump_to_conversation_banner',
  'non_interleaved_view_messages_fading',
  'interleaved_view_messages_fading',
  'intro_resolve_topic',
] as const;
/** Every step a client may mark (Zulip's ALL_ONBOARDING_STEPS). */
const ALL_STEPS = new Set<string>([...ONE_TIME_NOTICES, 'navigation_tour_video', 'narrow_to_dm_with_welcome_bot_new_user']);

/** The register key: the notices not yet seen, in Zulip's order. */
export function onboardingStepsOf(s: Readonly<UserState>): Array<{ type: 'one_time_notice'; name: string }> {
  const seen = new Set(s.counters.onboardingSeen);
  return ONE_TIME_NOTICES.filter((n) => !seen.has(n)).map((name) => ({ type: 'one_time_notice', name }));
}

export const markOnboardingStep = action({
  type: 'markOnboardingStep',
  fields: z.object({ step: z.string() }),
  check(s, msg) {
    if (!ALL_STEPS.has(msg.step)) throw badRequest(`Unknown onboarding_step: ${msg.step}`);
    return { step: msg.step, changed: !s.counters.onboardingSeen.includes(msg.step) };
  },
  apply(s, p, tx) {
    if (p.changed) {
      s.counters.onboardingSeen = [...s.counters.onboardingSeen, p.step];
      tx.write(T.userCounters.at(s.realmId, s.userId).put({ ...s.counters }));
    }
    return {};
  },
  // As Zulip: the event is sent whether or not the step was seen before.
  events: (s) => [toUsers(s.realmId, [s.userId], { type: 'onboarding_steps', onboarding_steps: onboardingStepsOf(s) })],
});
