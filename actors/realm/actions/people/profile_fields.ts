/**
 * Custom profile fields: the realm's fields (GET, POST, PATCH, DELETE and
 * reorder /realm/profile_fields) and users' values for them (PATCH
 * /users/me/profile_data, and `profile_data` of PATCH /users/{id}). A
 * field's values live on the user records; values of a deleted field are
 * never shown (field IDs are not reused).
 */
import { z } from 'zod';
import { adminRequired, badRequest } from '../../../../lib/errors.ts';
import { type ProfileFieldRecord, T, type UserRecord } from '../../../../storage/tables.ts';
import { type Delivery, toRealm } from '../../../events/delivery.ts';
import type { ProfileFieldObject } from '../../../events/schema.ts';
import { isAdmin } from '../../../model.ts';
import { defineAction, defineQuery, type Tx } from '../../../runtime/action.ts';
import { actingUser } from '../../rules/access.ts';
import { renderDescription } from '../../rules/markdown.ts';
import { RENDERED_FIELD_TYPES, userUpdate } from '../../rules/people.ts';
import type { RealmState } from '../../state/state.ts';

const action = defineAction<RealmState>();
const query = defineQuery<RealmState>();

export const FIELD_TYPES = { SHORT_TEXT: 1, LONG_TEXT: 2, SELECT: 3, DATE: 4, URL: 5, USER: 6, EXTERNAL_ACCOUNT: 7, PRONOUNS: 8 } as const;
const TYPE_NAMES: Record<number, [string, string]> = {
  1: ['SHORT_TEXT', 'Text (short)'],
  2: ['LONG_TEXT', 'Text (long)'],
  3: ['SELECT', 'List of options'],
  4: ['DATE', 'Date'],
  5: ['URL', 'Link'],
  6: ['USER', 'Users'],
  7: ['EXTERNAL_ACCOUNT', 'External account'],
  8: ['PRONOUNS', 'Pronouns'],
};
const NAME_MAX = 40;
const HINT_MAX = 80;
const SHORT_MAX = 50;
const LONG_MAX = 500;
export const MAX_SUMMARY_FIELDS = 2;

/** The external accounts with a built-in name, hint and URL pattern (type 7). */
const EXTERNAL_ACCOUNTS: Record<string, { text: string; url_pattern: string; name: string; hint: string }> = {
  github: { text: 'GitHub', url_pattern: 'https://github.com/%(username)s', name: 'GitHub username', hint: 'Enter your GitHub username' },
  twitter: { text: 'Twitter', url_pattern: 'https://twitter.com/%(username)s', name: 'Twitter username', hint: 'Enter your Twitter username' },
};

/** `realm_default_external_accounts` of the register response: the built-in external account subtypes. */
export const defaultExternalAccounts = (): Record<string, { text: string; url_pattern: string; name: string; hint: string }> => structuredClone(EXTERNAL_ACCOUNTS);

/** `custom_profile_field_types` of the register response. */
export const FIELD_TYPE_DESCRIPTIONS = Object.fromEntries(Object.entries(TYPE_NAMES).map(([id, [key, name]]) => [key, { id: Number(id), name }]));

export function formatField(f: ProfileFieldRecord): ProfileFieldObject {
  return {
    id: f.id,
    name: f.name,
    hint: f.hint,
    type: f.fieldType,
    field_data: f.fieldData,
    order: f.order,
    ...(f.displayInProfileSummary ? { display_in_profile_summary: true } : {}),
    required: f.required,
    editable_by_user: f.editableByUser,
    ...(f.useForUserMatching ? { use_for_user_matching: true as const } : {}),
  };
}

/** The realm's fields in display order. */
export function fieldObjects(state: Readonly<RealmState>): ProfileFieldObject[] {
  return [...state.profileFields.values()].sort((a, b) => a.order - b.order || a.id - b.id).map(formatField);
}

function fieldsEvent(state: Readonly<RealmState>): Delivery {
  return toRealm(state.realmId, { type: 'custom_profile_fields', fields: fieldObjects(state) });
}

// ---- field definitions -------------------------------------------------------

const SelectChoices = z.record(z.string(), z.object({ text: z.string(), order: z.string() }).strict());

