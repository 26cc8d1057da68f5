import { groupBy } from '../collections.js';
import type { CounterDatabase } from '../sql/counter.database.js';
import type { ShardWork } from './flush.run.js';

/**
 * Of the shards whose generation key bootstrap had to make (it was missing), those that lost their data
 * while no instance ran: the ledger shows this deployment (its batch ids start with `deploymentTag`, see
 * BatchIds) flushed them before, so their key had been made then. A shard whose ledger rows were all
 * pruned (`ledgerRetentionMs`) looks new, and its loss goes unnoticed here.
 */
export async function shardsLostWhileDown(
  database: CounterDatabase,
  made: ShardWork[],
  deploymentTag: string,
): Promise<ShardWork[]> {
  const lost: ShardWork[] = [];
  for (const [entity, shards] of groupBy(made, (work) => work.entity)) {
    const flushed = await database.flushedShards(entity, deploymentTag);
    lost.push(...shards.filter((work) => flushed.has(work.shard)));
  }
  return lost;
}
