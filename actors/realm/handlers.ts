/** Every message the realm actor takes, by type. */
import { allPublicStreamsAccess, directory, messageSources, narrowForQueue, queueChannels, sendMessage, sendMessageWithTopicWildcard } from './messages.ts';
import { deleteMessage, messageHistory, updateMessage } from './message_edit.ts';
import { deleteTopic } from './delete_topic.ts';
import { readReceipts } from './read_receipts.ts';
import { addReaction, removeReaction } from './reactions.ts';
import { editTypingAudience, presenceAccess, presenceDirectory, typingAudience } from './ephemeral.ts';
import { noteActivity, unsubscribeMissedEmails } from './notifications.ts';
import { runDigestNow } from './digest.ts';
import { runRetentionNow } from './retention.ts';
import { addPushDevice, removePushDevice, removePushNotifications, sendTestPush } from './push.ts';
import { registerClientDevice, registerE2eeDevice, removeClientDevice, sendE2eeTestPush } from './push_e2ee.ts';
import { changeAlertWords, listAlertWords, muteUser } from './personal.ts';
import { readerViewQuery } from './reading.ts';
import { renderContent } from './render.ts';
import { isActiveUser } from './files.ts';
import { addUploadSpace, uploadSpace } from './upload_space.ts';
import { channelEmailAddress } from './channel_email.ts';
import { addRealmEmoji, deleteRealmEmoji, listRealmEmoji, realmEmojiImage } from './realm_emoji.ts';
import { topicHistory, updateUserTopic } from './user_topics.ts';
import { createScheduled, deleteScheduled, editScheduled, listScheduled } from './scheduled_messages.ts';
import { createReminder, deleteReminder, listReminders } from './reminders.ts';
import { reportMessage } from './message_report.ts';
import { serverSettings, snapshot } from './snapshot.ts';
import { listSubscriptions, subscribe, subscriptionStatus, userChannels } from './subscriptions.ts';
import { addDefaultStream, archiveStream, getStream, getStreamId, listDefaultStreams, listStreams, removeDefaultStream, streamMembers, updateStream } from './streams.ts';
import { unsubscribe, updateSubscriptionProperties } from './subscription_settings.ts';
import { updateRealm } from './realm_settings.ts';
import { testWelcomeBotCustomMessage } from './system_bots.ts';
import { convertDemoOrganization, setRealmDeactivated } from './organization.ts';
import { operatorIdentity, reloadClients, resetApiKey, setPassword } from './operator.ts';
import { writeCheckpoint } from './checkpoint_action.ts';
import { apiKeyForToken } from './token_login.ts';
import { setVideoProviderToken, videoProviderToken } from './video_calls.ts';
import { acceptInvite, createInvites, createMultiuseInvite, inviteInfo, listInvites, resendInvite, revokeInvite } from './invites.ts';
import { createLinkifier, deleteLinkifier, listLinkifiers, reorderLinkifiers, updateLinkifier } from './linkifiers.ts';
import { createPlayground, deletePlayground } from './playgrounds.ts';
import { deleteExport, exportConsents, exportFile, listExports, requestExport } from './realm_export.ts';
import { createDefaultChannelGroup, removeDefaultChannelGroup, updateDefaultChannelGroup, updateDefaultChannelGroupChannels } from './default_channel_groups.ts';
import { addRealmDomain, changeRealmDomain, listRealmDomains, removeRealmDomain } from './realm_domains.ts';
import { createFolder, listFolders, reorderFolders, updateFolder } from './channel_folders.ts';
import { authenticate, bootstrap, createUser, createUsers, deactivateSelf, deactivateUser, deleteUser, getOwnUser, getUser, listUsers, reactivateUser, updateUser } from './users.ts';
import { issueApiKey, passwordCheck, regenerateApiKey } from './api_keys.ts';
import { botApiKey, createBot, listBots, updateBot } from './bots.ts';
import { confirmEmailChange, updateSettings, updateUserDefaults } from './settings.ts';
import { getStatus, updateStatus } from './user_status.ts';
import { createGroup, deactivateGroup, groupMembers, groupSubgroups, isGroupMember, listGroups, updateGroup, updateGroupMembers } from './user_groups.ts';
import { createProfileField, deleteProfileField, listProfileFields, reorderProfileFields, updateOwnProfileData, updateProfileField } from './profile_fields.ts';

