/** Every route the gateway serves. */
import type { Route } from '../route.ts';
import { deleteQueue, getEvents, register } from './events.ts';
import { markAllAsRead, markStreamAsRead, markTopicAsRead, updateMessageFlags, updateMessageFlagsForNarrow } from './message_flags.ts';
import { deleteMessage, messageHistory, updateMessage } from './message_edit.ts';
import { getMessage, matchesNarrow, topicHistory } from './message_reads.ts';
import { getMessages, sendMessage } from './messages.ts';
import * as personal from './personal.ts';
import { realmPresence, setTyping, updatePresence, userPresence } from './presence.ts';
import { addReaction, removeReaction } from './reactions.ts';
import { createScheduledMessage, deleteScheduledMessage, editScheduledMessage, listScheduledMessages } from './scheduled_messages.ts';
import { listSubscriptions, subscribe } from './subscriptions.ts';
import { addRealmEmoji, deleteRealmEmoji, downloadFile, listRealmEmoji, realmEmojiImage, uploadFile } from './uploads.ts';
import { updateUserTopic } from './user_topics.ts';
import { createUser, listUsers, serverSettings } from './users.ts';

export const ROUTES: Route[] = [
  sendMessage,
  getMessages,
  subscribe,
  listSubscriptions,
  register,
  getEvents,
  deleteQueue,
  listUsers,
  createUser,
  serverSettings,
  createScheduledMessage,
  listScheduledMessages,
  editScheduledMessage,
  deleteScheduledMessage,
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
  messageHistory,
  addReaction,
  removeReaction,
  topicHistory,
  updateUserTopic,
  setTyping,
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
  personal.listAlertWords,
  personal.addAlertWords,
  personal.removeAlertWords,
  personal.muteUser,
  personal.unmuteUser,
  uploadFile,
  downloadFile,
  addRealmEmoji,
  deleteRealmEmoji,
  listRealmEmoji,
  realmEmojiImage,
];
