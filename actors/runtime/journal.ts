/**
 * An actor's journal: writes go to the store in the order they were made,
 * grouped into one store call while an earlier call is in flight (group
 * commit). `append` resolves once the write is durable, so the actor can
 * reply and publish events only then, while its mailbox moves on to the next
 * message. If a write fails the journal is broken: the actor's memory is ahead
 * of the store, so the owner must drop the actor and reload it.
 */
import type { Store, WriteOp } from '../../storage/store.ts';

interface Pending {
  ops: WriteOp[];
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class Journal {
  private pending: Pending[] = [];
  private flushing: Promise<void> | null = null;
  private failure: unknown = null;

  /** `guard` runs before every store call; it throws when the actor may no longer write. */
  constructor(
    private readonly store: Store,
    private readonly guard: () => void,
    private readonly maxBatchOps = 1000,
  ) {}

  get broken(): boolean {
    return this.failure !== null;
  }

  append(ops: WriteOp[]): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ ops, resolve, reject });
      this.kick();
    });
  }

  private kick(): void {
    if (this.flushing) return;
    this.flushing = this.flush().finally(() => {
      this.flushing = null;
      // Writes appended after the loop's last look and before this callback.
      if (this.pending.length) this.kick();
    });
  }

  /** Resolves once every write handed to the store so far has finished (or failed). */
  async drain(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  private async flush(): Promise<void> {
    while (this.pending.length) {
      const batch: Pending[] = [];
      let size = 0;
      while (this.pending.length && (batch.length === 0 || size + this.pending[0]!.ops.length <= this.maxBatchOps)) {
        const p = this.pending.shift()!;
        batch.push(p);
        size += p.ops.length;
      }
      try {
        if (this.failure) throw this.failure;
        this.guard();
        await this.store.write(batch.flatMap((p) => p.ops), batch.map((p) => p.ops.length));
        for (const p of batch) p.resolve();
      } catch (err) {
        this.failure ??= err;
        for (const p of batch) p.reject(err);
      }
    }
  }
}
