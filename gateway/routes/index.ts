/** Every route the gateway serves. */
import type { Route } from '../route.ts';
import { deleteQueue, getEvents, register } from './events.ts';
import { getMessages, sendMessage } from './messages.ts';
import { createScheduledMessage, deleteScheduledMessage, editScheduledMessage, listScheduledMessages } from './scheduled_messages.ts';
import { listSubscriptions, subscribe } from './subscriptions.ts';
import { createUser, listUsers, serverSettings } from './users.ts';
import { updateRealm } from './realm.ts';
import { jwtFetchApiKey } from './jwt.ts';
import { createVideoCall, registerVideoProvider } from './video_calls.ts';
import { createInvites, createMultiuseInvite, listInvites, resendInvite, revokeInvite, revokeMultiuseInvite } from './invites.ts';
import { createLinkifier, deleteLinkifier, listLinkifiers, reorderLinkifiers, updateLinkifier } from './linkifiers.ts';
import { createChannelFolder, listChannelFolders, reorderChannelFolders, updateChannelFolder } from './channel_folders.ts';
import { addDefaultStream, archiveStream, getStream, getStreamId, listDefaultStreams, listStreams, removeDefaultStream, streamMembers, unsubscribe, updateStream, updateSubscriptionProperties, updateSubscriptionProperty } from './streams.ts';

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
  updateSubscriptionProperty,
  updateRealm,
  createChannelFolder,
  listChannelFolders,
  updateChannelFolder,
  reorderChannelFolders,
  listLinkifiers,
  createLinkifier,
  updateLinkifier,
  deleteLinkifier,
  reorderLinkifiers,
  jwtFetchApiKey,
  createInvites,
  createMultiuseInvite,
  listInvites,
  revokeInvite,
  revokeMultiuseInvite,
  resendInvite,
  registerVideoProvider,
  createVideoCall,
];
