/**
 * The organization's part of the realm actor's state: realm settings beyond
 * `RealmMeta`, channel traffic, channel folders, linkifiers, code playgrounds, invitations, exports and
 * video-call provider tokens. Loaded with the rest of the realm state
 * (`RealmState.load`) and changed only in `apply`, each change with its write.
 */
import type { Store } from '../../../storage/store.ts';
import {
  type ChannelFolderRecord,
  type InviteRecord,
  type LinkifierRecord,
  type PlaygroundRecord,
  type RealmExportRecord,
  objectBucket,
  RealmSettings,
  T,
  type VideoProviderToken,
} from '../../../storage/tables.ts';
import type { Tx } from '../../runtime/action.ts';
import { type CompiledLinkifier, compileLinkifier } from '../../../lib/linkifiers.ts';

const DAY_SECS = 86_400;
/** Weekly traffic is averaged over this many days (Zulip's 28). */
export const TRAFFIC_DAYS = 28;
/** A channel with no message for this many days is not recently active (Zulip's 180). */
export const RECENTLY_ACTIVE_DAYS = 180;

export const utcDay = (secs: number): number => Math.floor(secs / DAY_SECS);
export const today = (): number => utcDay(Date.now() / 1000);

export type OrgCounter = 'folder' | 'linkifier' | 'invite' | 'playground' | 'channelGroup' | 'export';

/** What the realm knows of a channel's traffic: messages per day over the last TRAFFIC_DAYS, and its newest day. */
export interface Traffic {
  days: Map<number, number>;
  lastDay: number | null;
}

export class OrgState {
  settings: RealmSettings = RealmSettings.parse({});
  readonly traffic = new Map<number, Traffic>();
  readonly folders = new Map<number, ChannelFolderRecord>();
  readonly linkifiers = new Map<number, LinkifierRecord>();
  readonly playgrounds = new Map<number, PlaygroundRecord>();
  readonly invites = new Map<number, InviteRecord>();
  readonly invitesByToken = new Map<string, InviteRecord>();
  readonly videoTokens = new Map<number, VideoProviderToken>();
  /** Exports made through the API, by ID. */
  readonly exports = new Map<number, RealmExportRecord>();
  private ids = { folder: 1, linkifier: 1, invite: 1, playground: 1, channelGroup: 1, export: 1 };
  private compiled: CompiledLinkifier[] | null = null;

  /** The linkifiers in their order. */
  orderedLinkifiers(): LinkifierRecord[] {
    return [...this.linkifiers.values()].sort((a, b) => a.order - b.order || a.id - b.id);
  }

  /** The linkifiers compiled for rendering, in order (rebuilt after a change). */
  compiledLinkifiers(): CompiledLinkifier[] {
    this.compiled ??= this.orderedLinkifiers().flatMap((l) => compileLinkifier(l.pattern, l.urlTemplate) ?? []);
    return this.compiled;
  }

  setLinkifier(l: LinkifierRecord): void {
    this.linkifiers.set(l.id, l);
    this.compiled = null;
  }

  deleteLinkifier(id: number): void {
    this.linkifiers.delete(id);
    this.compiled = null;
  }

