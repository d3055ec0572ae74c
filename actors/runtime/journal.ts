/**
 * An actor's journal: its writes go to the store in the order they were made,
 * grouped into one commit while an earlier commit is in flight (group
 * commit). `append` resolves once the write is durable; `barrier` once
 * everything appended so far is. If a commit fails the journal is broken: the
 * actor's memory may be ahead of the store, so the host drops the actor and
 * loads it again (its claim completes or discards the failed commit).
 */
import { journalBatch } from '../../lib/metrics.ts';
import type { Writer, WriteOp } from '../../storage/store.ts';

const BATCH = journalBatch.child();

/** Commits in flight at once (see `flush`). */
const DEPTH = 2;

interface Pending {
  ops: WriteOp[];
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class Journal {
  private pending: Pending[] = [];
  private flushing: Promise<void> | null = null;
  private failure: unknown = null;
  /** Settles when the newest append so far is durable (or failed). */
  private last: Promise<void> = Promise.resolve();

  /** `guard` runs before every commit; it throws when the actor may no longer write. */
  constructor(
    private readonly writer: Writer,
    private readonly guard: () => void,
    private readonly maxCommitOps = 1000,
  ) {}

  get broken(): boolean {
    return this.failure !== null;
  }

  /** True when nothing appended is still waiting to become durable. */
  get idle(): boolean {
    return this.flushing === null && this.pending.length === 0;
  }

  append(ops: WriteOp[]): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    const p = new Promise<void>((resolve, reject) => {
      this.pending.push({ ops, resolve, reject });
      this.kick();
    });
    this.last = p;
    return p;
  }

  /** Resolves once every append made so far is durable; rejects if one of them failed. */
  barrier(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    return this.last;
  }

  /** Resolves once every commit started so far has finished (or failed); never rejects. */
  async drain(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  private kick(): void {
    if (this.flushing) return;
    this.flushing = this.flush().finally(() => {
      this.flushing = null;
      // Writes appended after the loop's last look and before this callback.
      if (this.pending.length) this.kick();
    });
  }

  /**
   * Commits pending writes, grouping what waits into one commit, with up to
   * DEPTH commits in flight (the store takes them in order; Cassandra writes
   * one's data while the next one's journal entry goes). Appends resolve in
   * order: a commit is acknowledged only after every earlier one was.
   */
  private async flush(): Promise<void> {
    const inFlight: Promise<void>[] = [];
    while (this.pending.length || inFlight.length) {
      if (!this.pending.length || inFlight.length >= DEPTH) {
        await inFlight.shift();
        continue;
      }
      const batch: Pending[] = [];
      let size = 0;
      while (this.pending.length && (batch.length === 0 || size + this.pending[0]!.ops.length <= this.maxCommitOps)) {
        const p = this.pending.shift()!;
        batch.push(p);
        size += p.ops.length;
      }
      BATCH.observe(batch.length);
      let commit: Promise<void>;
      try {
        if (this.failure) throw this.failure;
        this.guard();
        commit = this.writer.commit(latestPerRow(batch.flatMap((p) => p.ops)));
      } catch (err) {
        commit = Promise.reject(err);
      }
      // Settled in order below; handled now, so a failure is not an unhandled rejection meanwhile.
      commit.catch(() => {});
      const previous = inFlight.at(-1) ?? Promise.resolve();
      inFlight.push(
        previous.then(() => commit).then(
          () => {
            if (this.failure) throw this.failure;
            for (const p of batch) p.resolve();
          },
        ).catch((err: unknown) => {
          this.failure ??= err;
          for (const p of batch) p.reject(this.failure);
        }),
      );
    }
  }
}

/**
 * The ops of one commit with only the last op on each row: a commit is all or
 * nothing, so an earlier op on a row another op of the same commit rewrites
 * is never seen (a channel's topic and traffic counters, rewritten by every
 * send of a group commit, are written once).
 */
export function latestPerRow(ops: WriteOp[]): WriteOp[] {
  if (ops.length < 2) return ops;
  const rows = new Map<string, WriteOp>();
  for (const op of ops) {
    const key = `${op.table}\u0000${op.pk}\u0000${op.ck}`;
    rows.delete(key);
    rows.set(key, op);
  }
  return rows.size === ops.length ? ops : [...rows.values()];
}
