/** The realm's handlers for the organization's settings, emoji, linkifiers, exports and register. */
import { writeCheckpoint } from './checkpoint_action.ts';
import { isActiveUser } from './files.ts';
import { createLinkifier, deleteLinkifier, listLinkifiers, reorderLinkifiers, updateLinkifier } from './linkifiers.ts';
import { convertDemoOrganization, setRealmDeactivated } from './organization.ts';
import { createPlayground, deletePlayground } from './playgrounds.ts';
import { addRealmDomain, changeRealmDomain, listRealmDomains, removeRealmDomain } from './realm_domains.ts';
import { addRealmEmoji, deleteRealmEmoji, listRealmEmoji, realmEmojiImage } from './realm_emoji.ts';
import { deleteExport, exportConsents, exportFile, listExports, requestExport } from './realm_export.ts';
import { updateRealm } from './realm_settings.ts';
import { serverSettings, snapshot } from './snapshot.ts';
import { testWelcomeBotCustomMessage } from './system_bots.ts';
import { addUploadSpace, uploadSpace } from './upload_space.ts';
import { setVideoProviderToken, videoProviderToken } from './video_calls.ts';

export const organizationHandlers = {
  addUploadSpace,
  uploadSpace,
  setRealmDeactivated,
  convertDemoOrganization,
  writeCheckpoint,
  serverSettings,
  snapshot,
  updateRealm,
  testWelcomeBotCustomMessage,
  listLinkifiers,
  createLinkifier,
  updateLinkifier,
  deleteLinkifier,
  reorderLinkifiers,
  createPlayground,
  listRealmDomains,
  addRealmDomain,
  changeRealmDomain,
  removeRealmDomain,
  deletePlayground,
  requestExport,
  listExports,
  deleteExport,
  exportConsents,
  exportFile,
  setVideoProviderToken,
  videoProviderToken,
  isActiveUser,
  addRealmEmoji,
  deleteRealmEmoji,
  listRealmEmoji,
  realmEmojiImage,
};
