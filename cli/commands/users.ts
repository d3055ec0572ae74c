/** `parley users ...`: list, create, change role, deactivate, reactivate, reset API key, set password. */
import type { Command } from 'commander';
import { Role } from '../../actors/model.ts';
import { realmRef } from '../../actors/realm/ref.ts';
import { subjects } from '../../actors/subjects.ts';
import { realmUrl } from '../../lib/hosts.ts';
import { hashPassword } from '../../lib/secrets.ts';
import { findUser, inOrganization, organizationGroup } from '../organization.ts';
import { print, readSecret, table, UsageError } from '../output.ts';
import { type Run, writeZuliprc } from './organizations.ts';

const ROLES: Record<string, number> = { owner: Role.OWNER, admin: Role.ADMIN, moderator: Role.MODERATOR, member: Role.MEMBER, guest: Role.GUEST };
const roleName = (r: number) => Object.entries(ROLES).find(([, v]) => v === r)?.[0] ?? String(r);

function roleOf(name: string): number {
  const r = ROLES[name.toLowerCase()];
  if (r === undefined) throw new UsageError(`Unknown role '${name}' (one of: ${Object.keys(ROLES).join(', ')})`);
  return r;
}

export function userCommands(program: Command, run: Run): void {
  const { group: users, orgOf } = organizationGroup(program, 'users', "an organization's users");

  users
    .command('list')
    .description('list users (deactivated ones included)')
    .action((_o, cmd: Command) =>
      run(async (dep, json) => {
        const o = await inOrganization(dep, orgOf(cmd));
        const { members } = (await dep.actors.call(realmRef, o.realm, { type: 'listUsers', caller: o.operator, userIds: null, clientExtavatar: false, includeCustomProfileFields: false })) as unknown as { members: Array<Record<string, unknown> & { role: number; is_active: boolean }> };
        const rows = members.map((m) => ({ ...m, role_name: roleName(m.role), state: m.is_active ? 'active' : 'deactivated' }));
        print(json, rows, (v) => table(v, ['user_id', 'email', 'full_name', 'role_name', 'is_bot', 'state']));
      }),
    );

  users
    .command('create')
    .description('create a user (a member unless --role says otherwise)')
    .requiredOption('--email <email>', 'their email address')
    .requiredOption('--name <name>', 'their full name')
    .option('--role <role>', 'owner, admin, moderator, member or guest', 'member')
    .option('--password-stdin', 'read their password from standard input')
    .action((opts: { email: string; name: string; role: string; passwordStdin?: boolean }, cmd: Command) =>
      run(async (dep, json) => {
        const role = roleOf(opts.role);
        const o = await inOrganization(dep, orgOf(cmd));
        const passwordHash = opts.passwordStdin ? await hashPassword(await readSecret('password')) : '';
        const { user_id } = await dep.actors.call(realmRef, o.realm, { type: 'createUser', caller: o.server, email: opts.email, fullName: opts.name, passwordHash });
        if (role !== Role.MEMBER) await dep.actors.call(realmRef, o.realm, { type: 'updateUser', caller: o.operator, userId: user_id, fullName: null, role, profileData: null, newEmail: null });
        print(json, { user_id, email: opts.email, role: roleName(role) }, (v) => `Created ${v.email} (user ${v.user_id}, ${v.role})\n`);
      }),
    );

  users
    .command('role <user> <role>')
    .description("change a user's role (owner, admin, moderator, member, guest)")
    .action((spec: string, roleArg: string, _o, cmd: Command) =>
      run(async (dep, json) => {
        const role = roleOf(roleArg);
        const o = await inOrganization(dep, orgOf(cmd));
        const u = await findUser(dep, o, spec);
        await dep.actors.call(realmRef, o.realm, { type: 'updateUser', caller: o.operator, userId: u.user_id, fullName: null, role, profileData: null, newEmail: null });
        print(json, { user_id: u.user_id, email: u.email, role: roleName(role) }, (v) => `${v.email} is now ${v.role}\n`);
      }),
    );

  for (const [name, type] of [['deactivate', 'deactivateUser'], ['reactivate', 'reactivateUser']] as const) {
    users
      .command(`${name} <user>`)
      .description(`${name} a user (by ID or email)`)
      .action((spec: string, _o, cmd: Command) =>
        run(async (dep, json) => {
          const o = await inOrganization(dep, orgOf(cmd));
          const u = await findUser(dep, o, spec);
          const r = (await dep.actors.call(realmRef, o.realm, { type, caller: o.operator, userId: u.user_id })) as { revoked?: number[] };
          if (r.revoked?.length) await dep.publish(subjects.authRevoked, { realmId: o.org.realmId, userIds: r.revoked });
          print(json, { user_id: u.user_id, email: u.email, state: name === 'deactivate' ? 'deactivated' : 'active' }, (v) => `${v.email} is ${v.state}\n`);
        }),
      );
  }

  users
    .command('reset-key <user>')
    .description('give a user a new API key (every older key stops working); shown once, here, or written to --zuliprc')
    .option('--zuliprc <path>', 'write their zuliprc (mode 0600) instead of showing the key')
    .action((spec: string, opts: { zuliprc?: string }, cmd: Command) =>
      run(async (dep, json) => {
        const o = await inOrganization(dep, orgOf(cmd));
        const u = await findUser(dep, o, spec);
        const r = await dep.actors.call(realmRef, o.realm, { type: 'resetApiKey', caller: o.server, userId: u.user_id });
        await dep.publish(subjects.authRevoked, { realmId: o.org.realmId, userIds: r.revoked });
        if (opts.zuliprc) writeZuliprc(opts.zuliprc, r.email, r.api_key, realmUrl(dep.siteUrl, o.org.subdomain));
        const out = { user_id: r.user_id, email: r.email, api_key: opts.zuliprc ? null : r.api_key, zuliprc: opts.zuliprc ?? null };
        print(json, out, (v) => (v.zuliprc ? `New key for ${v.email} written to ${v.zuliprc}\n` : `New API key for ${v.email}: ${v.api_key}\n`));
      }),
    );

  users
    .command('set-password <user>')
    .description("set a user's password, read from standard input")
    .action((spec: string, _o, cmd: Command) =>
      run(async (dep, json) => {
        const password = await readSecret('password');
        const o = await inOrganization(dep, orgOf(cmd));
        const u = await findUser(dep, o, spec);
        await dep.actors.call(realmRef, o.realm, { type: 'setPassword', caller: o.server, userId: u.user_id, password });
        print(json, { user_id: u.user_id, email: u.email }, (v) => `Password set for ${v.email}\n`);
      }),
    );
}
