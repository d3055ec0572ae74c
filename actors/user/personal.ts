/**
 * Drafts (Zulip's `actions/drafts.py`) and saved snippets (FL 297): the
 * user's own objects, kept by the user actor, one partition each per user.
 */
import { z } from 'zod';
import { badRequest } from '../../lib/errors.ts';
import { type DraftRecord, type SavedSnippetRecord, T, type UserCounters } from '../../storage/tables.ts';
import { toUsers } from '../events/delivery.ts';
import type { DraftObject, SavedSnippetObject } from '../events/schema.ts';
import { channelRecipientKey } from '../model.ts';
import { realmActorId, realmRef } from '../realm/ref.ts';
import { defineAction, defineQuery, type Tx } from '../runtime/action.ts';
import type { ActorContext } from '../runtime/context.ts';
import type { UserState } from './actor.ts';

const action = defineAction<UserState>();
const query = defineQuery<UserState>();

export const MAX_SNIPPET_TITLE_LENGTH = 60;
const MAX_MESSAGE_LENGTH = 10000;

export const formatDraft = (d: DraftRecord): DraftObject => ({ id: d.id, type: d.type, to: d.to, topic: d.topic, content: d.content, timestamp: d.timestamp });
export const formatSnippet = (s: SavedSnippetRecord): SavedSnippetObject => ({ id: s.id, title: s.title, content: s.content, date_created: s.dateCreated });
export const draftsOf = (s: Readonly<UserState>) => [...s.drafts.values()].sort((a, b) => a.timestamp - b.timestamp || a.id - b.id).map(formatDraft);
export const snippetsOf = (s: Readonly<UserState>) => [...s.snippets.values()].sort((a, b) => a.id - b.id).map(formatSnippet);

const DraftInput = z.object({ type: z.enum(['', 'stream', 'private']), to: z.array(z.number().int()), topic: z.string(), content: z.string(), timestamp: z.number().int().nullable() });
type DraftInput = z.infer<typeof DraftInput>;

function takeId(s: UserState, tx: Tx, kind: keyof UserCounters): number {
  const id = s.counters[kind]++;
  tx.write(T.userCounters.at(s.realmId, s.userId).put({ ...s.counters }));
  return id;
}

/** What drafts are checked against: the channels the user may post to see and the active users. */
async function draftFacts(s: Readonly<UserState>, ctx: ActorContext) {
  const caller = { realmId: s.realmId, userId: s.userId };
  const [view, dir, snap] = await Promise.all([
    ctx.actors.call(realmRef, realmActorId(s.realmId), { type: 'readerView', caller }),
    ctx.actors.call(realmRef, realmActorId(s.realmId), { type: 'presenceDirectory', caller }),
    // The realm owns the user's settings.
    ctx.actors.call(realmRef, realmActorId(s.realmId), { type: 'snapshot', caller, fetch: ['user_settings'], clientExtavatar: true, includeSubscribers: 'false' }),
  ]);
  const settings = (snap as { user_settings?: Record<string, unknown> }).user_settings ?? {};
  return { channels: new Set(view.sources.map((x) => x.recipientKey)), users: new Set((dir.users ?? []).map((u) => u.user_id)), syncDrafts: settings.enable_drafts_synchronization !== false };
}

/** Zulip's further_validated_draft_dict: a checked draft, without its ID. */
function checkDraft(s: Readonly<UserState>, d: DraftInput, facts: Awaited<ReturnType<typeof draftFacts>>): Omit<DraftRecord, 'id'> {
  if (!facts.syncDrafts) throw badRequest('User has disabled synchronizing drafts.');
  const content = d.content.trimEnd();
  if (!content.trim()) throw badRequest('Content must not be empty');
  if ([...content].length > MAX_MESSAGE_LENGTH) throw badRequest(`Message must not be longer than ${MAX_MESSAGE_LENGTH} characters`);
  const timestamp = d.timestamp ?? Math.floor(Date.now() / 1000);
  if (timestamp < 0) throw badRequest('Timestamp must not be negative.');
  const topic = d.type === 'stream' ? d.topic.trim() : '';
  if (d.type === 'stream') {
    if (d.to.length !== 1) throw badRequest('Must specify exactly 1 channel ID for channel messages');
    if (!facts.channels.has(channelRecipientKey(d.to[0]!))) throw badRequest('Invalid channel ID');
  } else if (d.type === 'private') {
    for (const id of d.to) if (!facts.users.has(id)) throw badRequest(`Invalid user ID ${id}`);
  } else if (d.to.length) throw badRequest('Must not specify recipients for a draft without a type');
  return { type: d.type, to: d.type === 'private' ? [...new Set(d.to)].sort((a, b) => a - b) : d.to, topic, content, timestamp };
}

export const listDrafts = query({
  type: 'listDrafts',
  fields: z.object({}),
  run(s) {
    const drafts = draftsOf(s);
    return { count: drafts.length, drafts };
  },
});

export const createDrafts = action({
  type: 'createDrafts',
  fields: z.object({ drafts: z.array(DraftInput) }),
  prepare: (s, _msg, ctx) => draftFacts(s, ctx),
  check(s, msg, facts) {
    return { drafts: msg.drafts.map((d) => checkDraft(s, d, facts)), made: [] as DraftRecord[] };
  },
  apply(s, p, tx) {
    for (const d of p.drafts) {
      const draft: DraftRecord = { ...d, id: takeId(s, tx, 'draft') };
      s.drafts.set(draft.id, draft);
      tx.write(T.userDrafts.at(s.realmId, s.userId, draft.id).put(draft));
      p.made.push(draft);
    }
    return { ids: p.made.map((d) => d.id) };
  },
  events: (s, p) => [toUsers(s.realmId, [s.userId], { type: 'drafts', op: 'add', drafts: p.made.map(formatDraft) })],
});

