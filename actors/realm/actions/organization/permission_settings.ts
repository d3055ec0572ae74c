/**
 * `server_supported_permission_settings` in POST /register (FL 221, 225):
 * for every group-setting permission this server acts on, what values it
 * takes and its default, from the same entries that check a new value
 * (`checkPermissionConfig`): the organization's (`REALM_GROUP_SETTINGS`,
 * less those stored without effect), the channels' (`CHANNEL_PERMISSIONS`)
 * and the user groups' (`GROUP_PERMISSIONS`).
 */
import { GROUP_PERMISSIONS, type PermissionConfig } from '../../rules/groups.ts';
import { NO_EFFECT_GROUP_SETTINGS, REALM_GROUP_SETTINGS } from './realm_settings.ts';
import { CHANNEL_PERMISSIONS } from '../channels/streams.ts';

export interface SupportedPermissionSettings {
  realm: Record<string, PermissionConfig>;
  stream: Record<string, PermissionConfig>;
  group: Record<string, PermissionConfig>;
}

const sortedKeys = <V>(o: Readonly<Record<string, V>>): Record<string, V> => Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b)));

let built: SupportedPermissionSettings | undefined;

/** The same for every organization and viewer: built once. */
export function supportedPermissionSettings(): SupportedPermissionSettings {
  built ??= {
    realm: sortedKeys(Object.fromEntries(Object.entries(REALM_GROUP_SETTINGS).filter(([k]) => !NO_EFFECT_GROUP_SETTINGS.has(k)).map(([k, v]) => [k, v.config]))),
    stream: sortedKeys(CHANNEL_PERMISSIONS),
    group: sortedKeys(GROUP_PERMISSIONS),
  };
  return built;
}
