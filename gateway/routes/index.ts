/** Every route the gateway serves. */
import type { Route } from '../route.ts';
import { deleteQueue, getEvents, register } from './events.ts';
import { markAllAsRead, markStreamAsRead, markTopicAsRead, updateMessageFlags, updateMessageFlagsForNarrow } from './message_flags.ts';
import { deleteMessage, deleteTopic, messageHistory, updateMessage } from './message_edit.ts';
import { getMessage, matchesNarrow, topicHistory } from './message_reads.ts';
import { readReceipts } from './read_receipts.ts';
import { getMessages, renderMessage, sendMessage } from './messages.ts';
import * as personal from './personal.ts';
import { realmPresence, setEditTyping, setTyping, updatePresence, userPresence } from './presence.ts';
import { addReaction, removeReaction } from './reactions.ts';
import { createScheduledMessage, deleteScheduledMessage, editScheduledMessage, listScheduledMessages } from './scheduled_messages.ts';
import { createReminder, deleteReminder, listReminders } from './reminders.ts';
import { reportMessage } from './message_report.ts';
import { createChannel, listSubscriptions, subscribe, subscriptionStatus, userChannels } from './subscriptions.ts';
import { deactivateRealm, testWelcomeBotCustomMessage, updateRealm } from './realm.ts';
import { jwtFetchApiKey } from './jwt.ts';
import { createVideoCall, registerVideoProvider } from './video_calls.ts';
import { createZoomCall } from './zoom.ts';
import { createBigBlueButtonCall } from './bigbluebutton.ts';
import { createConstructorGroupsCall, createNextcloudTalkCall } from './call_providers.ts';
import { markOnboardingStep } from './onboarding.ts';
import { channelEmailAddress } from './channel_email.ts';
import { createInvites, createMultiuseInvite, listInvites, resendInvite, revokeInvite, revokeMultiuseInvite } from './invites.ts';
import { createLinkifier, deleteLinkifier, listLinkifiers, reorderLinkifiers, updateLinkifier } from './linkifiers.ts';
import { createPlayground, deletePlayground } from './playgrounds.ts';
import { deleteExport, exportConsents, listExports, requestExport } from './realm_export.ts';
import { createDefaultChannelGroup, removeDefaultChannelGroup, updateDefaultChannelGroup, updateDefaultChannelGroupChannels } from './default_channel_groups.ts';
import { addRealmDomain, changeRealmDomain, listRealmDomains, removeRealmDomain } from './realm_domains.ts';
import { createChannelFolder, listChannelFolders, reorderChannelFolders, updateChannelFolder } from './channel_folders.ts';
import { addDefaultStream, archiveStream, getStream, getStreamId, listDefaultStreams, listStreams, removeDefaultStream, streamMembers, unsubscribe, updateStream, updateSubscriptionProperties, updateSubscriptionProperty } from './streams.ts';
import * as bots from './bots.ts';
import * as botStorage from './bot_storage.ts';
import { createUser, deactivateSelf, deactivateUser, getOwnUser, getUser, listUsers, reactivateUser, serverSettings, updateUser } from './users.ts';
import { fetchApiKey, regenerateApiKey } from './api_keys.ts';
import { updateDisplaySettings, updateNotificationSettings, updateSettings, updateUserDefaults } from './settings.ts';
import { getStatus, updateStatus, updateUserStatus } from './user_status.ts';
import * as push from './push.ts';
import { createGroup, deactivateGroup, groupMembers, groupSubgroups, isGroupMember, listGroups, updateGroup, updateGroupMembers, updateGroupSubgroups } from './user_groups.ts';
import { createProfileField, deleteProfileField, listProfileFields, reorderProfileFields, updateOwnProfileData, updateProfileField } from './profile_fields.ts';
import { addRealmEmoji, deleteAttachment, deleteRealmEmoji, fileUrl, listAttachments, thumbnailStatus, listRealmEmoji, realmEmojiImage, uploadFile } from './uploads.ts';
import { updateMutedTopic, updateUserTopic } from './user_topics.ts';
import { openapiDocument } from './openapi.ts';

