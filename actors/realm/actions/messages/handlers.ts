/** The realm's handlers for messages: sends, edits, reactions, reads, scheduled messages and reminders. */
import { deleteTopic } from './delete_topic.ts';
import { editTypingAudience, presenceAccess, presenceDirectory, typingAudience } from './ephemeral.ts';
import { deleteMessage, messageHistory, updateMessage } from './message_edit.ts';
import { reportMessage } from './message_report.ts';
import { allPublicStreamsAccess, directory, messageSources, narrowForQueue, queueChannels, sendMessage, sendMessageWithTopicWildcard } from './messages.ts';
import { addReaction, removeReaction } from './reactions.ts';
import { readReceipts } from './read_receipts.ts';
import { readerViewQuery } from './reading.ts';
import { createReminder, deleteReminder, listReminders } from './reminders.ts';
import { renderContent } from './render.ts';
import { runRetentionNow } from './retention.ts';
import { createScheduled, deleteScheduled, editScheduled, listScheduled } from './scheduled_messages.ts';
import { topicHistory, updateUserTopic } from './user_topics.ts';

export const messagesHandlers = {
  sendMessage,
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
  runRetentionNow,
  presenceAccess,
  sendMessageWithTopicWildcard,
  renderContent,
};
