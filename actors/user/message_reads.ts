/**
 * Reads of messages by ID: GET /messages/{message_id} and GET
 * /messages/matches_narrow (with search highlighting, as Zulip's
 * `get_search_fields`).
 */
import { z } from 'zod';
import { badRequest } from '../../lib/errors.ts';
import { matchesNarrow as matches, NarrowTermSchema, type NarrowTerm } from '../../lib/narrow.ts';

import { formatMessage } from '../format.ts';
import { inSource } from '../model.ts';
import { realmActorId, realmRef } from '../realm/ref.ts';
import { defineQuery, later } from '../runtime/action.ts';
import type { UserState } from './actor.ts';
import { readMessages } from './flags.ts';
import { MessageReader, messageView } from './messages.ts';

const query = defineQuery<UserState>();

const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Wraps the search words found in the text (not the markup) of `html` in highlight spans. */
export function highlight(html: string, words: string[]): string {
  if (!words.length) return html;
  const re = new RegExp(`(${words.map((w) => escapeRegExp(escapeHtml(w))).join('|')})`, 'gi');
  return html.replace(/(<[^>]*>)|([^<]+)/g, (_all, tag: string | undefined, text: string | undefined) => tag ?? text!.replace(re, '<span class="highlight">$1</span>'));
}

/** The search words of a narrow's positive `search` terms. */
const searchWords = (narrow: NarrowTerm[]): string[] =>
  narrow
    .filter((t) => t.operator === 'search' && !t.negated)
    .flatMap((t) => String(t.operand).split(/\s+/))
    .filter(Boolean);

/** For a search narrow, Zulip's match_content and match_subject with the search words highlighted (none otherwise). */
export function searchFields(m: { renderedContent: string; topic: string }, narrow: NarrowTerm[]): { match_content?: string; match_subject?: string } {
  const words = searchWords(narrow);
  if (!words.length) return {};
  return { match_content: highlight(m.renderedContent, words), match_subject: highlight(escapeHtml(m.topic), words) };
}

export const getMessage = query({
  type: 'getMessage',
  fields: z.object({ id: z.number().int(), applyMarkdown: z.boolean(), clientExtavatar: z.boolean(), allowEmptyTopicName: z.boolean().default(false) }),
  run(s, msg, ctx) {
    const r = new MessageReader(ctx.store, s.realmId, s.userId, s.marks.readBelow, new Set(s.marks.unreadRows));
    return later(async () => {
      const realm = realmActorId(s.realmId);
      const view = await ctx.actors.call(realmRef, realm, { type: 'readerView', caller: msg.caller });
      const [m] = await readMessages(ctx.store, s.realmId, [msg.id]);
      const src = m && view.sources.find((x) => x.recipientKey === m.recipientKey && inSource(x, m.id));
      if (!m || !src) throw badRequest('Invalid message(s)');
      const flags = await r.flagsFor(m, src);
      const names = await ctx.actors.call(realmRef, realm, { type: 'directory', caller: msg.caller, userIds: [m.senderId, ...(m.dmUserIds ?? [])], channelIds: m.streamId === null ? [] : [m.streamId] });
      const format = { ...msg, emptyTopicDisplayName: msg.allowEmptyTopicName ? null : view.emptyTopicDisplayName };
      return { raw_content: m.content, message: { ...formatMessage(m, names, format), flags } };
    });
  },
});

export const matchesNarrowQuery = query({
  type: 'matchesNarrow',
  fields: z.object({ ids: z.array(z.number().int()), narrow: z.array(NarrowTermSchema) }),
  run(s, msg, ctx) {
    const r = new MessageReader(ctx.store, s.realmId, s.userId, s.marks.readBelow, new Set(s.marks.unreadRows));
    return later(async () => {
      const realm = realmActorId(s.realmId);
      if (msg.narrow.some((t) => t.operator === 'with')) throw badRequest("Invalid narrow operator: 'with' cannot be matched against messages");
      const { narrow, sources } = await ctx.actors.call(realmRef, realm, { type: 'messageSources', caller: msg.caller, narrow: msg.narrow, with: null });
      const bySource = new Map(sources.map((x) => [x.recipientKey, x]));
      const words = searchWords(narrow);
      const out: Record<string, { match_content: string; match_subject: string }> = {};
      for (const m of await readMessages(ctx.store, s.realmId, msg.ids)) {
        const src = bySource.get(m.recipientKey);
        // As in Zulip, only messages the user received (has flags of their own for) are checked.
        if (!src || src.receivedFrom === null || m.id < src.receivedFrom || !inSource(src, m.id)) continue;
        if (!matches(narrow, messageView(m, await r.flagsFor(m, src)))) continue;
        out[String(m.id)] = { match_content: highlight(m.renderedContent, words), match_subject: highlight(escapeHtml(m.topic), words) };
      }
      return { messages: out };
    });
  },
});