export const ROUTES: Route[] = [
  sendMessage,
  getMessages,
  renderMessage,
  subscribe,
  createChannel,
  listSubscriptions,
  subscriptionStatus,
  userChannels,
  register,
  getEvents,
  deleteQueue,
  listUsers,
  createUser,
  bots.createBot,
  bots.listBots,
  bots.updateBot,
  bots.getBotApiKey,
  botStorage.getBotStorage,
  botStorage.putBotStorage,
  botStorage.removeBotStorage,
  serverSettings,
  createScheduledMessage,
  listScheduledMessages,
  editScheduledMessage,
  deleteScheduledMessage,
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
  createDefaultChannelGroup,
  updateDefaultChannelGroup,
  updateDefaultChannelGroupChannels,
  removeDefaultChannelGroup,
  unsubscribe,
  updateSubscriptionProperties,
  updateSubscriptionProperty,
  updateRealm,
  testWelcomeBotCustomMessage,
  deactivateRealm,
  createChannelFolder,
  listChannelFolders,
  updateChannelFolder,
  reorderChannelFolders,
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
  jwtFetchApiKey,
  createInvites,
  createMultiuseInvite,
  listInvites,
  revokeInvite,
  revokeMultiuseInvite,
  resendInvite,
  registerVideoProvider,
  createVideoCall,
  createZoomCall,
  createBigBlueButtonCall,
  createConstructorGroupsCall,
  createNextcloudTalkCall,
  markOnboardingStep,
  channelEmailAddress,
  push.addApnsToken,
  push.removeApnsToken,
  push.addFcmToken,
  push.removeFcmToken,
  push.testPushNotification,
  push.registerE2eePushDevice,
  push.testE2eePushNotification,
  push.registerClientDevice,
  push.removeClientDevice,
  // People. Every /users/me route comes before the /users/{user_id} routes: the router takes the first match.
  getOwnUser,
  deactivateSelf,
  regenerateApiKey,
  updateOwnProfileData,
  updateStatus,
  getUser,
  getStatus,
  updateUserStatus,
  updateUser,
  deactivateUser,
  reactivateUser,
  fetchApiKey,
  listProfileFields,
  createProfileField,
  reorderProfileFields,
  updateProfileField,
  deleteProfileField,
  updateSettings,
  updateDisplaySettings,
  updateNotificationSettings,
  updateUserDefaults,
  createGroup,
  listGroups,
  updateGroup,
  deactivateGroup,
  updateGroupMembers,
  updateGroupSubgroups,
  groupMembers,
  isGroupMember,
  groupSubgroups,
  updateMessageFlags,
  updateMessageFlagsForNarrow,
  markAllAsRead,
  markStreamAsRead,
  markTopicAsRead,
  // Before GET /messages/{message_id}: the first route of a method that matches a path serves it.
  matchesNarrow,
  getMessage,
  updateMessage,
  deleteMessage,
  deleteTopic,
  messageHistory,
  readReceipts,
  addReaction,
  removeReaction,
  topicHistory,
  updateUserTopic,
  updateMutedTopic,
  setTyping,
  setEditTyping,
  updatePresence,
  realmPresence,
  userPresence,
  personal.listDrafts,
  personal.createDrafts,
  personal.editDraft,
  personal.deleteDraft,
  personal.listSavedSnippets,
  personal.createSavedSnippet,
  personal.editSavedSnippet,
  personal.deleteSavedSnippet,
  personal.listNavigationViews,
  personal.addNavigationView,
  personal.updateNavigationView,
  personal.removeNavigationView,
  personal.listAlertWords,
  personal.addAlertWords,
  personal.removeAlertWords,
  personal.muteUser,
  personal.unmuteUser,
  uploadFile,
  fileUrl,
  thumbnailStatus,
  listAttachments,
  deleteAttachment,
  addRealmEmoji,
  deleteRealmEmoji,
  listRealmEmoji,
  realmEmojiImage,
  openapiDocument,
];
