/**
 * POST /calls/bigbluebutton/create (FL 337: `voice_only`). As Zulip's
 * `get_bigbluebutton_url`, it answers the link of a join page that carries
 * the meeting (its ID, name, whether cameras are off, who made it) signed
 * by this server; the join page (gateway/pages/bigbluebutton.ts) is where a
 * BigBlueButton server is needed, and this server has none (Zulip's
 * BIG_BLUE_BUTTON_URL unset, so BigBlueButton is not among
 * `realm_available_video_chat_providers`): it answers as such a Zulip
 * server does, "BigBlueButton is not configured."
 */
import { createHmac, randomBytes, randomInt } from 'node:crypto';
import { z } from 'zod';
import { json, str } from '../params.ts';
import { me, route } from '../route.ts';

/** The key join links are signed with: nothing checks one while no BigBlueButton server is configured. */
const KEY = randomBytes(32);

export function signMeeting(meeting: object): string {
  const data = Buffer.from(JSON.stringify(meeting)).toString('base64url');
  return `${data}:${createHmac('sha256', KEY).update(data).digest('base64url')}`;
}

export const createBigBlueButtonCall = route({
  method: 'POST',
  path: '/calls/bigbluebutton/create',
  auth: 'required',
  params: { meeting_name: str().pipe(z.string()), voice_only: json(z.boolean()).optional() },
  async handle(ctx, p) {
    const meeting = { meeting_id: `zulip-${randomInt(100_000_000_000, 999_999_999_999)}`, name: p.meeting_name, lock_settings_disable_cam: p.voice_only ?? false, moderator: me(ctx).userId };
    return { url: `/calls/bigbluebutton/join?bigbluebutton=${encodeURIComponent(signMeeting(meeting))}` };
  },
});
