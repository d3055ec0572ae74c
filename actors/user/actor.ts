/**
 * The user actor: owns one user's personal state (message flags that
 * differ from their defaults; settings are the realm's) and serves that user's history reads.
 * It calls the realm actor for what the user may see; the realm actor never
 * calls a user actor, so the two cannot wait on each other.
 */
import { z } from 'zod';
import { NarrowTermSchema } from '../../lib/narrow.ts';
import { type DraftRecord, type NavigationViewRecord, type SavedSnippetRecord, T, type UserCounters, UserCounters as UserCountersCodec } from '../../storage/tables.ts';
import { wants } from '../events/fetch.ts';
import { formatMessage } from '../format.ts';
import { realmActorId, realmRef } from '../realm/ref.ts';
import { type Caller, defineQuery, later } from '../runtime/action.ts';
import type { ActorContext } from '../runtime/context.ts';
import { defineActor } from '../runtime/registry.ts';
import { BotStorageIndex, getBotStorage, putBotStorage, removeBotStorage } from './bot_storage.ts';
import { FlagCache, type Marks, marksFromRow } from './flags.ts';
import { forgetUserData } from './forget.ts';
import { markAllAsRead, markChannelAsRead, updateFlags, updateFlagsForNarrow } from './message_flags.ts';
import { getMessage, matchesNarrowQuery, searchFields } from './message_reads.ts';
import { createDrafts, createSnippet, deleteDraft, deleteSnippet, discardDrafts, draftsOf, editDraft, editSnippet, listDrafts, listSnippets, snippetsOf } from './personal.ts';
import { MessageReader, withTarget } from './messages.ts';
import { addNavigationView, listNavigationViews, navigationViewsOf, removeNavigationView, updateNavigationView } from './navigation_views.ts';
import { unreadMessages } from './notifications.ts';
import { pushRead } from './push.ts';
import { userRef } from './ref.ts';
import { markOnboardingStep, onboardingStepsOf } from './onboarding.ts';
import { tusAppend, tusCreate, tusExpireTimer, tusPartsTimer, tusStatus } from './tus.ts';
import { deleteAttachment, downloadFile, fileUrl, listAttachments, temporaryFile, thumbnailStatus, uploadFile, uploadSpaceTimer } from './uploads.ts';

export interface UserState {
  realmId: number;
  userId: number;
  /** The read watermark, unread flag rows and starred messages (`user_marks`). */
  marks: Marks;
  /** Recently used buckets of flag rows (bounded); the rest stay in the store. */
  flags: FlagCache;
  drafts: Map<number, DraftRecord>;
  snippets: Map<number, SavedSnippetRecord>;
  /** Navigation views by fragment (FL 390). */
  navigationViews: Map<string, NavigationViewRecord>;
  counters: UserCounters;
  /** A bot's storage: its keys and their sizes (the values stay in `bot_storage`); empty for every other user. */
  botStorage: BotStorageIndex;
}

const query = defineQuery<UserState>();

async function load(ctx: ActorContext, id: string): Promise<UserState> {
  const [realmId, userId] = id.split(':').map(Number) as [number, number];
  const marks = marksFromRow(await T.userMarks.at(realmId, userId).get(ctx.store));
  const drafts = new Map((await T.userDrafts.partition(realmId, userId).values(ctx.store)).map((d) => [d.id, d]));
  const snippets = new Map((await T.savedSnippets.partition(realmId, userId).values(ctx.store)).map((x) => [x.id, x]));
  const navigationViews = new Map((await T.navigationViews.partition(realmId, userId).values(ctx.store)).map((v) => [v.fragment, v]));
  const counters = (await T.userCounters.at(realmId, userId).get(ctx.store)) ?? UserCountersCodec.parse({});
  const botStorage = await BotStorageIndex.load(ctx, realmId, userId);
  return { realmId, userId, marks, flags: new FlagCache(ctx.store, realmId, userId), drafts, snippets, navigationViews, counters, botStorage };
}

/** A reader for one request, with the marks as they are now. */
export const reader = (s: Readonly<UserState>, ctx: ActorContext) => new MessageReader(ctx.store, s.realmId, s.userId, s.marks.readBelow, new Set(s.marks.unreadRows));
const realmOf = (s: UserState) => realmActorId(s.realmId);
const callerOf = (s: UserState): Caller => ({ realmId: s.realmId, userId: s.userId });

/** Zulip's MAX_DRAFTS_IN_REGISTER_RESPONSE. */
const MAX_DRAFTS_IN_REGISTER = 1000;