export const editDraft = action({
  type: 'editDraft',
  fields: z.object({ id: z.number().int(), draft: DraftInput }),
  prepare: (s, _msg, ctx) => draftFacts(s, ctx),
  check(s, msg, facts) {
    if (!s.drafts.has(msg.id)) throw badRequest('Draft does not exist');
    return { draft: { ...checkDraft(s, msg.draft, facts), id: msg.id } };
  },
  apply(s, p, tx) {
    s.drafts.set(p.draft.id, p.draft);
    tx.write(T.userDrafts.at(s.realmId, s.userId, p.draft.id).put(p.draft));
    return {};
  },
  events: (s, p) => [toUsers(s.realmId, [s.userId], { type: 'drafts', op: 'update', draft: formatDraft(p.draft) })],
});

export const deleteDraft = action({
  type: 'deleteDraft',
  fields: z.object({ id: z.number().int() }),
  check(s, msg) {
    if (!s.drafts.has(msg.id)) throw badRequest('Draft does not exist');
    return msg.id;
  },
  apply(s, id, tx) {
    s.drafts.delete(id);
    tx.write(T.userDrafts.at(s.realmId, s.userId, id).delete());
    return {};
  },
  events: (s, id) => [toUsers(s.realmId, [s.userId], { type: 'drafts', op: 'remove', draft_id: id })],
});

/**
 * Turning drafts synchronization off deletes the drafts stored on the server,
 * without events: clients stop syncing, they do not lose their local copies
 * (Zulip's behaviour).
 */
export const discardDrafts = action({
  type: 'discardDrafts',
  fields: z.object({}),
  check: (s) => [...s.drafts.keys()],
  apply(s, ids, tx) {
    for (const id of ids) {
      s.drafts.delete(id);
      tx.write(T.userDrafts.at(s.realmId, s.userId, id).delete());
    }
    return { removed: ids.length };
  },
});

function checkSnippetText(title: string | null, content: string | null): void {
  if (title !== null && !title.trim()) throw badRequest('Title cannot be empty.');
  if (title !== null && [...title].length > MAX_SNIPPET_TITLE_LENGTH) throw badRequest(`Title is too long (limit: ${MAX_SNIPPET_TITLE_LENGTH} characters)`);
  if (content !== null && !content.trim()) throw badRequest('Content cannot be empty.');
  if (content !== null && [...content].length > MAX_MESSAGE_LENGTH) throw badRequest(`Content is too long (limit: ${MAX_MESSAGE_LENGTH} characters)`);
}

export const listSnippets = query({
  type: 'listSavedSnippets',
  fields: z.object({}),
  run: (s) => ({ saved_snippets: snippetsOf(s) }),
});

export const createSnippet = action({
  type: 'createSavedSnippet',
  fields: z.object({ title: z.string(), content: z.string() }),
  check(_s, msg) {
    checkSnippetText(msg.title, msg.content);
    return { title: msg.title.trim(), content: msg.content };
  },
  apply(s, p, tx) {
    const snippet: SavedSnippetRecord = { id: takeId(s, tx, 'snippet'), title: p.title, content: p.content, dateCreated: Math.floor(Date.now() / 1000) };
    s.snippets.set(snippet.id, snippet);
    tx.write(T.savedSnippets.at(s.realmId, s.userId, snippet.id).put(snippet));
    return snippet;
  },
  events: (s, _p, snippet) => [toUsers(s.realmId, [s.userId], { type: 'saved_snippets', op: 'add', saved_snippet: formatSnippet(snippet) })],
  reply: (snippet) => ({ saved_snippet_id: snippet.id }),
});

export const editSnippet = action({
  type: 'editSavedSnippet',
  fields: z.object({ id: z.number().int(), title: z.string().nullable(), content: z.string().nullable() }),
  check(s, msg) {
    const old = s.snippets.get(msg.id);
    if (!old) throw badRequest('Saved snippet does not exist.');
    if (msg.title === null && msg.content === null) throw badRequest('Nothing to update');
    checkSnippetText(msg.title, msg.content);
    return { ...old, title: msg.title?.trim() ?? old.title, content: msg.content ?? old.content };
  },
  apply(s, snippet, tx) {
    s.snippets.set(snippet.id, snippet);
    tx.write(T.savedSnippets.at(s.realmId, s.userId, snippet.id).put(snippet));
    return {};
  },
  events: (s, snippet) => [toUsers(s.realmId, [s.userId], { type: 'saved_snippets', op: 'update', saved_snippet: formatSnippet(snippet) })],
});

export const deleteSnippet = action({
  type: 'deleteSavedSnippet',
  fields: z.object({ id: z.number().int() }),
  check(s, msg) {
    if (!s.snippets.has(msg.id)) throw badRequest('Saved snippet does not exist.');
    return msg.id;
  },
  apply(s, id, tx) {
    s.snippets.delete(id);
    tx.write(T.savedSnippets.at(s.realmId, s.userId, id).delete());
    return {};
  },
  events: (s, id) => [toUsers(s.realmId, [s.userId], { type: 'saved_snippets', op: 'remove', saved_snippet_id: id })],
});