/** Checks `field_data` for a field type; returns it as stored (JSON text, '' when unused). */
function checkFieldData(type: number, data: unknown): string {
  if (type === FIELD_TYPES.SELECT) {
    const r = SelectChoices.safeParse(data ?? {});
    if (!r.success) throw badRequest('field_data is not a dict of choices, each with text and order');
    const choices = Object.entries(r.data);
    if (choices.length === 0) throw badRequest('Field must have at least one choice.');
    const texts = new Set<string>();
    for (const [key, c] of choices) {
      if (!key.trim()) throw badRequest('Choice keys must not be empty');
      if (!c.text.trim()) throw badRequest(`field_data["${key}"]["text"] cannot be blank.`);
      if (!/^\d+$/.test(c.order)) throw badRequest(`field_data["${key}"]["order"] is not an integer`);
      if (texts.has(c.text)) throw badRequest(`Field must not have duplicate choices.`);
      texts.add(c.text);
    }
    return JSON.stringify(r.data);
  }
  if (type === FIELD_TYPES.EXTERNAL_ACCOUNT) {
    const d = (data ?? {}) as { subtype?: unknown; url_pattern?: unknown };
    if (typeof d !== 'object' || Array.isArray(d) || typeof d.subtype !== 'string') throw badRequest('field_data["subtype"] is missing');
    if (d.subtype === 'custom') {
      if (typeof d.url_pattern !== 'string' || !d.url_pattern.includes('%(username)s')) throw badRequest('Custom external account must define URL pattern');
      return JSON.stringify({ subtype: 'custom', url_pattern: d.url_pattern });
    }
    if (!(d.subtype in EXTERNAL_ACCOUNTS)) throw badRequest('Invalid external account type');
    return JSON.stringify({ subtype: d.subtype });
  }
  return '';
}

interface FieldSpec {
  name: string | null;
  hint: string | null;
  fieldData: unknown;
  displayInProfileSummary: boolean | null;
  required: boolean | null;
  editableByUser: boolean | null;
  useForUserMatching: boolean | null;
}

const FieldFields = {
  name: z.string().nullable(),
  hint: z.string().nullable(),
  fieldData: z.unknown(),
  displayInProfileSummary: z.boolean().nullable(),
  required: z.boolean().nullable(),
  editableByUser: z.boolean().nullable(),
  useForUserMatching: z.boolean().nullable(),
};

/** The field a create or update results in; throws the API error for a rule it breaks. */
function checkField(state: Readonly<RealmState>, base: ProfileFieldRecord, spec: FieldSpec, creating: boolean): ProfileFieldRecord {
  const type = base.fieldType;
  let fieldData = base.fieldData;
  if (spec.fieldData !== undefined && spec.fieldData !== null) fieldData = checkFieldData(type, spec.fieldData);
  else if (creating) fieldData = checkFieldData(type, type === FIELD_TYPES.SELECT || type === FIELD_TYPES.EXTERNAL_ACCOUNT ? undefined : null);
  let name = spec.name?.trim() ?? base.name;
  let hint = spec.hint ?? base.hint;
  if (type === FIELD_TYPES.EXTERNAL_ACCOUNT) {
    const subtype = (JSON.parse(fieldData) as { subtype: string }).subtype;
    const preset = EXTERNAL_ACCOUNTS[subtype];
    // Built-in external accounts have a fixed name and hint.
    if (preset) {
      if (!creating && ((spec.name !== null && spec.name.trim() !== base.name) || (spec.hint !== null && spec.hint !== base.hint))) throw badRequest('Default custom field cannot be updated.');
      name = preset.name;
      hint = preset.hint;
    }
  }
  if (!name) throw badRequest('Label cannot be blank.');
  if ([...name].length > NAME_MAX) throw badRequest(`name is too long (limit: ${NAME_MAX} characters)`);
  if ([...hint].length > HINT_MAX) throw badRequest(`hint is too long (limit: ${HINT_MAX} characters)`);
  for (const f of state.profileFields.values()) if (f.id !== base.id && f.name.toLowerCase() === name.toLowerCase()) throw badRequest('A field with that label already exists.');
  const summary = spec.displayInProfileSummary ?? base.displayInProfileSummary;
  if (summary) {
    if (type === FIELD_TYPES.USER) throw badRequest(`Field type not supported for display in profile summary.`);
    const others = [...state.profileFields.values()].filter((f) => f.id !== base.id && f.displayInProfileSummary).length;
    if (others >= MAX_SUMMARY_FIELDS) throw badRequest(`Only ${MAX_SUMMARY_FIELDS} custom profile fields can be displayed in the profile summary.`);
  }
  const matching = spec.useForUserMatching ?? base.useForUserMatching;
  if (matching && type !== FIELD_TYPES.SHORT_TEXT && type !== FIELD_TYPES.EXTERNAL_ACCOUNT) throw badRequest('Only text and external account fields can be used for user matching.');
  return {
    ...base,
    name,
    hint,
    fieldData,
    displayInProfileSummary: summary,
    required: spec.required ?? base.required,
    editableByUser: spec.editableByUser ?? base.editableByUser,
    useForUserMatching: matching,
  };
}

