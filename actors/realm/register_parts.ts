/**
 * The parts of the register snapshot that do not depend on who asks, kept
 * as JSON text (issue 20): `realm_users` and `realm_non_active_users` as a
 * user who may see everyone gets them, and `realm_user_groups` (the system
 * groups list every member), are O(users) to build and ~390 B per user to
 * encode, and every client registers again after a deploy. Built
 * once, they are spliced into the reply text (`snapshot.ts`), which crosses
 * the bus and the gateway without being parsed or encoded again.
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
import type { WriteOp } from '../../storage/store.ts';
import { T } from '../../storage/tables.ts';
import type { Delivery } from '../events/delivery.ts';
import type { RealmState } from './state.ts';

/**
 * The tables whose rows the cached parts are made of: `userObject` reads a
 * user row and the custom profile fields its data names; `groupObjects`
 * the groups, the users' roles (system groups) and the realm's record.
 */
const SOURCE_TABLES: ReadonlySet<string> = new Set([T.users.schema.name, T.profileFields.schema.name, T.userGroups.schema.name, T.realms.schema.name]);
/** Events about what the parts show; each comes with a write to a source table, and is checked for as well. */
const SOURCE_EVENTS: ReadonlySet<string> = new Set(['realm_user', 'realm_bot', 'custom_profile_fields', 'user_group']);

class Parts {
  /** Changes made to the sources since the realm was loaded. */
  version = 0;
  /** Part name -> its JSON text, at `version`. */
  readonly texts = new Map<string, string>();
  builds = 0;
}

const partsByRealm = new WeakMap<Readonly<RealmState>, Parts>();

function partsOf(state: Readonly<RealmState>): Parts {
  let p = partsByRealm.get(state);
  if (!p) partsByRealm.set(state, (p = new Parts()));
  return p;
}

/** Drops the parts a change made stale (the realm's `changed` hook). */
export function noteChange(state: Readonly<RealmState>, writes: readonly WriteOp[], events: readonly Delivery[]): void {
  const touches = writes.some((w) => SOURCE_TABLES.has(w.table)) || events.some((d) => d.kind === 'event' && SOURCE_EVENTS.has(d.event.type));
  if (!touches) return;
  const p = partsOf(state);
  p.version++;
  p.texts.clear();
}

/** The JSON text of part `name` at the current version: cached, or built by `build` now. */
export function encodedPart(state: Readonly<RealmState>, name: string, build: () => unknown): string {
  const p = partsOf(state);
  let text = p.texts.get(name);
  if (text === undefined) {
    text = JSON.stringify(build());
    p.texts.set(name, text);
    p.builds++;
  }
  return text;
}

/** The version the parts reflect and how often they were built (tests, `parley cluster status`). */
export function partsStats(state: Readonly<RealmState>): { version: number; builds: number; cached: number } {
  const p = partsOf(state);
  return { version: p.version, builds: p.builds, cached: p.texts.size };
}

/**
 * One JSON object's text from an object's text and members given as JSON
 * text: `{...rest, name: <text>}` without encoding the texts again. `rest`
 * must not have those names.
 */
export function withEncoded(restText: string, encoded: ReadonlyArray<readonly [string, string]>): string {
  // Joined with `+` only: V8 then links the texts instead of copying them (a join or a slice would copy megabytes).
  let out = '{';
  for (const [name, text] of encoded) out = out + JSON.stringify(name) + ':' + text + ',';
  return restText === '{}' ? out.slice(0, -1) + '}' : out + restText.slice(1);
}
