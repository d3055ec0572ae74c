/**
 * Code playgrounds: POST /realm/playgrounds and DELETE
 * /realm/playgrounds/{playground_id} (FL 49; `url_template` since FL 196).
 * Administrators manage them; every change sends every active user the whole
 * list in a `realm_playgrounds` event, as Zulip's `notify_realm_playgrounds`.
 * Clients offer "view in playground" on code blocks whose
 * `data-code-language` names a playground's language.
 */
import { z } from 'zod';
import { ApiError, badRequest } from '../../../../lib/errors.ts';
import { checkUrlTemplate, LinkifierError } from '../../../../lib/linkifiers.ts';
import { type PlaygroundRecord, T } from '../../../../storage/tables.ts';
import { toRealm } from '../../../events/delivery.ts';
import type { PlaygroundObject } from '../../../events/schema.ts';
import { isAdmin } from '../../../model.ts';
import { defineAction } from '../../../runtime/action.ts';
import { actingUser } from '../../rules/access.ts';
import type { RealmState } from '../../state/state.ts';

const action = defineAction<RealmState>();

/** Zulip's `RealmPlayground.MAX_PYGMENTS_LANGUAGE_LENGTH`. */
export const MAX_PYGMENTS_LANGUAGE_LENGTH = 40;
/** The characters a code block's language may have (Zulip's fenced-code language). */
const LANGUAGE = /^[a-zA-Z0-9_+\-./#]+$/;

export const formatPlayground = (p: PlaygroundRecord): PlaygroundObject => ({ id: p.id, name: p.name, pygments_language: p.pygmentsLanguage, url_template: p.urlTemplate });

export const playgroundsOf = (state: Readonly<RealmState>): PlaygroundObject[] => [...state.org.playgrounds.values()].sort((a, b) => a.id - b.id).map(formatPlayground);

/** An invalid field: the message, and Zulip's `errors` by field (its ValidationFailureError). */
const invalid = (field: string, msg: string) => badRequest(msg, { errors: { [field]: [msg] } });

function requireAdmin(state: Readonly<RealmState>, caller: { realmId: number; userId: number | null }): void {
  if (!isAdmin(actingUser(state, caller))) throw new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator', 400);
}

/** Validates a playground as Zulip's `RealmPlayground.full_clean` does. */
function checkPlayground(state: Readonly<RealmState>, name: string, language: string, urlTemplate: string): Omit<PlaygroundRecord, 'id'> {
  if (!name) throw invalid('name', 'This field cannot be blank.');
  if (!language) throw invalid('pygments_language', 'This field cannot be blank.');
  if (language.length > MAX_PYGMENTS_LANGUAGE_LENGTH) throw badRequest(`pygments_language is too long (limit: ${MAX_PYGMENTS_LANGUAGE_LENGTH} characters)`);
  if (!LANGUAGE.test(language)) throw badRequest('Invalid characters in pygments language');
  let vars: string[];
  try {
    vars = checkUrlTemplate(urlTemplate);
  } catch (err) {
    if (err instanceof LinkifierError) throw invalid('url_template', 'Invalid URL template.');
    throw err;
  }
  if (!vars.includes('code')) throw invalid('__all__', 'Missing the required variable "code" in the URL template');
  if (new Set(vars).size !== 1) throw invalid('__all__', '"code" should be the only variable present in the URL template');
  for (const p of state.org.playgrounds.values()) {
    if (p.name === name && p.pygmentsLanguage === language) throw invalid('__all__', 'Realm playground with this Realm, Pygments language and Name already exists.');
  }
  return { name, pygmentsLanguage: language, urlTemplate };
}

function playgroundsEvent(state: Readonly<RealmState>) {
  return [toRealm(state.realmId, { type: 'realm_playgrounds', realm_playgrounds: playgroundsOf(state) })];
}

export const createPlayground = action({
  type: 'createPlayground',
  fields: z.object({ name: z.string(), pygmentsLanguage: z.string(), urlTemplate: z.string() }),
  check(state, msg) {
    requireAdmin(state, msg.caller);
    return checkPlayground(state, msg.name.trim(), msg.pygmentsLanguage.trim(), msg.urlTemplate.trim());
  },
  apply(state, p, tx) {
    const playground: PlaygroundRecord = { ...p, id: state.org.take('playground', state.realmId, tx) };
    state.org.playgrounds.set(playground.id, playground);
    tx.write(T.playgrounds.at(state.realmId, playground.id).put(playground));
    return { id: playground.id };
  },
  events: (state) => playgroundsEvent(state),
});

export const deletePlayground = action({
  type: 'deletePlayground',
  fields: z.object({ id: z.number().int() }),
  check(state, msg) {
    requireAdmin(state, msg.caller);
    const p = state.org.playgrounds.get(msg.id);
    if (!p) throw badRequest('Invalid playground');
    return p;
  },
  apply(state, p, tx) {
    state.org.playgrounds.delete(p.id);
    tx.write(T.playgrounds.at(state.realmId, p.id).delete());
    return {};
  },
  events: (state) => playgroundsEvent(state),
});
