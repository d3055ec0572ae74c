/** The realm's handlers for users, bots, groups, settings and invitations. */
import { issueApiKey, passwordCheck, regenerateApiKey } from './api_keys.ts';
import { botApiKey, createBot, listBots, updateBot } from './bots.ts';
import { acceptInvite, createInvites, createMultiuseInvite, inviteInfo, listInvites, resendInvite, revokeInvite } from './invites.ts';
import { operatorIdentity, reloadClients, resetApiKey, setPassword } from './operator.ts';
import { changeAlertWords, listAlertWords, muteUser } from './personal.ts';
import { createProfileField, deleteProfileField, listProfileFields, reorderProfileFields, updateOwnProfileData, updateProfileField } from './profile_fields.ts';
import { confirmEmailChange, updateSettings, updateUserDefaults } from './settings.ts';
import { apiKeyForToken } from './token_login.ts';
import { createGroup, deactivateGroup, groupMembers, groupSubgroups, isGroupMember, listGroups, updateGroup, updateGroupMembers } from './user_groups.ts';
import { getStatus, updateStatus } from './user_status.ts';
import { authenticate, bootstrap, createUser, createUsers, deactivateSelf, deactivateUser, deleteUser, getOwnUser, getUser, listUsers, reactivateUser, updateUser } from './users.ts';

export const peopleHandlers = {
  bootstrap,
  operatorIdentity,
  reloadClients,
  resetApiKey,
  setPassword,
  authenticate,
  listUsers,
  createUser,
  createUsers,
  createBot,
  listBots,
  updateBot,
  botApiKey,
  apiKeyForToken,
  createInvites,
  createMultiuseInvite,
  listInvites,
  revokeInvite,
  resendInvite,
  inviteInfo,
  acceptInvite,
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
  muteUser,
  listAlertWords,
  changeAlertWords,
};