function requireAdmin(state: Readonly<RealmState>, caller: { realmId: number; userId: number | null }): UserRecord {
  const actor = actingUser(state, caller);
  if (!isAdmin(actor)) throw adminRequired();
  return actor;
}

function field(state: Readonly<RealmState>, id: number): ProfileFieldRecord {
  const f = state.profileFields.get(id);
  if (!f) throw badRequest(`Field id ${id} not found.`);
  return f;
}

export const listProfileFields = query({
  type: 'listProfileFields',
  fields: z.object({}),
  run(state, msg) {
    actingUser(state, msg.caller);
    return { custom_fields: fieldObjects(state) };
  },
});

export const createProfileField = action({
  type: 'createProfileField',
  fields: z.object({ fieldType: z.number().int(), ...FieldFields }),
  check(state, msg) {
    requireAdmin(state, msg.caller);
    if (!(msg.fieldType in TYPE_NAMES)) throw badRequest('Invalid field type.');
    const order = Math.max(0, ...[...state.profileFields.values()].map((f) => f.order + 1));
    const base: ProfileFieldRecord = { id: -1, name: '', hint: '', fieldType: msg.fieldType, fieldData: '', order, displayInProfileSummary: false, required: false, editableByUser: true, useForUserMatching: false };
    return checkField(state, base, msg, true);
  },
  apply(state, f, tx) {
    const id = state.take('profileField', tx);
    const record = { ...f, id };
    state.profileFields.set(id, record);
    tx.write(T.profileFields.at(state.realmId, id).put(record));
    return { id };
  },
  events: (state) => [fieldsEvent(state)],
});

export const updateProfileField = action({
  type: 'updateProfileField',
  fields: z.object({ id: z.number().int(), ...FieldFields }),
  check(state, msg) {
    requireAdmin(state, msg.caller);
    return checkField(state, field(state, msg.id), msg, false);
  },
  apply(state, f, tx) {
    state.profileFields.set(f.id, f);
    tx.write(T.profileFields.at(state.realmId, f.id).put(f));
    return {};
  },
  events: (state) => [fieldsEvent(state)],
});

export const deleteProfileField = action({
  type: 'deleteProfileField',
  fields: z.object({ id: z.number().int() }),
  check(state, msg) {
    requireAdmin(state, msg.caller);
    return field(state, msg.id);
  },
  apply(state, f, tx) {
    state.profileFields.delete(f.id);
    tx.write(T.profileFields.at(state.realmId, f.id).delete());
    return {};
  },
  events: (state) => [fieldsEvent(state)],
});

export const reorderProfileFields = action({
  type: 'reorderProfileFields',
  fields: z.object({ order: z.array(z.number().int()) }),
  check(state, msg) {
    requireAdmin(state, msg.caller);
    const ids = [...state.profileFields.keys()];
    if (msg.order.length !== ids.length || new Set(msg.order).size !== ids.length || !msg.order.every((id) => state.profileFields.has(id))) throw badRequest('Invalid order mapping.');
    return msg.order;
  },
  apply(state, order, tx) {
    order.forEach((id, i) => {
      const f = { ...state.profileFields.get(id)!, order: i + 1 };
      state.profileFields.set(id, f);
      tx.write(T.profileFields.at(state.realmId, id).put(f));
    });
    return {};
  },
  events: (state) => [fieldsEvent(state)],
});

// ---- users' values -----------------------------------------------------------

/** One requested change of a user's value: null (or empty) removes it. */
export const ProfileDataEntry = z.object({ id: z.number().int(), value: z.union([z.string(), z.array(z.number().int()), z.null()]) });
export type ProfileDataEntry = z.infer<typeof ProfileDataEntry>;

/** A checked change: the value as stored, or null to remove it. */
export type ProfileChange = { id: number; value: string | number[] | null };

function isUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname.includes('.');
  } catch {
    return false;
  }
}

function isDate(s: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
  if (!m) return false;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return d.getUTCFullYear() === Number(m[1]) && d.getUTCMonth() === Number(m[2]) - 1 && d.getUTCDate() === Number(m[3]);
}

