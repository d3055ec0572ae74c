/**
 * The realm actor: owns one organization's members, channels, subscriptions,
 * message routing and scheduled messages. One instance per realm, in the
 * shard its placement key hashes to.
 */
import { defineActor } from '../runtime/registry.ts';
import { realmHandlers } from './handlers.ts';
import { realmRef } from './ref.ts';
import { deliverScheduled } from './actions/messages/scheduled_messages.ts';
import { expireInvite } from './actions/people/invites.ts';
import { missedMessageEmails } from './actions/notifications/notifications.ts';
import { digestRun, digestSend } from './actions/notifications/digest.ts';
import { retentionRun } from './actions/messages/retention.ts';
import { deleteUserMessages } from './actions/people/deactivated_user_messages.ts';
import { forgetDeletedUserData } from './actions/people/deleted_user_data.ts';
import { pushNotify, pushRegister, pushRemove, pushUnregister } from './actions/notifications/push.ts';
import { pushDeviceRegister, retiredPushE2eeRegister } from './actions/notifications/push_e2ee.ts';
import { loginEmail } from './actions/notifications/login_email.ts';
import { accountEmail, onboardingEmail } from './actions/notifications/signup_email.ts';
import { accountAddressBackfill, accountAddresses } from './actions/notifications/account_addresses.ts';
import { markMutedRead } from './actions/people/personal.ts';
import { outgoingWebhooks } from './actions/messages/outgoing_webhooks.ts';
import { makeExport, removeExportFile } from './actions/organization/realm_export.ts';
import { RealmState } from './state/state.ts';
import { noteChange } from './state/register_parts.ts';

export const realmActor = defineActor({
  ref: realmRef,
  durable: true,
  load: async (ctx, id) => {
    const state = await RealmState.load(ctx.store, Number(id));
    state.channelCreationRule = ctx.limits.channelCreation;
    state.siteUrl = ctx.siteUrl;
    // A checkpoint's parts wait for commits to carry them: an idle realm is asked for an empty change.
    let asked = false;
    const kick = () => {
      if (asked || !state.image.pending) return;
      asked = true;
      ctx.actors.call(realmRef, id, { type: 'writeCheckpoint', caller: { realmId: state.realmId, userId: null } }).then(
        () => {
          asked = false;
          kick();
        },
        (err: unknown) => {
          // Left to the next change (or the next load's checkpoint).
          asked = false;
          ctx.log.warn({ err, realm: state.realmId }, 'checkpoint: the empty change failed');
        },
      );
    };
    state.image.kick = kick;
    return state;
  },
  handlers: realmHandlers,
  changed: noteChange,
  journalWrites: (state, writes) => state.image.journalWrites(writes),
  unload: (state) => state.image.close(),
  timers: {
    [deliverScheduled.name]: deliverScheduled,
    [expireInvite.name]: expireInvite,
    [missedMessageEmails.name]: missedMessageEmails,
    [digestRun.name]: digestRun,
    [digestSend.name]: digestSend,
    [retentionRun.name]: retentionRun,
    [deleteUserMessages.name]: deleteUserMessages,
    [forgetDeletedUserData.name]: forgetDeletedUserData,
    [pushRegister.name]: pushRegister,
    [pushUnregister.name]: pushUnregister,
    [pushNotify.name]: pushNotify,
    [pushRemove.name]: pushRemove,
    [retiredPushE2eeRegister.name]: retiredPushE2eeRegister,
    [pushDeviceRegister.name]: pushDeviceRegister,
    [loginEmail.name]: loginEmail,
    [accountEmail.name]: accountEmail,
    [onboardingEmail.name]: onboardingEmail,
    [accountAddresses.name]: accountAddresses,
    [accountAddressBackfill.name]: accountAddressBackfill,
    [markMutedRead.name]: markMutedRead,
    [outgoingWebhooks.name]: outgoingWebhooks,
    [makeExport.name]: makeExport,
    [removeExportFile.name]: removeExportFile,
  },
});
