/**
 * A gateway's copy of the directory of organizations: which realm a
 * request's host names. Loaded once from the directory actor, then kept
 * current by the directory's announcements on the bus, so a request costs a
 * map lookup, never an actor call. When the bus may have lost an
 * announcement (this process was off NATS), the copy is loaded again; a host
 * the copy does not know triggers a reload at most once a second, in case a
 * creation's announcement is still on its way.
 */
import type { Logger } from 'pino';
import type { DirectoryAnnouncement } from '../actors/directory/actor.ts';
import { DIRECTORY_ID, directoryRef, SERVER_CALLER } from '../actors/directory/ref.ts';
import type { Bus } from '../actors/runtime/bus.ts';
import type { ActorClient } from '../actors/runtime/client.ts';
import { subjects } from '../actors/subjects.ts';
import { SiteHosts } from '../lib/hosts.ts';
import type { OrganizationRecord } from '../storage/tables.ts';

const RELOAD_UNKNOWN_MS = 1000;

export class Organizations {
  readonly hosts: SiteHosts;
  private bySubdomain = new Map<string, OrganizationRecord>();
  private byRealm = new Map<number, OrganizationRecord>();
  private loading: Promise<void> | null = null;
  private loaded = false;
  /** Announcements heard while a load was in flight: applied again after it, so the load cannot undo them. */
  private heardWhileLoading: OrganizationRecord[] | null = null;
  private lastUnknownReload = 0;

  constructor(
    private readonly actors: ActorClient,
    siteUrl: string,
    private readonly log: Logger,
  ) {
    this.hosts = new SiteHosts(siteUrl);
  }

  /** Takes the directory's announcements; call once before serving. */
  async listen(bus: Bus): Promise<void> {
    bus.onEventsLost(() => {
      this.loaded = false;
    });
    await bus.subscribe(subjects.directory, (body) => this.heard((body as DirectoryAnnouncement).organization), { broadcast: true });
    await bus.flush();
  }

  /** The organization a request's `Host` names, or null when none does (loading the copy first if needed). */
  async resolve(host: string): Promise<OrganizationRecord | null> {
    if (!this.loaded) await this.load();
    const subdomain = this.hosts.subdomainOf(host);
    const org = this.bySubdomain.get(subdomain);
    if (org) return org;
    if (Date.now() - this.lastUnknownReload < RELOAD_UNKNOWN_MS) return null;
    this.lastUnknownReload = Date.now();
    await this.load(true);
    return this.bySubdomain.get(subdomain) ?? null;
  }

  /** The organization of a realm, as this copy knows it. */
  byId(realmId: number): OrganizationRecord | undefined {
    return this.byRealm.get(realmId);
  }

  private heard(org: OrganizationRecord | undefined): void {
    if (!org || typeof org.realmId !== 'number') return;
    this.set(org);
    this.heardWhileLoading?.push(org);
  }

  private set(org: OrganizationRecord): void {
    const old = this.byRealm.get(org.realmId);
    if (old && this.bySubdomain.get(old.subdomain) === old) this.bySubdomain.delete(old.subdomain);
    this.byRealm.set(org.realmId, org);
    this.bySubdomain.set(org.subdomain, org);
  }

  private load(force = false): Promise<void> {
    if (this.loading) return this.loading;
    if (this.loaded && !force) return Promise.resolve();
    this.heardWhileLoading = [];
    this.loading = (async () => {
      try {
        const { organizations } = await this.actors.call(directoryRef, DIRECTORY_ID, { type: 'listOrganizations', caller: SERVER_CALLER });
        const heard = this.heardWhileLoading ?? [];
        this.bySubdomain = new Map();
        this.byRealm = new Map();
        for (const org of organizations) this.set(org);
        for (const org of heard) this.set(org);
        this.loaded = true;
        this.log.debug({ organizations: organizations.length }, 'directory loaded');
      } finally {
        this.heardWhileLoading = null;
        this.loading = null;
      }
    })();
    return this.loading;
  }
}
