/**
 * Zulip's `apply_events` for the tests: how a client folds each event into its
 * register snapshot. `test/snapshot.test.ts` (and the snapshot tests of each
 * area) check that a snapshot with the events that followed applied equals a
 * fresh register (Zulip's `verify_action`). Each event type has its applier
 * below; add one beside the event when adding an event type.
 */
export type Snap = Record<string, any>;
type Applier = (snap: Snap, e: Record<string, any>) => void;

const byStreamId = (list: any[], id: number) => list.find((x) => x.stream_id === id);

export const APPLIERS: Record<string, Applier> = {
  realm_user(snap, e) {
    if (e.op === 'add') snap.realm_users.push(e.person);
  },
  stream(snap, e) {
    if (e.op === 'create') {
      snap.streams.push(...e.streams);
      for (const st of e.streams) if (!byStreamId(snap.subscriptions, st.stream_id)) snap.never_subscribed.push({ ...st, subscribers: [] });
    }
  },
  subscription(snap, e) {
    if (e.op === 'add') {
      for (const sub of e.subscriptions) {
        snap.never_subscribed = snap.never_subscribed.filter((x: any) => x.stream_id !== sub.stream_id);
        snap.subscriptions.push(sub);
      }
    } else if (e.op === 'peer_add') {
      for (const list of [snap.subscriptions, snap.never_subscribed]) {
        for (const x of list) if (e.stream_ids.includes(x.stream_id)) x.subscribers = [...new Set([...x.subscribers, ...e.user_ids])];
      }
    }
  },
  message(snap, e) {
    snap.max_message_id = Math.max(snap.max_message_id, e.message.id);
    if (snap.unread_msgs && !e.flags.includes('read')) addUnread(snap, snap.user_id, e.message.id, unreadDetailsOf(snap.user_id, e.message, e.flags));
    if (e.message.type === 'private' && snap.recent_private_conversations) {
      const others = e.message.display_recipient.map((r: any) => r.id).filter((id: number) => id !== snap.user_id).sort((a: number, b: number) => a - b);
      snap.recent_private_conversations = [
        { max_message_id: e.message.id, user_ids: others },
        ...snap.recent_private_conversations.filter((c: any) => JSON.stringify(c.user_ids) !== JSON.stringify(others)),
      ];
    }
  },
  scheduled_messages(snap, e) {
    if (e.op === 'add') snap.scheduled_messages = [...snap.scheduled_messages, ...e.scheduled_messages].sort((a, b) => a.scheduled_delivery_timestamp - b.scheduled_delivery_timestamp || a.scheduled_message_id - b.scheduled_message_id);
    else if (e.op === 'update') snap.scheduled_messages = snap.scheduled_messages.map((m: any) => (m.scheduled_message_id === e.scheduled_message.scheduled_message_id ? e.scheduled_message : m));
    else if (e.op === 'remove') snap.scheduled_messages = snap.scheduled_messages.filter((m: any) => m.scheduled_message_id !== e.scheduled_message_id);
  },
  update_message_flags(snap, e) {
    if (e.flag === 'starred' && snap.starred_messages) {
      const set = new Set<number>(snap.starred_messages);
      for (const id of e.messages) e.op === 'add' ? set.add(id) : set.delete(id);
      snap.starred_messages = [...set].sort((a, b) => a - b);
    }
    if (e.flag === 'read' && snap.unread_msgs) {
      if (e.op === 'add' && e.all) Object.assign(snap.unread_msgs, { count: 0, pms: [], streams: [], huddles: [], mentions: [] });
      else if (e.op === 'add') removeUnread(snap, new Set(e.messages));
      else for (const id of e.messages) addUnread(snap, snap.user_id, id, e.message_details[String(id)]);
    }
  },
  delete_message(snap, e) {
    if (snap.unread_msgs) removeUnread(snap, new Set(e.message_ids ?? [e.message_id]));
    if (snap.starred_messages) snap.starred_messages = snap.starred_messages.filter((id: number) => !(e.message_ids ?? [e.message_id]).includes(id));
  },
  update_message(snap, e) {
    // Zulip's apply_event: unread messages follow a move to their new channel and topic.
    if (!snap.unread_msgs || (e.subject === undefined && e.new_stream_id === undefined)) return;
    const moved = new Set<number>(e.message_ids);
    const ids = snap.unread_msgs.streams.flatMap((x: any) => x.unread_message_ids.filter((id: number) => moved.has(id)));
    if (!ids.length) return;
    const mentioned = new Set<number>(snap.unread_msgs.mentions);
    removeUnread(snap, new Set(ids));
    for (const id of ids) addUnread(snap, snap.user_id, id, { type: 'stream', stream_id: e.new_stream_id ?? e.stream_id, topic: e.subject ?? e.orig_subject, mentioned: mentioned.has(id) });
  },
  user_topic(snap, e) {
    if (!snap.user_topics) return;
    const same = (x: any) => x.stream_id === e.stream_id && x.topic_name.toLowerCase() === e.topic_name.toLowerCase();
    const rest = snap.user_topics.filter((x: any) => !same(x));
    snap.user_topics = e.visibility_policy === 0 ? rest : [...rest, { stream_id: e.stream_id, topic_name: e.topic_name, last_updated: e.last_updated, visibility_policy: e.visibility_policy }];
  },
  muted_topics(snap, e) {
    if (snap.muted_topics) snap.muted_topics = e.muted_topics;
  },
  presence(snap, e) {
    if (!snap.presences) return;
    // Simplified events (modern format keyed by user ID); the legacy form is for registers keyed by email.
    if (e.presences) Object.assign(snap.presences, e.presences);
    else snap.presences[e.email] = { aggregated: { client: 'website', status: e.presence.website.status, timestamp: e.presence.website.timestamp }, ...e.presence };
  },
  muted_users(snap, e) {
    if (snap.muted_users) snap.muted_users = e.muted_users;
  },
  alert_words(snap, e) {
    if (snap.alert_words) snap.alert_words = e.alert_words;
  },
  drafts(snap, e) {
    if (!snap.drafts) return;
    if (e.op === 'add') snap.drafts = [...snap.drafts, ...e.drafts];
    else if (e.op === 'update') snap.drafts = snap.drafts.map((d: any) => (d.id === e.draft.id ? e.draft : d));
    else snap.drafts = snap.drafts.filter((d: any) => d.id !== e.draft_id);
    snap.drafts.sort((a: any, b: any) => a.timestamp - b.timestamp || a.id - b.id);
  },
  saved_snippets(snap, e) {
    if (!snap.saved_snippets) return;
    if (e.op === 'add') snap.saved_snippets = [...snap.saved_snippets, e.saved_snippet];
    else if (e.op === 'update') snap.saved_snippets = snap.saved_snippets.map((x: any) => (x.id === e.saved_snippet.id ? e.saved_snippet : x));
    else snap.saved_snippets = snap.saved_snippets.filter((x: any) => x.id !== e.saved_snippet_id);
  },
  realm_emoji(snap, e) {
    if (!snap.realm_emoji) return;
    if (e.op === 'update') snap.realm_emoji = e.realm_emoji;
    else if (e.op === 'add') snap.realm_emoji = { ...snap.realm_emoji, [e.emoji.id]: e.emoji };
    else if (e.op === 'edit') snap.realm_emoji = { ...snap.realm_emoji, [e.emoji_id]: { ...snap.realm_emoji[e.emoji_id], ...e.data } };
  },
  typing() {},
  reaction() {},
  heartbeat() {},
};

