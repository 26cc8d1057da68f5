import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { CounterLedgerEntry } from '../../../lib/index.js';
import { FlushPipeline } from '../../../lib/flush/flush.pipeline.js';
import { CounterKeys } from '../../../lib/redis/counter.keys.js';
import { FlushStore } from '../../../lib/redis/flush.store.js';
import { CounterDatabase } from '../../../lib/sql/counter.database.js';
import type { DeltaBatch } from '../../../lib/model/delta-batch.js';
import type { CounterApp } from '../../support/counter-app.js';
import { useCounterSuite } from '../../support/counter-suite.js';
import { DATABASES } from '../../../support/databases.js';
import { dirtyEveryShard, expectEveryShardWritten } from '../../support/every-shard-dirty.js';

// Performance contract: these tests pin the shape of an optimisation documented in docs/PERFORMANCE.md
// ("Flush pipeline": shards gathered into transactions), not a guarantee, and change when that optimisation
// does. The guarantees it must keep are proven by the specs in test/integration/.

const SHARDS = 4;

// A flush gathers the batches of several shards into one transaction, and claims one entity's shards
// one after another, so that a transaction mostly holds one table's rows.
describe.each(DATABASES)('batches of several shards gathered in one transaction on %s', (database) => {
  const suite = useCounterSuite(database, 'group-shape', { shards: SHARDS });
  const { prefix } = suite;
  let counter: CounterApp;
  beforeAll(() => void (counter = suite.counter));
  afterEach(() => vi.restoreAllMocks());

  const keys = new CounterKeys(prefix, SHARDS);
  const batchShards = (batches: DeltaBatch[]) => batches.map((batch) => `${batch.entity.key}/${batch.shard}`);
  const ledgerRows = () => counter.dataSource.getRepository(CounterLedgerEntry).count();
  const dirtyRows = () => dirtyEveryShard(counter, keys, prefix);

  it('writes the batches of every dirty shard in at most as many transactions as it runs at once', async () => {
    const rows = await dirtyRows();
    const ledgerBefore = await ledgerRows();
    const databaseService = counter.app.get(CounterDatabase);
    const apply = vi.spyOn(databaseService, 'applyBatches');

    const report = await counter.counters.flush();
    expect(report.error).toBeUndefined();
    expect(report).toMatchObject({ batches: 2 * SHARDS, rows: 20, recoveredBatches: 0, failedShards: 0 });
    // 8 shards' batches in at most one transaction per worker: each worker takes shards until none are
    // left (a worker that only met the shards of an entity without changes writes none).
    expect(apply.mock.calls.length).toBeLessThanOrEqual(
      new FlushPipeline(1, databaseService.transactionsAtOnce).workers,
    );
    const written = apply.mock.calls.flatMap(([batches]) => batchShards(batches));
    expect(written.sort()).toEqual([...rows.shards].sort());
    expect(await ledgerRows()).toBe(ledgerBefore + 2 * SHARDS);
    await expectEveryShardWritten(counter, rows);
  });

  it("claims one entity's shards one after another, so that a transaction mostly holds one table's rows", async () => {
    const rows = await dirtyRows();
    const claim = vi.spyOn(counter.app.get(FlushStore), 'claim');
    const report = await counter.counters.flush();
    expect(report.error).toBeUndefined();
    expect(report).toMatchObject({ batches: 2 * SHARDS, rows: 20, failedShards: 0 });
    // Every shard of both entities has rows, and holds fewer than a batch: one claim each.
    const claimed = claim.mock.calls.map(([shard]) => shard.tag.split(':{')[1].split(':')[0]);
    expect(claimed).toHaveLength(2 * SHARDS);
    const entityRuns = claimed.filter((entity, at) => at === 0 || entity !== claimed[at - 1]);
    expect(entityRuns).toHaveLength(2);
    expect(new Set(entityRuns).size).toBe(2);
    await expectEveryShardWritten(counter, rows);
  });
});
