/**
 * Navigation views (FL 390, Zulip's `actions/navigation_views.py`): the
 * user's settings for the left sidebar's views, kept by the user actor, one
 * row per view in the user's partition. A built-in view (inbox, recent
 * conversations, ...) is stored only once the user changes it, and has no
 * name; any other fragment is a custom view and must have one.
 */
import { z } from 'zod';
import { ApiError, badRequest } from '../../lib/errors.ts';
import { type NavigationViewRecord, T } from '../../storage/tables.ts';
import { toUsers } from '../events/delivery.ts';
import type { NavigationViewObject } from '../events/schema.ts';
import { defineAction, defineQuery } from '../runtime/action.ts';
import type { UserState } from './actor.ts';

const action = defineAction<UserState>();
const query = defineQuery<UserState>();

/** The fragments of the web app's built-in views (Zulip's BUILT_IN_VIEW_FRAGMENTS). */
export const BUILT_IN_VIEW_FRAGMENTS: ReadonlySet<string> = new Set(['inbox', 'recent', 'feed', 'drafts', 'narrow/has/reaction/sender/me', 'narrow/is/mentioned', 'narrow/is/starred']);

/**
 * Parley's own bound on a fragment (Zulip's is a text column): the fragment
 * is the row's key, and a store key has a size limit (lmdb: 1978 bytes).
 */
export const MAX_FRAGMENT_LENGTH = 400;

export const formatNavigationView = (v: NavigationViewRecord): NavigationViewObject => ({ fragment: v.fragment, is_pinned: v.isPinned, name: v.name });
/** The user's views in the order they were made (Zulip's: by row ID). */
export const navigationViewsOf = (s: Readonly<UserState>) => [...s.navigationViews.values()].sort((a, b) => a.id - b.id).map(formatNavigationView);

const notFound = () => new ApiError('BAD_REQUEST', 'Navigation view does not exist.', 404);

/** A parameter Zulip strips and requires non-empty: the stripped text. */
function nonBlank(name: string, value: string): string {
  const v = value.trim();
  if (!v) throw badRequest(`${name} cannot be blank`);
  return v;
}

/** Zulip checks a new name against every view of the user's, the renamed one included. */
function checkNameFree(s: Readonly<UserState>, name: string | null): void {
  if (name !== null && [...s.navigationViews.values()].some((v) => v.name === name)) throw badRequest('Navigation view already exists.');
}

/** The view a path names, by its stripped fragment; 404 when the user has none (another user's views are not seen). */
function viewOf(s: Readonly<UserState>, fragment: string): NavigationViewRecord {
  const view = s.navigationViews.get(nonBlank('fragment', fragment));
  if (!view) throw notFound();
  return view;
}

export const listNavigationViews = query({
  type: 'listNavigationViews',
  fields: z.object({}),
  run: (s) => ({ navigation_views: navigationViewsOf(s) }),
});

export const addNavigationView = action({
  type: 'addNavigationView',
  fields: z.object({ fragment: z.string(), isPinned: z.boolean(), name: z.string().nullable() }),
  check(s, msg) {
    const fragment = nonBlank('fragment', msg.fragment);
    const name = msg.name === null ? null : nonBlank('name', msg.name);
    if ([...fragment].length > MAX_FRAGMENT_LENGTH) throw badRequest(`fragment is too long (limit: ${MAX_FRAGMENT_LENGTH} characters)`);
    if (BUILT_IN_VIEW_FRAGMENTS.has(fragment)) {
      if (name !== null) throw badRequest('Built-in views cannot have a custom name.');
    } else if (name === null) throw badRequest('Custom views must have a valid name.');
    if (s.navigationViews.has(fragment)) throw badRequest('Navigation view already exists.');
    checkNameFree(s, name);
    return { fragment, isPinned: msg.isPinned, name };
  },
  apply(s, p, tx) {
    const id = s.counters.navigationView++;
    tx.write(T.userCounters.at(s.realmId, s.userId).put({ ...s.counters }));
    const view: NavigationViewRecord = { id, ...p };
    s.navigationViews.set(view.fragment, view);
    tx.write(T.navigationViews.at(s.realmId, s.userId, view.fragment).put(view));
    return view;
  },
  events: (s, _p, view) => [toUsers(s.realmId, [s.userId], { type: 'navigation_view', op: 'add', navigation_view: formatNavigationView(view) })],
  reply: () => ({}),
});

export const updateNavigationView = action({
  type: 'updateNavigationView',
  fields: z.object({ fragment: z.string(), isPinned: z.boolean().nullable(), name: z.string().nullable() }),
  check(s, msg) {
    const name = msg.name === null ? null : nonBlank('name', msg.name);
    const fragment = msg.fragment.trim();
    if (BUILT_IN_VIEW_FRAGMENTS.has(fragment) && name !== null) throw badRequest('Built-in views cannot have a custom name.');
    checkNameFree(s, name);
    const old = viewOf(s, msg.fragment);
    const data: { name?: string; is_pinned?: boolean } = {};
    if (name !== null) data.name = name;
    if (msg.isPinned !== null) data.is_pinned = msg.isPinned;
    return { view: { ...old, name: name ?? old.name, isPinned: msg.isPinned ?? old.isPinned }, data };
  },
  apply(s, p, tx) {
    s.navigationViews.set(p.view.fragment, p.view);
    tx.write(T.navigationViews.at(s.realmId, s.userId, p.view.fragment).put(p.view));
    return {};
  },
  // As in Zulip: an update that names nothing still saves and announces an empty change.
  events: (s, p) => [toUsers(s.realmId, [s.userId], { type: 'navigation_view', op: 'update', fragment: p.view.fragment, data: p.data })],
});

export const removeNavigationView = action({
  type: 'removeNavigationView',
  fields: z.object({ fragment: z.string() }),
  check: (s, msg) => viewOf(s, msg.fragment).fragment,
  apply(s, fragment, tx) {
    s.navigationViews.delete(fragment);
    tx.write(T.navigationViews.at(s.realmId, s.userId, fragment).delete());
    return {};
  },
  events: (s, fragment) => [toUsers(s.realmId, [s.userId], { type: 'navigation_view', op: 'remove', fragment })],
});
