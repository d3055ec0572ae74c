/** `parley channels ...`: list and archive an organization's channels. */
import type { Command } from 'commander';
import { realmRef } from '../../actors/realm/ref.ts';
import { inOrganization, organizationGroup } from '../organization.ts';
import { print, table, UsageError } from '../output.ts';
import type { Run } from './organizations.ts';

type Channel = { stream_id: number; name: string; invite_only: boolean; is_archived?: boolean; subscriber_count?: number };

export function channelCommands(program: Command, run: Run): void {
  const { group: channels, orgOf } = organizationGroup(program, 'channels', "an organization's channels");

  channels
    .command('list')
    .description('list every channel, archived ones included')
    .action((_o, cmd: Command) =>
      run(async (dep, json) => {
        const o = await inOrganization(dep, orgOf(cmd));
        const { streams } = (await dep.actors.call(realmRef, o.realm, { type: 'listStreams', caller: o.operator, includePublic: true, includeWebPublic: true, includeSubscribed: true, excludeArchived: false, includeAll: true, includeDefault: false, includeOwnerSubscribed: false, includeCanAccessContent: false })) as unknown as { streams: Channel[] };
        const rows = streams.map((c) => ({ ...c, state: c.is_archived ? 'archived' : 'active', access: c.invite_only ? 'private' : 'public' }));
        print(json, rows, (v) => table(v, ['stream_id', 'name', 'access', 'state', 'subscriber_count']));
      }),
    );

  channels
    .command('archive <channel>')
    .description('archive a channel (by ID or name); its history stays')
    .action((spec: string, _o, cmd: Command) =>
      run(async (dep, json) => {
        const o = await inOrganization(dep, orgOf(cmd));
        const { streams } = (await dep.actors.call(realmRef, o.realm, { type: 'listStreams', caller: o.operator, includePublic: true, includeWebPublic: true, includeSubscribed: true, excludeArchived: true, includeAll: true, includeDefault: false, includeOwnerSubscribed: false, includeCanAccessContent: false })) as unknown as { streams: Channel[] };
        const c = /^\d+$/.test(spec) ? streams.find((s) => s.stream_id === Number(spec)) : streams.find((s) => s.name.toLowerCase() === spec.toLowerCase());
        if (!c) throw new UsageError(`No active channel '${spec}'`);
        await dep.actors.call(realmRef, o.realm, { type: 'archiveStream', caller: o.operator, streamId: c.stream_id });
        print(json, { stream_id: c.stream_id, name: c.name, state: 'archived' }, (v) => `#${v.name} is archived\n`);
      }),
    );
}
