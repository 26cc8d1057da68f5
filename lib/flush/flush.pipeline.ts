/** What a write of a group of batches came to. */
export interface GroupWritten<Claimed, Written> {
  /** The batches the database has now, to acknowledge. */
  written: Written[];
  /** Batches to write again, each on its own: their transaction found one of them in the ledger already. */
  writeAlone: Claimed[];
}

/** What a flush worker does, step by step (see CounterFlusher). */
export interface FlushSteps<Claimed, Written> {
  /** Claims batches of shards left, `claimsAtOnce` shards per round trip, until they hold about `rows` rows. */
  claim(rows: number, claimsAtOnce: number): Promise<Claimed[]>;
  /** Writes a group of batches in one transaction. Never rejects. */
  write(batches: Claimed[]): Promise<GroupWritten<Claimed, Written>>;
  /** Acknowledges written batches. Never rejects. */
  acknowledge(batches: Written[]): Promise<void>;
  /** Whether shards are left to claim. */
  shardsLeft(): boolean;
  /** Whether the flush stopped (Redis or the database unavailable, too many failures). */
  stopped(): boolean;
}

/**
 * How a flush overlaps its round trips and transactions: the one place that decides how many workers
 * run, how many shards a claim round trip takes, that acknowledgements travel with the next claims, and
 * that the batches of a transaction the ledger refused go again one by one.
 * The figures behind each are in docs/PERFORMANCE.md, "Flush pipeline".
 */
export class FlushPipeline {
  /**
   * Workers of one flush: one per transaction the database runs at once, and at least three, so that
   * with one transaction at a time (SQLite) two claim their next batches while the third one's runs.
   */
  readonly workers: number;
  /**
   * Shards a worker claims per round trip: two per 1,000 rows of a transaction (a transaction is often
   * two shards' batches), so a large backlog costs a round trip per transaction while flushers of other
   * instances still find shards free between two rounds.
   */
  readonly claimsAtOnce: number;

  /**
   * @param rowsPerTransaction rows a worker gathers before it writes them (`flushBatchSize`).
   * @param transactionsAtOnce batch transactions the database runs at once for this instance.
   */
  constructor(
    readonly rowsPerTransaction: number,
    transactionsAtOnce: number,
  ) {
    this.workers = Math.max(3, transactionsAtOnce);
    this.claimsAtOnce = Math.max(2, Math.ceil((2 * rowsPerTransaction) / 1_000));
  }

  /** Runs the workers until no shard is left or the flush stops. */
  async run<Claimed, Written>(steps: FlushSteps<Claimed, Written>): Promise<void> {
    await Promise.all(Array.from({ length: this.workers }, () => this.work(steps)));
  }

  /**
   * One worker: claim, write, acknowledge, over and over. A group's acknowledgements are not awaited
   * before the next claims, so that both reach Redis in one round trip. Batches to write alone are
   * written (and acknowledged) before anything more is claimed, even once the flush stopped: they are
   * claimed already.
   */
  private async work<Claimed, Written>(steps: FlushSteps<Claimed, Written>): Promise<void> {
    let acknowledging: Promise<void> = Promise.resolve();
    const writeAlone: Claimed[] = [];
    while (writeAlone.length > 0 || !steps.stopped()) {
      const group =
        writeAlone.length > 0 ? writeAlone.splice(0, 1) : await steps.claim(this.rowsPerTransaction, this.claimsAtOnce);
      // A shard acknowledged with rows left is back among those left by now.
      await acknowledging;
      if (group.length === 0) {
        if (!steps.shardsLeft()) return;
        continue;
      }
      const { written, writeAlone: again } = await steps.write(group);
      writeAlone.push(...again);
      acknowledging = steps.acknowledge(written);
    }
    await acknowledging;
  }
}
