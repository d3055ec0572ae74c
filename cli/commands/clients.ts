/** `parley reload-clients`: tell web clients to reload their code after a deploy (Zulip's `web_reload_client` events). */
import type { Command } from 'commander';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { findOrganization, listOrganizations } from '../organization.ts';
import { print, table } from '../output.ts';
import type { Run } from './organizations.ts';

export function clientCommands(program: Command, run: Run): void {
  program
    .command('reload-clients')
    .description("send a web_reload_client event to every event queue of an organization (or of every active one): web clients reload their code, spread over minutes unless --immediate; other clients ignore it")
    .option('--org <org>', "only this organization: its subdomain, its realm ID, or '.' for the root domain's")
    .option('--immediate', 'ask clients to reload at once instead of spreading their reloads over minutes')
    .action((o: { org?: string; immediate?: boolean }) =>
      run(async (dep, json) => {
        const orgs = o.org !== undefined ? [await findOrganization(dep, o.org)] : (await listOrganizations(dep)).filter((org) => !org.deactivated);
        for (const org of orgs) await dep.actors.call(realmRef, realmActorId(org.realmId), { type: 'reloadClients', caller: { realmId: org.realmId, userId: null }, immediate: o.immediate === true });
        const out = orgs.map((org) => ({ realmId: org.realmId, subdomain: org.subdomain, name: org.name }));
        print(json, out, (v) => `${table(v, ['realmId', 'subdomain', 'name'])}\nweb_reload_client${o.immediate ? ' (immediate)' : ''} sent to every event queue of ${v.length} organization${v.length === 1 ? '' : 's'}\n`);
      }),
    );
}
