/** `parley org ...`: create, list, deactivate, reactivate organizations, one-time creation links, and the accounts of an address server-wide. */
import { chmodSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { DIRECTORY_ID, directoryRef, SERVER_CALLER } from '../../actors/directory/ref.ts';
import { Role } from '../../actors/model.ts';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { realmUrl } from '../../lib/hosts.ts';
import { newApiKey } from '../../lib/secrets.ts';
import type { Deployment } from '../connect.ts';
import { findOrganization, listOrganizations } from '../organization.ts';
import { print, readSecret, table } from '../output.ts';

export type Run = (action: (dep: Deployment, json: boolean) => Promise<void>) => Promise<void>;

/** A zuliprc for a user, readable by its owner only (it holds the API key in plain text). */
export function writeZuliprc(path: string, email: string, key: string, site: string): void {
  writeFileSync(path, `[api]\nemail=${email}\nkey=${key}\nsite=${site}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
}

export function organizationCommands(program: Command, run: Run): void {
  const org = program.command('org').description('organizations: create, list, deactivate, reactivate, creation links');

  org
    .command('create')
    .description("create an organization and its owner; writes the owner's zuliprc (mode 0600) and shows the API key once, here")
    .requiredOption('--name <name>', 'the organization name')
    .requiredOption('--subdomain <subdomain>', "the host part before the site's domain ('.' for the root domain)")
    .requiredOption('--owner-email <email>', "the owner's email address")
    .requiredOption('--owner-name <name>', "the owner's full name")
    .option('--password-stdin', "read the owner's password from standard input (otherwise the owner signs in with the API key only)")
    .option('--zuliprc <path>', "where to write the owner's zuliprc", 'owner.zuliprc')
    .option('--org-type <id>', "the organization's type (Zulip's org_type: 10 business, 20 open source, 30/35 education, 40 research, 50 event, 60 non-profit, 70 government, 80 political group, 90 community, 100 personal, 1000 other)", '0')
    .option('--demo', 'a demo organization: scheduled for deletion in 30 days unless its owner gives it a new subdomain (PATCH /realm string_id)')
    .action((o: { name: string; subdomain: string; ownerEmail: string; ownerName: string; passwordStdin?: boolean; zuliprc: string; orgType: string; demo?: boolean }) =>
      run(async (dep, json) => {
        const password = o.passwordStdin ? await readSecret('password') : undefined;
        const subdomain = o.subdomain === '.' ? '' : o.subdomain;
        const owner = { email: o.ownerEmail, fullName: o.ownerName, role: Role.OWNER, canCreateUsers: true, canChangeUserEmails: true, apiKey: newApiKey(), ...(password ? { password } : {}) };
        const r = await dep.actors.call(directoryRef, DIRECTORY_ID, { type: 'createOrganization', caller: SERVER_CALLER, subdomain, name: o.name, users: [owner], demo: o.demo ?? false, orgType: Number(o.orgType) });
        const url = realmUrl(dep.siteUrl, r.organization.subdomain);
        const key = r.users[0]?.apiKey;
        if (key) writeZuliprc(o.zuliprc, o.ownerEmail, key, url);
        const out = { organization: r.organization, url, owner: { user_id: r.users[0]?.userId, email: o.ownerEmail, api_key: key ?? null }, zuliprc: key ? o.zuliprc : null };
        print(json, out, (v) => `Created ${v.organization.name} (realm ${v.organization.realmId}) at ${v.url}\nOwner ${v.owner.email}, API key ${v.owner.api_key ?? '(unchanged)'} (shown once; also in ${v.zuliprc ?? '-'})\n`);
      }),
    );

  org
    .command('accounts <address>')
    .description("the accounts an email address has on this server, in every organization, active or not (the directory's address index)")
    .action((address: string) =>
      run(async (dep, json) => {
        const { accounts } = await dep.actors.call(directoryRef, DIRECTORY_ID, { type: 'accountsWithAddress', caller: SERVER_CALLER, address });
        const rows = accounts.map((a) => ({ realm_id: a.realmId, user_id: a.userId })).sort((a, b) => a.realm_id - b.realm_id || a.user_id - b.user_id);
        print(json, rows, (v) => table(v, ['realm_id', 'user_id']));
      }),
    );

  org
    .command('list')
    .description('list every organization')
    .action(() =>
      run(async (dep, json) => {
        const orgs = (await listOrganizations(dep)).map((o) => ({ ...o, url: realmUrl(dep.siteUrl, o.subdomain), state: o.deactivated ? 'deactivated' : 'active' }));
        print(json, orgs, (v) => table(v, ['realmId', 'subdomain', 'name', 'state', 'url']));
      }),
    );

  for (const [name, deactivated] of [['deactivate', true], ['reactivate', false]] as const) {
    org
      .command(`${name} <org>`)
      .description(deactivated ? "deactivate an organization (its users get 401 REALM_DEACTIVATED; nothing is deleted)" : 'reactivate a deactivated organization')
      .action((spec: string) =>
        run(async (dep, json) => {
          const target = await findOrganization(dep, spec);
          const r = await dep.actors.call(directoryRef, DIRECTORY_ID, { type: 'setOrganizationDeactivated', caller: SERVER_CALLER, realmId: target.realmId, deactivated });
          print(json, r.organization, (v) => `${v.name} (realm ${v.realmId}) is ${v.deactivated ? 'deactivated' : 'active'}\n`);
        }),
      );
  }

  org
    .command('digest <org>')
    .description("run the organization's weekly digest email now (as on its digest weekday); it must have digest_emails_enabled on")
    .requiredOption('--now', 'run it now (the only mode: the weekly run is armed by the organization itself)')
    .action((spec: string) =>
      run(async (dep, json) => {
        const target = await findOrganization(dep, spec);
        const r = await dep.actors.call(realmRef, realmActorId(target.realmId), { type: 'runDigestNow', caller: { realmId: target.realmId, userId: null } });
        print(json, { realm_id: target.realmId, run: new Date(r.run).toISOString() }, (v) => `Digest of realm ${v.realm_id} started (run ${v.run}); mail goes out as each chunk is composed\n`);
      }),
    );

  org
    .command('retention <org>')
    .description("run the organization's message retention policy now (as its daily run does): delete the messages older than their channel's or the organization's message_retention_days")
    .requiredOption('--now', 'run it now (the only mode: the daily run is armed by the organization itself)')
    .action((spec: string) =>
      run(async (dep, json) => {
        const target = await findOrganization(dep, spec);
        const r = await dep.actors.call(realmRef, realmActorId(target.realmId), { type: 'runRetentionNow', caller: { realmId: target.realmId, userId: null } });
        print(json, { realm_id: target.realmId, run: new Date(r.run).toISOString() }, (v) => `Retention policy of realm ${v.realm_id} started (run ${v.run}); old messages are deleted in batches\n`);
      }),
    );

  org
    .command('link')
    .description("a one-time link to the page where a future owner creates their organization (Zulip's generate_realm_creation_link)")
    .option('--days <days>', 'how long the link works', '7')
    .action((o: { days: string }) =>
      run(async (dep, json) => {
        const r = await dep.actors.call(directoryRef, DIRECTORY_ID, { type: 'createOrganizationLink', caller: SERVER_CALLER, validDays: Number(o.days) });
        const out = { url: `${new URL(dep.siteUrl).origin}/new/${r.token}`, expires_at: new Date(r.expiresAt).toISOString() };
        print(json, out, (v) => `${v.url}\n(valid once, until ${v.expires_at})\n`);
      }),
    );
}
