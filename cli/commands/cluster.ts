/** `parley cluster ...`: the actor nodes, who owns which shard and since when, queue counts, held polls; drain a node. */
import type { Command } from 'commander';
import type { LeaseView } from '../../actors/runtime/leases.ts';
import { subjects } from '../../actors/subjects.ts';
import { print, table } from '../output.ts';
import type { Run } from './organizations.ts';

const ASK_MS = 5000;

interface NodeStatus {
  nodeId: string;
  draining: boolean;
  shards: number[];
  queues?: number;
  polls?: number;
}

export function clusterCommands(program: Command, run: Run): void {
  const cluster = program.command('cluster').description('the actor nodes: shard owners and lease ages, event queues and held polls; drain a node');

  cluster
    .command('status')
    .description('every live actor node with its shards, event queues and held long polls, and each shard\'s owner and lease age')
    .option('--shards', 'also list every shard')
    .action((o: { shards?: boolean }) =>
      run(async (dep, json) => {
        const view = JSON.parse(await dep.requestText(subjects.admin, {}, ASK_MS)) as LeaseView;
        const nodes = await Promise.all(
          view.nodes.map(async (n) => {
            try {
              return { ...n, ...(JSON.parse(await dep.requestText(subjects.nodeAdmin(n.nodeId), { op: 'status' }, ASK_MS)) as NodeStatus) };
            } catch (err) {
              return { ...n, error: (err as Error).message };
            }
          }),
        );
        const out = { nodes, shards: view.shards };
        print(json, out, (v) => {
          const rows = v.nodes.map((n) => ({ node: n.nodeId, shards: 'shards' in n ? n.shards.length : '?', queues: 'queues' in n ? n.queues : '', polls: 'polls' in n ? n.polls : '', state: 'error' in n ? `unreachable: ${n.error}` : n.draining ? 'draining' : 'serving' }));
          const owned = v.shards.filter((s) => s.owner !== null).length;
          const ages = v.shards.map((s) => s.renewedMsAgo).filter((a): a is number => a !== null);
          let text = `${table(rows, ['node', 'shards', 'queues', 'polls', 'state'])}\n${owned}/${v.shards.length} shards owned; oldest lease renewal ${ages.length ? Math.max(...ages) : 0} ms ago\n`;
          if (o.shards) text += `\n${table(v.shards, ['shard', 'owner', 'token', 'renewedMsAgo'])}`;
          return text;
        });
      }),
    );

  cluster
    .command('drain <node>')
    .description('hand every shard of an actor node over to the others, as SIGTERM does (the process stays up, owning nothing)')
    .action((nodeId: string) =>
      run(async (dep, json) => {
        const status = JSON.parse(await dep.requestText(subjects.nodeAdmin(nodeId), { op: 'drain' }, 60_000)) as NodeStatus;
        print(json, status, (v) => `${v.nodeId} drained: ${v.shards.length} shards held\n`);
      }),
    );
}
