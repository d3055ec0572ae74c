/**
 * POST /calls/zoom/create (FL 206: `is_video_call`). Parley has no Zoom
 * credentials (Zulip's VIDEO_ZOOM_CLIENT_ID unset), so it answers as such a
 * Zulip server does, after parsing the parameter as Zulip does.
 */
import { badRequest } from '../../lib/errors.ts';
import { bool } from '../params.ts';
import { route } from '../route.ts';

export const createZoomCall = route({
  method: 'POST',
  path: '/calls/zoom/create',
  auth: 'required',
  params: { is_video_call: bool().optional() },
  async handle() {
    throw badRequest('Zoom credentials have not been configured');
  },
});
