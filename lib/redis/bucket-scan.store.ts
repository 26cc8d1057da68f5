import { GRANULARITY_CODE, type Granularity } from '../model/time-bucket.js';
import type { ShardKeys } from './counter.keys.js';
import { scriptCall, type ScriptRunner } from './script.runner.js';

/** Fields one HSCAN of a page walks, about: a page stays a short call (see bucket-scan.lua.ts). */
const FIELDS_PER_PAGE = 1_000;
/** The hashes a scan walks, in order, as bucket-scan.lua.ts numbers them; DONE: none left. */
const PENDING = 1;
const BATCH = 3;
const DONE = 4;

/** Which buckets a scan looks for: one counter's of one granularity, whose starts are in [from, to). */
export interface BucketScanTarget {
  counter: string;
  granularity: Granularity;
  from: number;
  to: number;
}

/** Where a scan of a shard goes on: the hash (as bucket-scan.lua.ts numbers them) and its HSCAN cursor. */
export interface BucketScanCursor {
  hash: number;
  cursor: string;
}

/** A bucket's change found in a shard. */
export interface ScannedBucketChange {
  /** Its hash, row and bucket, one text: HSCAN may give a field twice, a caller keeps one per place. */
  place: string;
  /**
   * False: pending or given back, which no database has; true: in the batch in flight, which the
   * database has once the ledger has it.
   */
  inFlight: boolean;
  encodedId: string;
  /** The bucket's start, Unix seconds. */
  start: number;
  value: number;
}

/** One page of a scan, and the shard's version when it was read. */
export interface BucketScanPage {
  /** Generation, batch id and the batch's number of fields, as one text: moves with every flush step. */
  version: string;
  /** The shard's batch in flight ('' if none). */
  batchId: string;
  changes: ScannedBucketChange[];
  /** Where the next page starts; undefined when the scan is done. */
  next: BucketScanCursor | undefined;
}

/** A scan's first page starts at the pending hash's first field. */
export const FIRST_PAGE: BucketScanCursor = { hash: PENDING, cursor: '0' };

/** Reads the changes of one counter's buckets that wait in a shard, whatever their rows, a page at a time. */
export class BucketScanStore {
  constructor(private readonly runner: ScriptRunner) {}

  /** The page of `shard`'s waiting changes of `target` that starts at `at`. */
  page(shard: ShardKeys, target: BucketScanTarget, at: BucketScanCursor): Promise<BucketScanPage> {
    const suffix = `${target.counter}@${GRANULARITY_CODE[target.granularity]}`;
    const argv = [`* ${escapeGlob(suffix)}*`, suffix, target.from, target.to, at.hash, at.cursor, FIELDS_PER_PAGE];
    const keys = [shard.generation, shard.batch, shard.pending, shard.unknown];
    return this.runner.sendInTurn(
      scriptCall('nestjsCounterBucketScan', shard.slot, keys, argv, (reply) => {
        const [generation, batchId, batchFields, hash, cursor, ...found] = reply as Array<string | number>;
        const changes: ScannedBucketChange[] = [];
        for (let f = 0; f < found.length; f += 4) {
          changes.push({
            place: `${found[f]} ${found[f + 1]} ${found[f + 2]}`,
            inFlight: Number(found[f]) === BATCH,
            encodedId: String(found[f + 1]),
            start: Number(found[f + 2]),
            value: Number(found[f + 3]),
          });
        }
        return {
          version: `${String(generation)} ${String(batchId)} ${String(batchFields)}`,
          batchId: String(batchId),
          changes,
          next: Number(hash) === DONE ? undefined : { hash: Number(hash), cursor: String(cursor) },
        };
      }),
    );
  }

  /** The shard's version alone (see BucketScanPage.version). */
  async version(shard: ShardKeys, target: BucketScanTarget): Promise<string> {
    return (await this.page(shard, target, { hash: DONE, cursor: '0' })).version;
  }
}

/** `text` as a glob pattern that matches it alone. */
function escapeGlob(text: string): string {
  return text.replace(/[\\*?[\]]/g, (character) => `\\${character}`);
}