export const realmHandlers = {
  addUploadSpace,
  uploadSpace,
  channelEmailAddress,
  bootstrap,
  setRealmDeactivated,
  convertDemoOrganization,
  operatorIdentity,
  reloadClients,
  writeCheckpoint,
  resetApiKey,
  setPassword,
  authenticate,
  serverSettings,
  sendMessage,
  subscribe,
  listSubscriptions,
  subscriptionStatus,
  userChannels,
  snapshot,
  listUsers,
  createUser,
  createUsers,
  createBot,
  listBots,
  updateBot,
  botApiKey,
  messageSources,
  narrowForQueue,
  queueChannels,
  allPublicStreamsAccess,
  directory,
  createScheduledMessage: createScheduled,
  listScheduledMessages: listScheduled,
  editScheduledMessage: editScheduled,
  deleteScheduledMessage: deleteScheduled,
  createReminder,
  listReminders,
  deleteReminder,
  reportMessage,
  listStreams,
  getStream,
  getStreamId,
  streamMembers,
  updateStream,
  archiveStream,
  listDefaultStreams,
  addDefaultStream,
  removeDefaultStream,
  unsubscribe,
  updateSubscriptionProperties,
  updateRealm,
  testWelcomeBotCustomMessage,
  createChannelFolder: createFolder,
  listChannelFolders: listFolders,
  updateChannelFolder: updateFolder,
  reorderChannelFolders: reorderFolders,
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
  createDefaultChannelGroup,
  updateDefaultChannelGroup,
  updateDefaultChannelGroupChannels,
  removeDefaultChannelGroup,
  deletePlayground,
  requestExport,
  listExports,
  deleteExport,
  exportConsents,
  exportFile,
  apiKeyForToken,
  createInvites,
  createMultiuseInvite,
  listInvites,
  revokeInvite,
  resendInvite,
  inviteInfo,
  acceptInvite,
  setVideoProviderToken,
  videoProviderToken,
  getUser,
  getOwnUser,
  updateUser,
  deactivateUser,
  deleteUser,
  deactivateSelf,
  reactivateUser,
  passwordCheck,
  issueApiKey,
  regenerateApiKey,
  listProfileFields,
  createProfileField,
  updateProfileField,
  deleteProfileField,
  reorderProfileFields,
  updateOwnProfileData,
  updateSettings,
  confirmEmailChange,
  updateUserDefaults,
  updateStatus,
  getStatus,
  createGroup,
  listGroups,
  updateGroup,
  deactivateGroup,
  updateGroupMembers,
  groupMembers,
  isGroupMember,
  groupSubgroups,
  readerView: readerViewQuery,
  deleteMessage,
  deleteTopic,
  updateMessage,
  messageHistory,
  readReceipts,
  addReaction,
  removeReaction,
  updateUserTopic,
  topicHistory,
  typingAudience,
  editTypingAudience,
  presenceDirectory,
  noteActivity,
  unsubscribeMissedEmails,
  runDigestNow,
  runRetentionNow,
  addPushDevice,
  removePushDevice,
  removePushNotifications,
  registerE2eeDevice,
  sendE2eeTestPush,
  registerClientDevice,
  removeClientDevice,
  sendTestPush,
  presenceAccess,
  sendMessageWithTopicWildcard,
  renderContent,
  isActiveUser,
  muteUser,
  listAlertWords,
  changeAlertWords,
  addRealmEmoji,
  deleteRealmEmoji,
  listRealmEmoji,
  realmEmojiImage,
};