  async load(store: Store, realmId: number, channelIds: number[], userIds: number[], each: <I, R>(items: I[], fn: (item: I) => Promise<R>) => Promise<R[]>): Promise<void> {
    this.settings = (await T.realmSettings.at(realmId).get(store)) ?? this.settings;
    this.ids = (await T.orgAllocators.at(realmId).get(store)) ?? this.ids;
    const buckets = (next: number) => Array.from({ length: objectBucket(Math.max(0, next - 1)) + 1 }, (_, b) => b);
    for (const list of await each(buckets(this.ids.folder), (b) => T.channelFolders.partition(realmId, b).values(store))) for (const f of list) this.folders.set(f.id, f);
    for (const list of await each(buckets(this.ids.linkifier), (b) => T.linkifiers.partition(realmId, b).values(store))) for (const l of list) this.linkifiers.set(l.id, l);
    for (const list of await each(buckets(this.ids.playground), (b) => T.playgrounds.partition(realmId, b).values(store))) for (const p of list) this.playgrounds.set(p.id, p);
    for (const list of await each(buckets(this.ids.invite), (b) => T.invites.partition(realmId, b).values(store))) for (const i of list) this.indexInvite(i);
    for (const e of await T.realmExports.partition(realmId).values(store)) this.exports.set(e.id, e);
    const maxUser = Math.max(0, ...userIds);
    for (const list of await each(buckets(maxUser + 1), (b) => T.videoProviderTokens.partition(realmId, b).range(store))) for (const r of list) this.videoTokens.set(Number(r.ck), r.value);
    // The newest TRAFFIC_DAYS rows of each channel hold everything the computed fields need.
    const rows = await each(channelIds, (id) => T.channelTraffic.partition(realmId, id).range(store, { reverse: true, limit: TRAFFIC_DAYS }));
    channelIds.forEach((id, i) => {
      const days = new Map<number, number>();
      for (const r of rows[i]!) days.set(Number(r.ck), r.value.count);
      this.traffic.set(id, { days, lastDay: rows[i]![0] ? Number(rows[i]![0].ck) : null });
    });
  }

  indexInvite(i: InviteRecord): void {
    this.invites.set(i.id, i);
    this.invitesByToken.set(i.token, i);
  }

  take(counter: OrgCounter, realmId: number, tx: Tx): number {
    const id = this.ids[counter]++;
    tx.write(T.orgAllocators.at(realmId).put({ ...this.ids }));
    return id;
  }

  /** Counts a message sent to a channel now; the day's row goes into `tx`. */
  recordMessage(realmId: number, channelId: number, timestamp: number, tx: Tx): void {
    const day = utcDay(timestamp);
    let t = this.traffic.get(channelId);
    if (!t) this.traffic.set(channelId, (t = { days: new Map(), lastDay: null }));
    const count = (t.days.get(day) ?? 0) + 1;
    t.days.set(day, count);
    t.lastDay = Math.max(t.lastDay ?? day, day);
    for (const d of t.days.keys()) if (d <= day - TRAFFIC_DAYS) t.days.delete(d);
    tx.write(T.channelTraffic.at(realmId, channelId, day).put({ count }));
  }

  /** Messages in the last TRAFFIC_DAYS days. */
  recentMessages(channelId: number): number {
    const since = today() - TRAFFIC_DAYS + 1;
    let n = 0;
    for (const [d, c] of this.traffic.get(channelId)?.days ?? []) if (d >= since) n += c;
    return n;
  }

  /** Zulip's estimate of messages per week: null for a channel younger than a week, rounded to 2 significant digits. */
  weeklyTraffic(channelId: number, dateCreated: number): number | null {
    const ageDays = Math.floor((Date.now() / 1000 - dateCreated) / DAY_SECS);
    const recent = this.recentMessages(channelId);
    let weekly: number;
    if (ageDays >= TRAFFIC_DAYS) weekly = Math.floor(recent / 4);
    else if (ageDays >= 7) weekly = Math.floor((recent * 7) / ageDays);
    else return null;
    if (weekly === 0 && recent > 0) weekly = 1;
    return roundTo2SignificantDigits(weekly);
  }

  /** Recently active: created, or sent a message, in the last RECENTLY_ACTIVE_DAYS days. */
  isRecentlyActive(channelId: number, dateCreated: number): boolean {
    const since = today() - RECENTLY_ACTIVE_DAYS;
    const last = this.traffic.get(channelId)?.lastDay ?? null;
    return utcDay(dateCreated) >= since || (last !== null && last >= since);
  }
}

function roundTo2SignificantDigits(n: number): number {
  if (n < 100) return n;
  const magnitude = 10 ** (Math.floor(Math.log10(n)) - 1);
  return Math.round(n / magnitude) * magnitude;
}