/** The `message_details` entry Zulip derives from a message event, for the unread applier. */
function unreadDetailsOf(me: number, m: any, flags: string[]): Record<string, any> {
  const mentioned = flags.some((f) => f === 'mentioned' || f.endsWith('wildcard_mentioned'));
  if (m.type === 'stream') return { type: 'stream', stream_id: m.stream_id, topic: m.subject, mentioned };
  return { type: 'private', user_ids: m.display_recipient.map((r: any) => r.id).filter((id: number) => id !== me), mentioned };
}

/** Zulip's apply_unread_message_event: files one unread message under its conversation. */
function addUnread(snap: Snap, me: number, id: number, d: Record<string, any>): void {
  const u = snap.unread_msgs;
  const push = (list: any[], match: (x: any) => boolean, make: () => any) => {
    let entry = list.find(match);
    if (!entry) list.push((entry = make()));
    if (!entry.unread_message_ids.includes(id)) entry.unread_message_ids = [...entry.unread_message_ids, id].sort((a: number, b: number) => a - b);
  };
  if (d.type === 'stream') push(u.streams, (x) => x.stream_id === d.stream_id && x.topic === d.topic, () => ({ stream_id: d.stream_id, topic: d.topic, unread_message_ids: [] }));
  else if (d.user_ids.length <= 1) {
    const other = d.user_ids[0] ?? me;
    push(u.pms, (x) => x.other_user_id === other, () => ({ other_user_id: other, sender_id: other, unread_message_ids: [] }));
  } else {
    const key = [...d.user_ids, me].sort((a: number, b: number) => a - b).join(',');
    push(u.huddles, (x) => x.user_ids_string === key, () => ({ user_ids_string: key, unread_message_ids: [] }));
  }
  if (d.mentioned && !u.mentions.includes(id)) u.mentions = [...u.mentions, id].sort((a: number, b: number) => a - b);
  u.count = countUnread(snap);
}

function removeUnread(snap: Snap, ids: Set<number>): void {
  const u = snap.unread_msgs;
  for (const key of ['pms', 'streams', 'huddles']) {
    u[key] = u[key].map((x: any) => ({ ...x, unread_message_ids: x.unread_message_ids.filter((id: number) => !ids.has(id)) })).filter((x: any) => x.unread_message_ids.length);
  }
  u.mentions = u.mentions.filter((id: number) => !ids.has(id));
  u.count = countUnread(snap);
}

const countUnread = (snap: Snap): number => ['pms', 'streams', 'huddles'].reduce((n, k) => n + snap.unread_msgs[k].reduce((m: number, x: any) => m + x.unread_message_ids.length, 0), 0);

/** unread_msgs in a form that compares equal whatever order conversations were listed in. */
export function normalizeUnread(u: any): any {
  const byKey = (key: (x: any) => string) => (a: any, b: any) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0);
  return {
    count: u.count,
    pms: [...u.pms].sort(byKey((x) => String(x.other_user_id).padStart(12, '0'))),
    streams: [...u.streams].sort(byKey((x) => `${String(x.stream_id).padStart(12, '0')}:${x.topic}`)),
    huddles: [...u.huddles].sort(byKey((x) => x.user_ids_string)),
    mentions: [...u.mentions].sort((a, b) => a - b),
    old_unreads_missing: u.old_unreads_missing,
  };
}

/** Folds one event into a snapshot; an event type without an applier is a test failure. */
export function applyEvent(snap: Snap, e: Record<string, any>): void {
  const applier = APPLIERS[e.type];
  if (!applier) throw new Error(`no applier for event type ${e.type}`);
  applier(snap, e);
}
