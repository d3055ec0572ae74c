/**
 * The realm actor: owns one organization's members, channels, subscriptions,
 * message routing and scheduled messages. One instance per realm, in the
 * shard its placement key hashes to.
 */
import { defineActor } from '../runtime/registry.ts';
import { realmHandlers } from './handlers.ts';
import { realmRef } from './ref.ts';
import { deliverScheduled } from './scheduled_messages.ts';
import { expireInvite } from './invites.ts';
import { missedMessageEmails } from './notifications.ts';
import { pushNotify, pushRegister, pushRemove, pushUnregister } from './push.ts';
import { loginEmail } from './login_email.ts';
import { markMutedRead } from './personal.ts';
import { outgoingWebhooks } from './outgoing_webhooks.ts';
import { RealmState } from './state.ts';
import { noteChange } from './register_parts.ts';

export const realmActor = defineActor({
  ref: realmRef,
  durable: true,
  load: async (ctx, id) => {
    const state = await RealmState.load(ctx.store, Number(id));
    state.channelCreationRule = ctx.limits.channelCreation;
    state.siteUrl = ctx.siteUrl;
    return state;
  },
  handlers: realmHandlers,
  changed: noteChange,
  timers: {
    [deliverScheduled.name]: deliverScheduled,
    [expireInvite.name]: expireInvite,
    [missedMessageEmails.name]: missedMessageEmails,
    [pushRegister.name]: pushRegister,
    [pushUnregister.name]: pushUnregister,
    [pushNotify.name]: pushNotify,
    [pushRemove.name]: pushRemove,
    [loginEmail.name]: loginEmail,
    [markMutedRead.name]: markMutedRead,
    [outgoingWebhooks.name]: outgoingWebhooks,
  },
});
