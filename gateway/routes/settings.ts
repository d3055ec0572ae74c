/**
 * PATCH /settings (and its aliases /settings/display and
 * /settings/notifications, FL 80) and PATCH /realm/user_settings_defaults.
 * Every setting of the user-settings table is a parameter, decoded by its
 * type; the realm checks the allowed values. A password change is verified
 * and hashed here, off the realm's mailbox.
 */
import { z } from 'zod';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { TargetUsers } from '../../actors/realm/actions/people/settings.ts';
import { userActorId, userRef } from '../../actors/user/ref.ts';
import { SETTING_NAMES, type SettingValue, USER_SETTINGS } from '../../actors/user/settings.ts';
import { badRequest } from '../../lib/errors.ts';
import { sendMail } from '../../lib/mail.ts';
import { hashPassword, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, verifyPassword } from '../../lib/secrets.ts';
import { confirmEmailLink } from '../pages/confirm_email.ts';
import { bool, int, json, str, type ParamShape } from '../params.ts';
import { caller, me, route, serverCaller } from '../route.ts';
import type { Route } from '../route.ts';

const settingParam = (name: string) => {
  const t = USER_SETTINGS[name]!.type;
  return (t === 'bool' ? bool() : t === 'int' ? int() : str()).optional();
};
const settingParams = (names: string[]): ParamShape => Object.fromEntries(names.map((k) => [k, settingParam(k)]));
const pick = (p: Record<string, unknown>, names: string[]): Record<string, SettingValue> => Object.fromEntries(names.filter((k) => p[k] !== undefined).map((k) => [k, p[k] as SettingValue]));

const SETTINGS_NAMES = SETTING_NAMES.filter((k) => USER_SETTINGS[k]!.s);
const DEFAULTS_NAMES = SETTING_NAMES.filter((k) => USER_SETTINGS[k]!.d);

const settingsParams = {
  ...settingParams(SETTINGS_NAMES),
  full_name: str().optional(),
  email: str().pipe(z.string().trim().email({ message: 'is not a valid email address' }).max(254)).optional(),
  old_password: str().optional(),
  new_password: str().pipe(z.string().max(MAX_PASSWORD_LENGTH)).optional(),
  target_users: json(TargetUsers).optional(),
};

type SettingsParams = Record<string, unknown> & { full_name?: string; email?: string; old_password?: string; new_password?: string; target_users?: z.infer<typeof TargetUsers> };

function settingsRoute(path: string): Route {
  return route({
    method: 'PATCH',
    path,
    auth: 'required',
    params: settingsParams,
    async handle(ctx, params) {
      const p = params as SettingsParams;
      const user = me(ctx);
      const realm = realmActorId(user.realmId);
      let password: { verifiedAgainst: string; newHash: string } | null = null;
      if (p.new_password !== undefined && p.target_users === undefined) {
        const found = await ctx.actors.call(realmRef, realm, { type: 'passwordCheck', caller: serverCaller(ctx), email: user.email });
        if (p.old_password === undefined || found.passwordHash === null || !(await verifyPassword(found.passwordHash, p.old_password))) throw badRequest('Wrong password!');
        if ([...p.new_password].length < MIN_PASSWORD_LENGTH) throw badRequest('New password is too weak!');
        password = { verifiedAgainst: found.passwordHash, newHash: await hashPassword(p.new_password) };
      } else if (p.new_password !== undefined) password = { verifiedAgainst: '', newHash: '' };
      const { draftsOff, confirmEmail } = await ctx.actors.call(realmRef, realm, {
        type: 'updateSettings',
        caller: caller(ctx),
        changes: pick(p, SETTINGS_NAMES),
        targetUsers: p.target_users ?? null,
        fullName: p.full_name ?? null,
        email: p.email ?? null,
        password,
      });
      if (confirmEmail) {
        // The new address changes nothing until its owner follows the link (gateway/pages/confirm_email.ts).
        await sendMail({
          to: confirmEmail.email,
          subject: 'Confirm your new email address',
          text: `Hello,\n\nTo use ${confirmEmail.email} as your email address (${user.email} until then), follow this link:\n\n${confirmEmailLink(ctx.realmUrl, confirmEmail.key)}\n`,
        });
      }
      // Drafts synchronization turned off: the drafts stored on the server are deleted (as Zulip does).
      for (const userId of draftsOff) await ctx.actors.call(userRef, userActorId(user.realmId, userId), { type: 'discardDrafts', caller: serverCaller(ctx) });
      return {};
    },
  });
}

export const updateSettings = settingsRoute('/settings');
export const updateDisplaySettings = settingsRoute('/settings/display');
export const updateNotificationSettings = settingsRoute('/settings/notifications');

export const updateUserDefaults = route({
  method: 'PATCH',
  path: '/realm/user_settings_defaults',
  auth: 'required',
  params: settingParams(DEFAULTS_NAMES),
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'updateUserDefaults', caller: caller(ctx), changes: pick(p as Record<string, unknown>, DEFAULTS_NAMES) });
  },
});
