/**
 * An actor's journal: its writes go to the store in the order they were made,
 * grouped into one commit while an earlier commit is in flight (group
 * commit). `append` resolves once the write is durable; `barrier` once
 * everything appended so far is. If a commit fails the journal is broken: the
 * actor's memory may be ahead of the store, so the host drops the actor and
 * loads it again (its claim completes or discards the failed commit).
 */
import type { Writer, WriteOp } from '../../storage/store.ts';

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

  private async flush(): Promise<void> {
    while (this.pending.length) {
      const batch: Pending[] = [];
      let size = 0;
      while (this.pending.length && (batch.length === 0 || size + this.pending[0]!.ops.length <= this.maxCommitOps)) {
        const p = this.pending.shift()!;
        batch.push(p);
        size += p.ops.length;
      }
      try {
        if (this.failure) throw this.failure;
        this.guard();
        await this.writer.commit(batch.flatMap((p) => p.ops));
        for (const p of batch) p.resolve();
      } catch (err) {
        this.failure ??= err;
        for (const p of batch) p.reject(err);
      }
    }
  }
}
