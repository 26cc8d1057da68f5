import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { FlushPipeline, type FlushSteps } from '../../lib/flush/flush.pipeline.js';

/** A shard with `batches` batches to write, one per claim. */
interface Shard {
  name: string;
  batches: number;
}

/**
 * Steps over shards held in memory: a claim takes up to `claimsAtOnce` shards left, a write keeps its
 * batches, an acknowledgement (after `ackMs`) puts a shard with batches left back among those left.
 */
function shardSteps(
  shards: Shard[],
  options: { ackMs?: number; stopAfterWrites?: number; refuseGroups?: boolean } = {},
) {
  const left = [...shards];
  const written: string[] = [];
  const acknowledged: string[] = [];
  let acknowledging = 0;
  const steps: FlushSteps<Shard, Shard> = {
    claim: async (_rows, claimsAtOnce) => left.splice(0, claimsAtOnce),
    write: async (batches) => {
      await sleep(1);
      // A group the ledger refuses (one of it was written elsewhere) writes nothing: each goes again alone.
      if (options.refuseGroups && batches.length > 1) return { written: [], writeAlone: batches };
      written.push(...batches.map((shard) => `${shard.name}#${shard.batches}`));
      return { written: batches, writeAlone: [] };
    },
    acknowledge: async (batches) => {
      acknowledging++;
      await sleep(options.ackMs ?? 0);
      for (const shard of batches) {
        acknowledged.push(`${shard.name}#${shard.batches}`);
        shard.batches--;
        if (shard.batches > 0) left.push(shard);
      }
      acknowledging--;
    },
    shardsLeft: () => left.length > 0,
    stopped: () => options.stopAfterWrites !== undefined && written.length >= options.stopAfterWrites,
  };
  return {
    steps,
    written,
    acknowledged,
    get acknowledging() {
      return acknowledging;
    },
  };
}

// How a flush's workers go through the shards: whatever the overlap of claims, writes and
// acknowledgements, every batch claimed is written and acknowledged once, and the flush ends only once
// the last acknowledgement has.
describe('the flush pipeline', () => {
  it('runs a worker per transaction the database takes at once, and at least three', () => {
    expect([1, 3, 4, 16].map((transactions) => new FlushPipeline(1_000, transactions).workers)).toEqual([3, 3, 4, 16]);
  });

  it('writes and acknowledges every batch of every shard once, and ends after the last acknowledgement', async () => {
    const shards = Array.from({ length: 10 }, (_, i) => ({ name: `s${i}`, batches: 1 + (i % 3) }));
    const expected = shards.flatMap(({ name, batches }) =>
      Array.from({ length: batches }, (_, b) => `${name}#${batches - b}`),
    );
    const run = shardSteps(shards, { ackMs: 2 });
    await new FlushPipeline(1_000, 2).run(run.steps);
    expect(run.acknowledging).toBe(0);
    expect([...run.written].sort()).toEqual([...expected].sort());
    expect([...run.acknowledged].sort()).toEqual([...expected].sort());
  });

  it('claims again a shard that an acknowledgement still in progress puts back', async () => {
    // One shard of three batches: each claim after the first finds it only once the ack before is done.
    const run = shardSteps([{ name: 'only', batches: 3 }], { ackMs: 20 });
    await new FlushPipeline(1_000, 1).run(run.steps);
    expect(run.written).toEqual(['only#3', 'only#2', 'only#1']);
    expect(run.acknowledged).toEqual(['only#3', 'only#2', 'only#1']);
  });

  it('writes the batches of a group the ledger refused each on its own, and acknowledges each once', async () => {
    const shards = Array.from({ length: 8 }, (_, i) => ({ name: `s${i}`, batches: 2 }));
    const expected = shards.flatMap(({ name }) => [`${name}#2`, `${name}#1`]);
    const run = shardSteps(shards, { ackMs: 2, refuseGroups: true });
    await new FlushPipeline(1_000, 1).run(run.steps);
    expect(run.acknowledging).toBe(0);
    expect([...run.written].sort()).toEqual([...expected].sort());
    expect([...run.acknowledged].sort()).toEqual([...expected].sort());
  });

  it('claims nothing more once the flush stopped, and still acknowledges what it wrote', async () => {
    const run = shardSteps(
      Array.from({ length: 40 }, (_, i) => ({ name: `s${i}`, batches: 1 })),
      { ackMs: 5, stopAfterWrites: 1 },
    );
    const pipeline = new FlushPipeline(1_000, 1);
    await pipeline.run(run.steps);
    expect(run.acknowledging).toBe(0);
    expect([...run.acknowledged].sort()).toEqual([...run.written].sort());
    // Each worker may have had one claim under way when the first write stopped the flush.
    expect(run.written.length).toBeLessThanOrEqual(pipeline.workers * pipeline.claimsAtOnce);
  });
});