/** Checks a value against its field's type: returns it as stored, or throws the field's error. */
function checkValue(state: Readonly<RealmState>, f: ProfileFieldRecord, value: string | number[]): string | number[] {
  const name = f.name;
  if (f.fieldType === FIELD_TYPES.USER) {
    if (!Array.isArray(value)) throw badRequest(`${name} is not a list`);
    for (const id of value) {
      const u = state.users.get(id);
      if (!u) throw badRequest(`Invalid user ID: ${id}`);
      if (!u.isActive) throw badRequest(`User with ID ${id} is deactivated`);
      if (u.isBot) throw badRequest(`User with ID ${id} is a bot`);
    }
    return [...new Set(value)];
  }
  if (typeof value !== 'string') throw badRequest(`${name} is not a string`);
  switch (f.fieldType) {
    case FIELD_TYPES.LONG_TEXT:
      if ([...value].length > LONG_MAX) throw badRequest(`${name} is too long (limit: ${LONG_MAX} characters)`);
      return value;
    case FIELD_TYPES.SELECT: {
      const choices = JSON.parse(f.fieldData || '{}') as Record<string, unknown>;
      if (!(value in choices)) throw badRequest(`'${value}' is not a valid choice for '${name}'.`);
      return value;
    }
    case FIELD_TYPES.DATE:
      if (!isDate(value)) throw badRequest(`${name} is not a date`);
      return value;
    case FIELD_TYPES.URL:
      if (!isUrl(value)) throw badRequest(`${name} is not a URL`);
      return value;
    default:
      if ([...value].length > SHORT_MAX) throw badRequest(`${name} is too long (limit: ${SHORT_MAX} characters)`);
      return value;
  }
}

/**
 * Checks changes to `target`'s values. `asAdmin`: the caller administers
 * the organization, and may edit fields users cannot edit themselves.
 * Returns only the changes that change something.
 */
export function checkProfileData(state: Readonly<RealmState>, target: UserRecord, entries: ProfileDataEntry[], asAdmin: boolean): ProfileChange[] {
  const out: ProfileChange[] = [];
  for (const e of entries) {
    const f = state.profileFields.get(e.id);
    if (!f) throw badRequest(`Field id ${e.id} not found.`);
    if (!asAdmin && !f.editableByUser) throw badRequest('You are not allowed to change this field. Contact an administrator to update it.');
    const empty = e.value === null || e.value === '' || (Array.isArray(e.value) && e.value.length === 0);
    const value = empty ? null : checkValue(state, f, e.value!);
    const current = target.profileData[String(e.id)];
    if (JSON.stringify(current ?? null) !== JSON.stringify(value)) out.push({ id: e.id, value });
  }
  return out;
}

/** Applies checked changes to a user's record and records the write. */
export function applyProfileData(state: RealmState, userId: number, changes: ProfileChange[], tx: Tx): void {
  if (changes.length === 0) return;
  const u = state.users.get(userId)!;
  const profileData = { ...u.profileData };
  for (const c of changes) {
    if (c.value === null) delete profileData[String(c.id)];
    else profileData[String(c.id)] = c.value;
  }
  const next = { ...u, profileData };
  state.indexUser(next);
  tx.write(T.users.at(state.realmId, userId).put(next));
}

/** The `realm_user` update events for changed values. */
export function profileDataEvents(state: Readonly<RealmState>, userId: number, changes: ProfileChange[]): Delivery[] {
  return changes.map((c) => {
    const f = state.profileFields.get(c.id)!;
    const value = c.value === null ? null : typeof c.value === 'string' ? c.value : JSON.stringify(c.value);
    const rendered = value !== null && RENDERED_FIELD_TYPES.has(f.fieldType) ? { rendered_value: renderDescription(value) } : {};
    return userUpdate(state, userId, { user_id: userId, custom_profile_field: { id: c.id, value, ...rendered } });
  });
}

export const updateOwnProfileData = action({
  type: 'updateOwnProfileData',
  fields: z.object({ data: z.array(ProfileDataEntry) }),
  check(state, msg) {
    const user = actingUser(state, msg.caller);
    return { userId: user.id, changes: checkProfileData(state, user, msg.data, isAdmin(user)) };
  },
  apply(state, p, tx) {
    applyProfileData(state, p.userId, p.changes, tx);
    return {};
  },
  events: (state, p) => profileDataEvents(state, p.userId, p.changes),
});
