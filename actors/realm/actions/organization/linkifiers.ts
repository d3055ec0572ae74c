/**
 * Linkifiers: GET /realm/linkifiers, POST /realm/filters, PATCH and DELETE
 * /realm/filters/{filter_id}, PATCH /realm/linkifiers (order). Administrators
 * manage them; each change sends everyone the whole list in a
 * `realm_linkifiers` event, only to clients that declared
 * `linkifier_url_template` (the others get an empty list at register and no
 * events, as Zulip does). Messages sent afterwards are rendered with them.
 */
import { z } from 'zod';
import { ApiError, badRequest } from '../../../../lib/errors.ts';
import { checkUrlTemplate, fillReverseTemplate, LinkifierError, reverseTemplateVariables, translatePattern } from '../../../../lib/linkifiers.ts';
import { type LinkifierRecord, T } from '../../../../storage/tables.ts';
import { toRealm } from '../../../events/delivery.ts';
import type { LinkifierObject } from '../../../events/schema.ts';
import { isAdmin } from '../../../model.ts';
import { defineAction, defineQuery } from '../../../runtime/action.ts';
import { actingUser } from '../../rules/access.ts';
import type { RealmState } from '../../state/state.ts';

const action = defineAction<RealmState>();
const query = defineQuery<RealmState>();

export const formatLinkifier = (l: LinkifierRecord): LinkifierObject => ({
  id: l.id,
  pattern: l.pattern,
  url_template: l.urlTemplate,
  example_input: l.exampleInput,
  reverse_template: l.reverseTemplate,
  alternative_url_templates: l.alternativeUrlTemplates,
});

export const linkifiersOf = (state: Readonly<RealmState>): LinkifierObject[] => state.org.orderedLinkifiers().map(formatLinkifier);

/** An invalid field: the message, and Zulip's `errors` by field. */
const invalid = (field: string, msg: string) => badRequest(msg, { errors: { [field]: [msg] } });

const Fields = z.object({
  pattern: z.string(),
  urlTemplate: z.string(),
  exampleInput: z.string().nullable().optional(),
  reverseTemplate: z.string().nullable().optional(),
  alternativeUrlTemplates: z.array(z.string()).optional(),
});
type Fields = z.infer<typeof Fields>;

/** Validates a linkifier as Zulip's `RealmFilter.clean` does, plus the reverse-template check. */
function checkLinkifier(f: Fields, old: LinkifierRecord | null): Omit<LinkifierRecord, 'id' | 'order'> {
  const pattern = f.pattern.trim();
  if (!pattern) throw invalid('pattern', 'This field cannot be blank.');
  let groups: string[];
  let regex: RegExp;
  try {
    const t = translatePattern(pattern);
    groups = t.groups;
    regex = new RegExp(`^(?:${t.source})$`, t.flags);
  } catch (err) {
    if (err instanceof LinkifierError) throw invalid('pattern', `Bad regular expression: ${err.message}`);
    throw err;
  }
  let vars: string[];
  try {
    vars = checkUrlTemplate(f.urlTemplate);
  } catch (err) {
    if (err instanceof LinkifierError) throw invalid('url_template', 'Invalid URL template.');
    throw err;
  }
  const missingInPattern = vars.filter((v) => !groups.includes(v)).sort();
  if (missingInPattern.length) throw invalid('__all__', `Group '${missingInPattern[0]}' in URL template is not present in linkifier pattern.`);
  const missingInUrl = groups.filter((g) => !vars.includes(g)).sort();
  if (missingInUrl.length) throw invalid('__all__', `Group '${missingInUrl[0]}' in linkifier pattern is not present in URL template.`);
  const alternatives = f.alternativeUrlTemplates ?? old?.alternativeUrlTemplates ?? [];
  for (const alt of alternatives) {
    try {
      checkUrlTemplate(alt);
    } catch {
      throw invalid('alternative_url_templates', 'Invalid URL template.');
    }
  }
  // An empty string resets to null (FL 471); absent keeps the old value.
  const exampleInput = f.exampleInput === undefined ? (old?.exampleInput ?? null) : f.exampleInput || null;
  const reverseTemplate = f.reverseTemplate === undefined ? (old?.reverseTemplate ?? null) : f.reverseTemplate || null;
  if (exampleInput !== null) {
    const m = regex.exec(exampleInput);
    if (!m) throw invalid('example_input', 'Example input does not match the linkifier pattern.');
    if (reverseTemplate !== null) {
      const unknown = reverseTemplateVariables(reverseTemplate).filter((v) => !groups.includes(v));
      if (unknown.length) throw invalid('reverse_template', `Group '${unknown[0]}' in reverse template is not present in linkifier pattern.`);
      if (fillReverseTemplate(reverseTemplate, m.groups ?? {}) !== exampleInput) throw invalid('reverse_template', 'Reverse template does not reproduce the example input.');
    }
  } else if (reverseTemplate !== null) throw invalid('example_input', 'An example input is required with a reverse template.');
  return { pattern, urlTemplate: f.urlTemplate, exampleInput, reverseTemplate, alternativeUrlTemplates: alternatives };
}

