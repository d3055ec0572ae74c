/** GET /calls/bigbluebutton/join?bigbluebutton=...: Zulip's `join_bigbluebutton`, on a server without BigBlueButton. */
import type { Page } from './page.ts';

export const bigBlueButtonJoin: Page = {
  method: 'GET',
  path: '/calls/bigbluebutton/join',
  async handle() {
    // Zulip checks its BigBlueButton settings before the signed meeting: none here.
    return { status: 400, contentType: 'application/json', body: JSON.stringify({ result: 'error', msg: 'BigBlueButton is not configured.', code: 'BAD_REQUEST' }) };
  },
};
