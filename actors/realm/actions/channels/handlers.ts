/** The realm's handlers for channels and subscriptions. */
import { channelEmailAddress } from './channel_email.ts';
import { createFolder, listFolders, reorderFolders, updateFolder } from './channel_folders.ts';
import { createDefaultChannelGroup, removeDefaultChannelGroup, updateDefaultChannelGroup, updateDefaultChannelGroupChannels } from './default_channel_groups.ts';
import { addDefaultStream, archiveStream, getStream, getStreamId, listDefaultStreams, listStreams, removeDefaultStream, streamMembers, updateStream } from './streams.ts';
import { unsubscribe, updateSubscriptionProperties } from './subscription_settings.ts';
import { listSubscriptions, subscribe, subscriptionStatus, userChannels } from './subscriptions.ts';

export const channelsHandlers = {
  channelEmailAddress,
  subscribe,
  listSubscriptions,
  subscriptionStatus,
  userChannels,
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
  createChannelFolder: createFolder,
  listChannelFolders: listFolders,
  updateChannelFolder: updateFolder,
  reorderChannelFolders: reorderFolders,
  createDefaultChannelGroup,
  updateDefaultChannelGroup,
  updateDefaultChannelGroupChannels,
  removeDefaultChannelGroup,
};
