/** Every message the realm actor takes, by type. */
import { directory, messageSources, narrowForQueue, sendMessage, sendMessageWithTopicWildcard } from './messages.ts';
import { deleteMessage, messageHistory, updateMessage } from './message_edit.ts';
import { addReaction, removeReaction } from './reactions.ts';
import { presenceDirectory, typingAudience } from './ephemeral.ts';
import { changeAlertWords, listAlertWords, muteUser } from './personal.ts';
import { readerViewQuery } from './reading.ts';
import { addRealmEmoji, deleteRealmEmoji, listRealmEmoji, realmEmojiImage } from './realm_emoji.ts';
import { topicHistory, updateUserTopic } from './user_topics.ts';
import { createScheduled, deleteScheduled, editScheduled, listScheduled } from './scheduled_messages.ts';
import { serverSettings, snapshot } from './snapshot.ts';
import { listSubscriptions, subscribe } from './subscriptions.ts';
import { authenticate, bootstrap, createUser, listUsers } from './users.ts';

export const realmHandlers = {
  bootstrap,
  authenticate,
  serverSettings,
  sendMessage,
  subscribe,
  listSubscriptions,
  snapshot,
  listUsers,
  createUser,
  messageSources,
  narrowForQueue,
  directory,
  createScheduledMessage: createScheduled,
  listScheduledMessages: listScheduled,
  editScheduledMessage: editScheduled,
  deleteScheduledMessage: deleteScheduled,
  readerView: readerViewQuery,
  deleteMessage,
  updateMessage,
  messageHistory,
  addReaction,
  removeReaction,
  updateUserTopic,
  topicHistory,
  typingAudience,
  presenceDirectory,
  sendMessageWithTopicWildcard,
  muteUser,
  listAlertWords,
  changeAlertWords,
  addRealmEmoji,
  deleteRealmEmoji,
  listRealmEmoji,
  realmEmojiImage,
};
