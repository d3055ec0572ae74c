/** `parley users ...`: list, create, change role, deactivate, reactivate, delete, reset API key, set password. */
import type { Command } from 'commander';
import { MAX_USERS_PER_BATCH, Role } from '../../actors/model.ts';
import { realmRef } from '../../actors/realm/ref.ts';
import { subjects } from '../../actors/subjects.ts';
import { realmUrl } from '../../lib/hosts.ts';
import { hashPassword } from '../../lib/secrets.ts';
import { importUsers, readImportFile, ROLES } from '../import.ts';
import { findUser, inOrganization, organizationGroup } from '../organization.ts';
import { print, readSecret, table, UsageError } from '../output.ts';
import { type Run, writeZuliprc } from './organizations.ts';

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
    .command('import <file>')
    .description('create users from a CSV file (header: email,full_name[,role][,password|password_hash]) or a JSON-lines file, in batches')
    .option('--format <format>', 'csv or jsonl (default: from the file name)')
    .option('--batch <n>', `users per batch, 1 to ${MAX_USERS_PER_BATCH} (each batch holds the organization's actor: ~0.5 ms per user)`, '200')
    .option('--skip-existing', 'leave out users whose email is in use (default: stop at the first batch holding one)')
    .option('--keys-out <path>', "write each created user's email,user_id,api_key there (mode 0600); otherwise API keys are not shown")
    .action((file: string, opts: { format?: string; batch: string; skipExisting?: boolean; keysOut?: string }, cmd: Command) =>
      run(async (dep, json) => {
        if (opts.format && opts.format !== 'csv' && opts.format !== 'jsonl') throw new UsageError(`--format must be csv or jsonl`);
        const rows = readImportFile(file, (opts.format as 'csv' | 'jsonl' | undefined) ?? null);
        const o = await inOrganization(dep, orgOf(cmd));
        const progress = json || !process.stderr.isTTY ? undefined : (done: number, total: number) => process.stderr.write(`\r${done}/${total}`);
        const r = await importUsers(dep, o, rows, { batchSize: Number(opts.batch), skipExisting: opts.skipExisting ?? false, keysOut: opts.keysOut ?? null, progress });
        if (progress) process.stderr.write('\n');
        print(json, r, (v) => `Created ${v.created} users in ${v.seconds.toFixed(1)} s (${Math.round(v.users_per_second)}/s, ${v.batches} batches, longest ${Math.round(v.longest_batch_ms)} ms)${v.skipped.length ? `; skipped ${v.skipped.length} in use` : ''}\n`);
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
    .command('delete <user>')
    .description("delete a user for good (by ID or email): deactivated, their name, address, credentials and settings removed, shown as a deleted user (is_deleted); every message they sent is deleted unless --preserve-messages")
    .option('--preserve-messages', 'keep the messages they sent (shown under "Deleted User <id>")')
    .action((spec: string, opts: { preserveMessages?: boolean }, cmd: Command) =>
      run(async (dep, json) => {
        const o = await inOrganization(dep, orgOf(cmd));
        const u = await findUser(dep, o, spec);
        const r = await dep.actors.call(realmRef, o.realm, { type: 'deleteUser', caller: o.server, userId: u.user_id, preserveMessages: opts.preserveMessages === true });
        if (r.revoked.length) await dep.publish(subjects.authRevoked, { realmId: o.org.realmId, userIds: r.revoked });
        print(json, { user_id: u.user_id, email: u.email, state: 'deleted', messages: opts.preserveMessages ? 'kept' : 'deleted' }, (v) => `${v.email} (user ${v.user_id}) is deleted; their messages are ${v.messages === 'kept' ? 'kept' : 'being deleted'}\n`);
      }),
    );

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
