/** POST /messages/{message_id}/report (FL 382): a moderation request for a message. */
import { z } from 'zod';
import { MAX_REPORT_DESCRIPTION_LENGTH } from '../../actors/realm/actions/messages/message_report.ts';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { int, str } from '../params.ts';
import { caller, me, route } from '../route.ts';

export const reportMessage = route({
  method: 'POST',
  path: '/messages/{message_id}/report',
  auth: 'required',
  params: {
    message_id: int().pipe(z.number().nonnegative({ message: 'must not be negative' })),
    report_type: str(),
    description: str()
      .pipe(z.string().refine((d) => [...d].length <= MAX_REPORT_DESCRIPTION_LENGTH, { message: `is too long (limit: ${MAX_REPORT_DESCRIPTION_LENGTH} characters)` }))
      .optional(),
  },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'reportMessage', caller: caller(ctx), id: p.message_id, reportType: p.report_type, description: p.description ?? '' });
  },
});
