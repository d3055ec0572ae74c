/** Drafts, saved snippets, navigation views, alert words and muted users: the current user's own lists. */
import { z } from 'zod';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { userActorId, userRef } from '../../actors/user/ref.ts';
import { bool, int, json, str } from '../params.ts';
import { type CallContext, caller, me, route } from '../route.ts';

const userActor = (ctx: CallContext) => userActorId(me(ctx).realmId, me(ctx).userId);
const realmActor = (ctx: CallContext) => realmActorId(me(ctx).realmId);
const Id = int().pipe(z.number().nonnegative({ message: 'must not be negative' }));

const Draft = z.object({
  type: z.enum(['', 'stream', 'private'], { message: "type must be '', 'stream' or 'private'" }),
  to: z.array(z.number().int()).default([]),
  topic: z.string().default(''),
  content: z.string(),
  timestamp: z.number().int().nullable().default(null),
});

export const listDrafts = route({ method: 'GET', path: '/drafts', auth: 'required', params: {}, handle: async (ctx) => ctx.actors.raw(userRef, userActor(ctx), { type: 'listDrafts', caller: caller(ctx) }) });

export const createDrafts = route({
  method: 'POST',
  path: '/drafts',
  auth: 'required',
  params: { drafts: json(z.array(Draft)) },
  handle: async (ctx, p) => ctx.actors.raw(userRef, userActor(ctx), { type: 'createDrafts', caller: caller(ctx), drafts: p.drafts }),
});

export const editDraft = route({
  method: 'PATCH',
  path: '/drafts/{draft_id}',
  auth: 'required',
  params: { draft_id: Id, draft: json(Draft) },
  handle: async (ctx, p) => ctx.actors.raw(userRef, userActor(ctx), { type: 'editDraft', caller: caller(ctx), id: p.draft_id, draft: p.draft }),
});

export const deleteDraft = route({
  method: 'DELETE',
  path: '/drafts/{draft_id}',
  auth: 'required',
  params: { draft_id: Id },
  handle: async (ctx, p) => ctx.actors.raw(userRef, userActor(ctx), { type: 'deleteDraft', caller: caller(ctx), id: p.draft_id }),
});

export const listSavedSnippets = route({ method: 'GET', path: '/saved_snippets', auth: 'required', params: {}, handle: async (ctx) => ctx.actors.raw(userRef, userActor(ctx), { type: 'listSavedSnippets', caller: caller(ctx) }) });

export const createSavedSnippet = route({
  method: 'POST',
  path: '/saved_snippets',
  auth: 'required',
  params: { title: str(), content: str() },
  handle: async (ctx, p) => ctx.actors.raw(userRef, userActor(ctx), { type: 'createSavedSnippet', caller: caller(ctx), title: p.title, content: p.content }),
});

export const editSavedSnippet = route({
  method: 'PATCH',
  path: '/saved_snippets/{saved_snippet_id}',
  auth: 'required',
  params: { saved_snippet_id: Id, title: str().optional(), content: str().optional() },
  handle: async (ctx, p) => ctx.actors.raw(userRef, userActor(ctx), { type: 'editSavedSnippet', caller: caller(ctx), id: p.saved_snippet_id, title: p.title ?? null, content: p.content ?? null }),
});

export const deleteSavedSnippet = route({
  method: 'DELETE',
  path: '/saved_snippets/{saved_snippet_id}',
  auth: 'required',
  params: { saved_snippet_id: Id },
  handle: async (ctx, p) => ctx.actors.raw(userRef, userActor(ctx), { type: 'deleteSavedSnippet', caller: caller(ctx), id: p.saved_snippet_id }),
});

export const listNavigationViews = route({ method: 'GET', path: '/navigation_views', auth: 'required', params: {}, handle: async (ctx) => ctx.actors.raw(userRef, userActor(ctx), { type: 'listNavigationViews', caller: caller(ctx) }) });

export const addNavigationView = route({
  method: 'POST',
  path: '/navigation_views',
  auth: 'required',
  params: { fragment: str(), is_pinned: bool(), name: str().optional() },
  handle: async (ctx, p) => ctx.actors.raw(userRef, userActor(ctx), { type: 'addNavigationView', caller: caller(ctx), fragment: p.fragment, isPinned: p.is_pinned, name: p.name ?? null }),
});

export const updateNavigationView = route({
  method: 'PATCH',
  path: '/navigation_views/{fragment}',
  pathTail: true,
  auth: 'required',
  params: { fragment: str(), is_pinned: bool().optional(), name: str().optional() },
  handle: async (ctx, p) => ctx.actors.raw(userRef, userActor(ctx), { type: 'updateNavigationView', caller: caller(ctx), fragment: p.fragment, isPinned: p.is_pinned ?? null, name: p.name ?? null }),
});

export const removeNavigationView = route({
  method: 'DELETE',
  path: '/navigation_views/{fragment}',
  pathTail: true,
  auth: 'required',
  params: { fragment: str() },
  handle: async (ctx, p) => ctx.actors.raw(userRef, userActor(ctx), { type: 'removeNavigationView', caller: caller(ctx), fragment: p.fragment }),
});

export const listAlertWords = route({ method: 'GET', path: '/users/me/alert_words', auth: 'required', params: {}, handle: async (ctx) => ctx.actors.raw(realmRef, realmActor(ctx), { type: 'listAlertWords', caller: caller(ctx) }) });

const Words = json(z.array(z.string()));

export const addAlertWords = route({
  method: 'POST',
  path: '/users/me/alert_words',
  auth: 'required',
  params: { alert_words: Words },
  handle: async (ctx, p) => ctx.actors.raw(realmRef, realmActor(ctx), { type: 'changeAlertWords', caller: caller(ctx), words: p.alert_words, add: true }),
});

export const removeAlertWords = route({
  method: 'DELETE',
  path: '/users/me/alert_words',
  auth: 'required',
  params: { alert_words: Words },
  handle: async (ctx, p) => ctx.actors.raw(realmRef, realmActor(ctx), { type: 'changeAlertWords', caller: caller(ctx), words: p.alert_words, add: false }),
});

export const muteUser = route({
  method: 'POST',
  path: '/users/me/muted_users/{muted_user_id}',
  auth: 'required',
  params: { muted_user_id: Id },
  // What the muted user already sent is marked read by the mute's follow-up (`markMutedRead`).
  handle: async (ctx, p) => ctx.actors.raw(realmRef, realmActor(ctx), { type: 'muteUser', caller: caller(ctx), mutedUserId: p.muted_user_id, mute: true }),
});

export const unmuteUser = route({
  method: 'DELETE',
  path: '/users/me/muted_users/{muted_user_id}',
  auth: 'required',
  params: { muted_user_id: Id },
  handle: async (ctx, p) => ctx.actors.raw(realmRef, realmActor(ctx), { type: 'muteUser', caller: caller(ctx), mutedUserId: p.muted_user_id, mute: false }),
});
