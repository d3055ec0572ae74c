/**
 * Invitations: POST /invites, POST /invites/multiuse, GET /invites, DELETE
 * /invites/{invite_id}, DELETE /invites/multiuse/{invite_id}, POST
 * /invites/{invite_id}/resend. The realm records them; this route sends the
 * emails once the realm has answered (so once they are durable).
 */
import { z } from 'zod';
import { PARTIAL_INVITE_MESSAGE } from '../../actors/realm/actions/people/invites.ts';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { ApiError, type ErrorExtra } from '../../lib/errors.ts';
import { sendMail } from '../../lib/mail.ts';
import { bool, int, json, str, unsupported } from '../params.ts';
import { caller, me, route } from '../route.ts';

const Id = int().pipe(z.number().int().nonnegative());
const Ids = json(z.array(z.number().int()));
/** Minutes, or JSON null for an invitation that never expires. */
const Minutes = json(z.number().int().nullable());
const Role = int();
const realm = (ctx: Parameters<typeof me>[0]) => realmActorId(me(ctx).realmId);

/** The sign-up page of an invitation, on its organization's host. */
export const joinLink = (realmUrl: string, token: string): string => `${realmUrl}/join/${token}`;

interface InviteMail {
  email: string;
  token: string;
  referrer: string;
  realmName: string;
  expiresAt: number | null;
}

async function mailInvites(realmUrl: string, list: InviteMail[]): Promise<void> {
  for (const m of list) {
    const expiry = m.expiresAt === null ? 'This invitation does not expire.' : `This invitation expires on ${new Date(m.expiresAt * 1000).toUTCString()}.`;
    await sendMail({
      to: m.email,
      subject: `${m.referrer} invited you to join ${m.realmName}`,
      text: `Hello,\n\n${m.referrer} invited you to join ${m.realmName}. Create your account here:\n\n${joinLink(realmUrl, m.token)}\n\n${expiry}\n`,
    });
  }
}

const common = {
  invite_expires_in_minutes: Minutes.optional(),
  // Replaced by invite_expires_in_minutes at FL 126.
  invite_expires_in_days: unsupported(int()),
  invite_as: Role.optional(),
  group_ids: Ids.optional(),
  include_realm_default_subscriptions: bool().optional(),
  // Administrators only (for others it is null); Welcome Bot sends it to the new user.
  welcome_message_custom_text: str().optional(),
};

type Common = { invite_expires_in_minutes?: number | null; invite_as?: number; group_ids?: number[]; include_realm_default_subscriptions?: boolean; welcome_message_custom_text?: string };
const commonFields = (p: Common & { stream_ids?: number[] }) => ({
  expiresInMinutes: p.invite_expires_in_minutes,
  inviteAs: p.invite_as ?? 400,
  streamIds: p.stream_ids ?? [],
  groupIds: p.group_ids ?? [],
  includeRealmDefaultSubscriptions: p.include_realm_default_subscriptions ?? false,
  welcomeMessageCustomText: p.welcome_message_custom_text,
});

export const createInvites = route({
  method: 'POST',
  path: '/invites',
  auth: 'required',
  params: {
    invitee_emails: str(),
    stream_ids: Ids,
    // Notification Bot tells the referrer when the invitee signs up.
    notify_referrer_on_join: bool().optional(),
    ...common,
  },
  async handle(ctx, p) {
    const r = await ctx.actors.call(realmRef, realm(ctx), {
      type: 'createInvites',
      caller: caller(ctx),
      emails: p.invitee_emails.split(/[,\n]/),
      notifyReferrerOnJoin: p.notify_referrer_on_join ?? true,
      ...commonFields(p),
    });
    await mailInvites(ctx.realmUrl, r.mail);
    if (r.partial) throw new ApiError('INVITATION_FAILED', PARTIAL_INVITE_MESSAGE, 400, r.partial as ErrorExtra);
    return {};
  },
});

export const createMultiuseInvite = route({
  method: 'POST',
  path: '/invites/multiuse',
  auth: 'required',
  params: { stream_ids: Ids.optional(), ...common },
  async handle(ctx, p) {
    const { token } = await ctx.actors.call(realmRef, realm(ctx), { type: 'createMultiuseInvite', caller: caller(ctx), ...commonFields(p) });
    return { invite_link: joinLink(ctx.realmUrl, token) };
  },
});

export const listInvites = route({
  method: 'GET',
  path: '/invites',
  auth: 'required',
  params: {},
  async handle(ctx) {
    const { invites } = await ctx.actors.call(realmRef, realm(ctx), { type: 'listInvites', caller: caller(ctx) });
    return { invites: invites.map(({ token, ...i }) => ({ ...i, ...(token ? { link_url: joinLink(ctx.realmUrl, token) } : {}) })) };
  },
});

export const revokeInvite = route({
  method: 'DELETE',
  path: '/invites/{invite_id}',
  auth: 'required',
  params: { invite_id: Id },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'revokeInvite', caller: caller(ctx), id: p.invite_id, multiuse: false });
  },
});

export const revokeMultiuseInvite = route({
  method: 'DELETE',
  path: '/invites/multiuse/{invite_id}',
  auth: 'required',
  params: { invite_id: Id },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'revokeInvite', caller: caller(ctx), id: p.invite_id, multiuse: true });
  },
});

export const resendInvite = route({
  method: 'POST',
  path: '/invites/{invite_id}/resend',
  auth: 'required',
  params: { invite_id: Id },
  async handle(ctx, p) {
    const r = await ctx.actors.call(realmRef, realm(ctx), { type: 'resendInvite', caller: caller(ctx), id: p.invite_id });
    await mailInvites(ctx.realmUrl, r.mail);
    return {};
  },
});