const snapshot = query({
  type: 'snapshot',
  fields: z.object({
    fetch: z.array(z.string()).nullable(),
    /** The name unread_msgs gives the empty topic (clients without empty_topic_name); null: the empty string. */
    emptyTopicDisplayName: z.string().nullable().default(null),
  }),
  run(s, msg, ctx) {
    // user_settings come from the realm's snapshot: the realm owns every user's settings.
    const settings = {};
    const starred = {
      ...(wants(msg.fetch, 'starred_messages') ? { starred_messages: [...s.marks.starred].sort((a, b) => a - b) } : {}),
      // Zulip's register gives the most recently edited drafts only (GET /drafts gives them all).
      ...(wants(msg.fetch, 'drafts') ? { drafts: draftsOf(s).slice(-MAX_DRAFTS_IN_REGISTER) } : {}),
      ...(wants(msg.fetch, 'saved_snippets') ? { saved_snippets: snippetsOf(s) } : {}),
      ...(wants(msg.fetch, 'navigation_views') ? { navigation_views: navigationViewsOf(s) } : {}),
      ...(wants(msg.fetch, 'onboarding_steps') ? { onboarding_steps: onboardingStepsOf(s) } : {}),
    };
    if (!wants(msg.fetch, 'message')) return later(async () => ({ ...settings, ...starred }));
    // As in Zulip: unread_msgs is kept up to date by message events and flag events together.
    const withUnreads = wants(msg.fetch, 'update_message_flags');
    const r = reader(s, ctx);
    return later(async () => {
      const realm = realmOf(s);
      const [{ sources }, muted] = await Promise.all([
        ctx.actors.call(realmRef, realm, { type: 'messageSources', caller: callerOf(s), narrow: [], with: null }),
        // `is:muted` resolved by the realm: the user's muted channels and topics, as one term.
        withUnreads ? ctx.actors.call(realmRef, realm, { type: 'narrowForQueue', caller: callerOf(s), narrow: [{ operator: 'is', operand: 'muted', negated: false }] }) : null,
      ]);
      const [maxMessageId, unreads] = await Promise.all([r.newestReceived(sources), muted ? r.unreads(sources, muted.narrow[0] ?? null, msg.emptyTopicDisplayName) : null]);
      return { ...settings, ...starred, max_message_id: maxMessageId, ...(unreads ? { unread_msgs: unreads } : {}) };
    });
  },
});

const getMessages = query({
  type: 'getMessages',
  fields: z.object({
    anchor: z.union([z.number().int(), z.enum(['newest', 'oldest', 'first_unread', 'date'])]),
    /** With anchor `date` (FL 445): the date, in milliseconds since the epoch. */
    anchorDate: z.number().nullable().default(null),
    numBefore: z.number().int().nonnegative(),
    numAfter: z.number().int().nonnegative(),
    includeAnchor: z.boolean(),
    narrow: z.array(NarrowTermSchema),
    applyMarkdown: z.boolean(),
    clientExtavatar: z.boolean(),
    /** `allow_empty_topic_name`: without it, the empty topic is given by the organization's name for it. */
    allowEmptyTopicName: z.boolean().default(false),
    /** `message_ids` (FL 300): these messages, those the user may read and the narrow matches, instead of a range. */
    messageIds: z.array(z.number().int()).nullable().default(null),
  }),
  run(s, msg, ctx) {
    // The read runs outside the mailbox, from the store, once earlier changes are durable.
    const r = reader(s, ctx);
    return later(async () => {
      const realm = realmOf(s);
      const { narrow, sources, emptyTopicDisplayName } = await ctx.actors.call(realmRef, realm, { type: 'messageSources', caller: msg.caller, narrow: msg.narrow, with: await withTarget(s.realmId, ctx, msg.narrow) });
      const page = msg.messageIds ? await r.byIds(msg.messageIds, narrow, sources) : await r.page(msg, narrow, sources);
      const format = { ...msg, emptyTopicDisplayName: msg.allowEmptyTopicName ? null : emptyTopicDisplayName };
      const userIds = new Set<number>();
      const channelIds = new Set<number>();
      for (const m of page.messages) {
        userIds.add(m.senderId);
        for (const id of m.dmUserIds ?? []) userIds.add(id);
        if (m.streamId !== null) channelIds.add(m.streamId);
      }
      const names = page.messages.length ? await ctx.actors.call(realmRef, realm, { type: 'directory', caller: msg.caller, userIds: [...userIds], channelIds: [...channelIds] }) : null;
      return {
        messages: page.messages.map((m) => ({ ...formatMessage(m, names!, format), flags: r.flagsOf(m), ...searchFields(m, narrow) })),
        // Zulip gives no anchor for a fetch by ID, and every found_* false.
        ...(msg.messageIds ? {} : { anchor: page.anchor }),
        found_anchor: page.foundAnchor,
        found_oldest: page.foundOldest,
        found_newest: page.foundNewest,
        history_limited: false,
      };
    });
  },
});

export const userHandlers = {
  snapshot,
  getMessages,
  getMessage,
  matchesNarrow: matchesNarrowQuery,
  updateMessageFlags: updateFlags,
  updateMessageFlagsForNarrow: updateFlagsForNarrow,
  markAllAsRead,
  markChannelAsRead,
  listDrafts,
  createDrafts,
  editDraft,
  deleteDraft,
  discardDrafts,
  listSavedSnippets: listSnippets,
  createSavedSnippet: createSnippet,
  editSavedSnippet: editSnippet,
  deleteSavedSnippet: deleteSnippet,
  listNavigationViews,
  addNavigationView,
  updateNavigationView,
  removeNavigationView,
  markOnboardingStep,
  getBotStorage,
  putBotStorage,
  removeBotStorage,
  uploadFile,
  listAttachments,
  deleteAttachment,
  downloadFile,
  fileUrl,
  thumbnailStatus,
  temporaryFile,
  tusCreate,
  tusAppend,
  tusStatus,
  unreadMessages,
  forgetUserData,
};

export const userActor = defineActor({
  ref: userRef,
  durable: true,
  load: (ctx, id) => load(ctx, id),
  handlers: userHandlers,
  timers: { [pushRead.name]: pushRead, [uploadSpaceTimer.name]: uploadSpaceTimer, [tusExpireTimer.name]: tusExpireTimer, [tusPartsTimer.name]: tusPartsTimer },
});
