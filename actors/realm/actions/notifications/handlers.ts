/** The realm's handlers for notifications: email, digest and push. */
import { startAddressBackfill } from './account_addresses.ts';
import { runDigestNow } from './digest.ts';
import { noteActivity, unsubscribeMissedEmails } from './notifications.ts';
import { addPushDevice, removePushDevice, removePushNotifications, sendTestPush } from './push.ts';
import { registerClientDevice, registerE2eeDevice, removeClientDevice, sendE2eeTestPush } from './push_e2ee.ts';

export const notificationsHandlers = {
  noteActivity,
  unsubscribeMissedEmails,
  runDigestNow,
  addPushDevice,
  removePushDevice,
  removePushNotifications,
  registerE2eeDevice,
  sendE2eeTestPush,
  registerClientDevice,
  removeClientDevice,
  sendTestPush,
  startAddressBackfill,
};
