/**
 * The realm's upload total (Zulip's `currently_used_upload_space_bytes`,
 * `upload_space_used` of GET /attachments and `attachment` events). Uploads
 * are rows of their users' actors; each upload and deletion tells the realm
 * its size from a durable timer after its commit (`actors/user/uploads.ts`),
 * so the total follows them without the realm reading user-owned rows.
 */
import { z } from 'zod';
import { defineAction, defineQuery } from '../../../runtime/action.ts';
import { unauthorized } from '../../../../lib/errors.ts';
import type { RealmState } from '../../state/state.ts';

const action = defineAction<RealmState>();
const query = defineQuery<RealmState>();

/** Adds an upload's size (or subtracts a deleted one's); called by the uploader's actor. O(1). */
export const addUploadSpace = action({
  type: 'addUploadSpace',
  fields: z.object({ delta: z.number().int() }),
  check(state, msg) {
    // Any user of the realm, also one deactivated since the upload (the timer retries until this succeeds).
    if (msg.caller.userId === null || !state.users.has(msg.caller.userId)) throw unauthorized('Account is deactivated');
    return msg.delta;
  },
  apply(state, delta, tx) {
    return { upload_space_used: state.addUploadBytes(delta, tx) };
  },
});

export const uploadSpace = query({
  type: 'uploadSpace',
  fields: z.object({}),
  concurrent: true,
  run(state) {
    return { upload_space_used: state.uploadBytes };
  },
});
