/** Finding the organization a command names (`--org acme`, `--org 3`, `--org .` for the root domain's) and acting in it. */
import { DIRECTORY_ID, directoryRef, SERVER_CALLER } from '../actors/directory/ref.ts';
import { realmActorId, realmRef } from '../actors/realm/ref.ts';
import type { Caller } from '../actors/runtime/action.ts';
import type { Command } from 'commander';
import type { OrganizationRecord } from '../storage/tables.ts';
import type { Deployment } from './connect.ts';
import { UsageError } from './output.ts';

/** A command group whose commands act in one organization, named by the group's `--org`; `orgOf(subcommand)` reads it. */
export function organizationGroup(program: Command, name: string, description: string): { group: Command; orgOf: (cmd: Command) => string } {
  const group = program.command(name).description(description).requiredOption('--org <org>', "the organization: its subdomain, its realm ID, or '.' for the root domain's");
  return { group, orgOf: (cmd) => (cmd.parent!.opts() as { org: string }).org };
}

export async function listOrganizations(dep: Deployment): Promise<OrganizationRecord[]> {
  return (await dep.actors.call(directoryRef, DIRECTORY_ID, { type: 'listOrganizations', caller: SERVER_CALLER })).organizations;
}

export async function findOrganization(dep: Deployment, spec: string): Promise<OrganizationRecord> {
  const orgs = await listOrganizations(dep);
  const subdomain = spec === '.' ? '' : spec.toLowerCase();
  const org = /^\d+$/.test(spec) ? orgs.find((o) => o.realmId === Number(spec)) : orgs.find((o) => o.subdomain === subdomain);
  if (!org) throw new UsageError(`No organization '${spec}' (see: parley org list)`);
  return org;
}

export interface InOrganization {
  org: OrganizationRecord;
  realm: string;
  /** The server itself, for the operator's own actions. */
  server: Caller;
  /** The organization's longest-standing owner: the CLI acts as them where the API already lets owners act. */
  operator: Caller;
}

export async function inOrganization(dep: Deployment, spec: string): Promise<InOrganization> {
  const org = await findOrganization(dep, spec);
  const realm = realmActorId(org.realmId);
  const server = { realmId: org.realmId, userId: null };
  const { userId } = await dep.actors.call(realmRef, realm, { type: 'operatorIdentity', caller: server });
  return { org, realm, server, operator: { realmId: org.realmId, userId } };
}

/** A user by ID or email, among the organization's (deactivated ones included). */
export async function findUser(dep: Deployment, o: InOrganization, spec: string): Promise<{ user_id: number; email: string; full_name: string; role: number; is_active: boolean }> {
  const { members } = (await dep.actors.call(realmRef, o.realm, { type: 'listUsers', caller: o.operator, userIds: null, clientExtavatar: false, includeCustomProfileFields: false })) as unknown as { members: Array<{ user_id: number; email: string; delivery_email?: string; full_name: string; role: number; is_active: boolean }> };
  const wanted = spec.toLowerCase();
  const u = /^\d+$/.test(spec) ? members.find((m) => m.user_id === Number(spec)) : members.find((m) => m.email.toLowerCase() === wanted || m.delivery_email?.toLowerCase() === wanted);
  if (!u) throw new UsageError(`No user '${spec}' in ${o.org.subdomain || '(root)'}`);
  return u;
}