function requireAdmin(state: Readonly<RealmState>, caller: { realmId: number; userId: number | null }): void {
  if (!isAdmin(actingUser(state, caller))) throw new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator', 400);
}

function linkifierOf(state: Readonly<RealmState>, id: number): LinkifierRecord {
  const l = state.org.linkifiers.get(id);
  if (!l) throw badRequest('Linkifier not found.');
  return l;
}

/** The whole list, for clients that declared `linkifier_url_template`. */
function linkifiersEvent(state: Readonly<RealmState>) {
  return [toRealm(state.realmId, { type: 'realm_linkifiers', realm_linkifiers: linkifiersOf(state) }, { capability: { name: 'linkifier_url_template', value: true } })];
}

export const listLinkifiers = query({
  type: 'listLinkifiers',
  fields: z.object({}),
  run(state, msg) {
    actingUser(state, msg.caller);
    return { linkifiers: linkifiersOf(state) };
  },
});

export const createLinkifier = action({
  type: 'createLinkifier',
  fields: Fields,
  check(state, msg) {
    requireAdmin(state, msg.caller);
    return { ...checkLinkifier(msg, null), order: Math.max(-1, ...[...state.org.linkifiers.values()].map((l) => l.order)) + 1 };
  },
  apply(state, p, tx) {
    const l: LinkifierRecord = { ...p, id: state.org.take('linkifier', state.realmId, tx) };
    state.org.setLinkifier(l);
    tx.write(T.linkifiers.at(state.realmId, l.id).put(l));
    return { id: l.id };
  },
  events: (state) => linkifiersEvent(state),
});

export const updateLinkifier = action({
  type: 'updateLinkifier',
  fields: Fields.extend({ id: z.number().int() }),
  check(state, msg) {
    requireAdmin(state, msg.caller);
    const old = linkifierOf(state, msg.id);
    return { ...old, ...checkLinkifier(msg, old) };
  },
  apply(state, l, tx) {
    state.org.setLinkifier(l);
    tx.write(T.linkifiers.at(state.realmId, l.id).put(l));
    return {};
  },
  events: (state) => linkifiersEvent(state),
});

export const deleteLinkifier = action({
  type: 'deleteLinkifier',
  fields: z.object({ id: z.number().int() }),
  check(state, msg) {
    requireAdmin(state, msg.caller);
    return linkifierOf(state, msg.id);
  },
  apply(state, l, tx) {
    state.org.deleteLinkifier(l.id);
    tx.write(T.linkifiers.at(state.realmId, l.id).delete());
    return {};
  },
  events: (state) => linkifiersEvent(state),
});

export const reorderLinkifiers = action({
  type: 'reorderLinkifiers',
  fields: z.object({ order: z.array(z.number().int()) }),
  check(state, msg) {
    requireAdmin(state, msg.caller);
    if (new Set(msg.order).size !== msg.order.length) throw badRequest('The ordered list must not contain duplicated linkifiers');
    const ids = new Set(state.org.linkifiers.keys());
    if (msg.order.length !== ids.size || msg.order.some((id) => !ids.has(id))) throw badRequest('The ordered list must enumerate all existing linkifiers exactly once');
    return msg.order;
  },
  apply(state, order, tx) {
    order.forEach((id, i) => {
      const l = { ...state.org.linkifiers.get(id)!, order: i };
      state.org.setLinkifier(l);
      tx.write(T.linkifiers.at(state.realmId, id).put(l));
    });
    return {};
  },
  events: (state) => linkifiersEvent(state),
});
