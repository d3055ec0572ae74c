/**
 * POST /calls/constructorgroups/create (FL 460) and POST
 * /calls/nextcloud_talk/create (FL 465): video-call URLs from providers
 * this server has no account with. As a Zulip server without the provider
 * configured, it does not offer them in `realm_available_video_chat_providers`
 * (so PATCH /realm refuses them as `video_chat_provider`) and these
 * endpoints answer that the provider is not configured, as the Zoom and
 * BigBlueButton routes do (the wording of the message is this server's).
 */
import { badRequest } from '../../lib/errors.ts';
import { route } from '../route.ts';

const notConfigured = (provider: string) =>
  route({
    method: 'POST',
    path: `/calls/${provider === 'Constructor Groups' ? 'constructorgroups' : 'nextcloud_talk'}/create`,
    auth: 'required',
    params: {},
    async handle() {
      throw badRequest(`${provider} is not configured.`);
    },
  });

export const createConstructorGroupsCall = notConfigured('Constructor Groups');
export const createNextcloudTalkCall = notConfigured('Nextcloud Talk');
