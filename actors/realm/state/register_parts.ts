/**
 * The parts of the register snapshot that do not depend on who asks, kept
 * encoded (issue 20): `realm_users` and `realm_non_active_users` as a
 * user who may see everyone gets them, and `realm_user_groups` (the system
 * groups list every member), are O(users) to build and ~390 B per user to
 * encode, and every client registers again after a deploy. Built
 * once as UTF-8 bytes, and deflated once for the clients that accept gzip,
 * they cross the bus and the gateway as those bytes (`JsonPieces`), never
 * parsed, encoded or compressed again per register (`withParts`).
 *
 * A part reflects the realm's state at one version: the number of changes
 * made so far to what it is made of (user rows and custom profile fields,
 * or an event about users). The realm's host calls `noteChange` after each
 * change is applied, in the mailbox (`ActorKindDef.changed`); a change to a
 * source moves the version on and drops the parts, so the next register
 * builds them again from the state it reads. A snapshot therefore shows the
 * same state whether its parts were cached or built for it, and snapshot plus
 * the events queued after it stays exact.
 *
 * Parts that depend on the viewer (a guest's restricted view, the user's own
 * settings, subscriptions, unreads) are computed per register as before.
 */
import { type DeflatedPiece, deflatePieceAsync } from '../../../lib/gzip-join.ts';
import type { WriteOp } from '../../../storage/store.ts';
import { T } from '../../../storage/tables.ts';
import type { Delivery } from '../../events/delivery.ts';
import { type EncodedJson, JsonPieces, JsonText } from '../../runtime/bus.ts';
import type { RealmState } from './state.ts';

/**
 * What each group of parts is made of: the tables a change writes and the
 * events it sends when it may alter them. `people`: `userObject` reads a
 * user row and the custom profile fields its data names; `groupObjects` the
 * groups, the users' roles (system groups) and the realm's record (events
 * about them come with a write to those tables, and are checked for as
 * well). `status`: everyone's `user_status`, from the user rows and the
 * users' settings (`away` is the `presence_enabled` setting); apart, so a
 * user's setting change does not drop the megabytes of `realm_users`.
 */
const GROUPS = {
  people: {
    tables: new Set([T.users.schema.name, T.profileFields.schema.name, T.userGroups.schema.name, T.realms.schema.name]),
    events: new Set(['realm_user', 'realm_bot', 'custom_profile_fields', 'user_group']),
  },
  status: {
    tables: new Set([T.users.schema.name, T.userSettings.schema.name]),
    events: new Set(['realm_user', 'user_status', 'user_settings', 'update_global_notifications']),
  },
} satisfies Record<string, { tables: ReadonlySet<string>; events: ReadonlySet<string> }>;

export type PartGroup = keyof typeof GROUPS;

/**
 * One part at one version: its JSON as UTF-8 bytes, and those bytes
 * deflated as a piece of a gzip stream (`lib/gzip-join.ts`), made on the
 * first register that accepts gzip after a change (on libuv's threads), and
 * then shared by every such register until the next change.
 */
export class CachedPart {
  private zipped: Promise<DeflatedPiece> | null = null;
  constructor(readonly bytes: Buffer) {}

  deflated(): Promise<DeflatedPiece> {
    if (!this.zipped) {
      this.zipped = deflatePieceAsync(this.bytes, PART_LEVEL);
      this.zipped.catch(() => (this.zipped = null)); // the next register tries again
    }
    return this.zipped;
  }
}

/** zlib's level for the parts: compressed once per change and sent many times, they are worth its default. */
const PART_LEVEL = 6;

class Parts {
  /** Changes made to the sources since the realm was loaded. */
  version = 0;
  /** Part name -> the part, at `version`. */
  readonly parts = new Map<string, CachedPart>();
  builds = 0;
}

const partsByRealm = new WeakMap<Readonly<RealmState>, Record<PartGroup, Parts>>();

function partsOf(state: Readonly<RealmState>, group: PartGroup = 'people'): Parts {
  let p = partsByRealm.get(state);
  if (!p) partsByRealm.set(state, (p = { people: new Parts(), status: new Parts() }));
  return p[group];
}

/** Drops the parts a change made stale (the realm's `changed` hook). */
export function noteChange(state: Readonly<RealmState>, writes: readonly WriteOp[], events: readonly Delivery[]): void {
  for (const group of Object.keys(GROUPS) as PartGroup[]) {
    const { tables, events: types } = GROUPS[group];
    const touches = writes.some((w) => tables.has(w.table)) || events.some((d) => d.kind === 'event' && types.has(d.event.type));
    if (!touches) continue;
    const p = partsOf(state, group);
    p.version++;
    p.parts.clear();
  }
}

/** Part `name` of `group` at the current version: cached, or built by `build` now. */
export function encodedPart(state: Readonly<RealmState>, name: string, build: () => unknown, group: PartGroup = 'people'): CachedPart {
  const p = partsOf(state, group);
  let part = p.parts.get(name);
  if (part === undefined) {
    part = new CachedPart(Buffer.from(JSON.stringify(build())));
    p.parts.set(name, part);
    p.builds++;
  }
  return part;
}

/** The version the `people` parts reflect and how often they were built (tests, `parley cluster status`, the presence actor's directory version). */
export function partsStats(state: Readonly<RealmState>): { version: number; builds: number; cached: number } {
  const p = partsOf(state);
  return { version: p.version, builds: p.builds, cached: p.parts.size };
}

/**
 * How a snapshot's caller takes the parts: spliced into the reply's text
 * (`text`, for a caller that reads the value), or as pieces that cross the
 * bus and reach the client as the bytes they are (`utf8`), or as deflated
 * pieces of a gzip stream (`deflated`, for a client that accepts gzip).
 */
export type PartsForm = 'text' | 'utf8' | 'deflated';

/**
 * One JSON object, `{...rest, name: <part>}`, from an object's text and
 * parts, in the form the caller takes. `rest` must not have those names.
 */
export function withParts(restText: string, parts: ReadonlyArray<readonly [string, CachedPart]>, form: PartsForm): JsonText | Promise<JsonPieces> {
  if (parts.length === 0) return new JsonText(restText);
  const heads = parts.map(([name], i) => (i === 0 ? '{' : ',') + JSON.stringify(name) + ':');
  const tail = restText === '{}' ? '}' : ',' + restText.slice(1);
  if (form === 'text') return new JsonText(heads.map((h, i) => h + parts[i]![1].bytes.toString()).join('') + tail);
  const encoded = parts.map(([, part]) => (form === 'utf8' ? Promise.resolve<EncodedJson>({ utf8: part.bytes }) : part.deflated().then((deflated): EncodedJson => ({ deflated }))));
  return Promise.all(encoded).then((done) => new JsonPieces([...heads.flatMap((h, i) => [h, done[i]!]), tail]));
}
