import type { CountedEntity } from '../model/counted-entity.js';
import { canonicalIdText } from '../model/row-id.js';
import {
  FIRST_PAGE,
  type BucketScanStore,
  type BucketScanTarget,
  type ScannedBucketChange,
} from '../redis/bucket-scan.store.js';
import type { CounterKeys, ShardKeys } from '../redis/counter.keys.js';

/** A row's changes of the buckets scanned that the database may not have. */
export interface WaitingRowChanges {
  /** Pending or given back: in no database. */
  waiting: number;
  /** In its shard's batch in flight: in the database once the ledger has `batchId`. */
  inFlight: number;
  batchId: string;
}

/** The changes of one counter's buckets that wait in every shard of an entity. */
export interface WaitingChanges {
  /** Per shard, in the order given, its version as its scan saw it throughout. */
  versions: string[];
  /** Per row with changes (its id as text, as the database keeps it). */
  rows: Map<string, WaitingRowChanges>;
  /** The batches in flight that hold some of the changes. */
  batchIds: string[];
}

/** One shard's changes of a scan whose pages all saw one version. */
interface ShardScan {
  version: string;
  batchId: string;
  changes: Iterable<ScannedBucketChange>;
}

/**
 * Reads `target`'s changes that wait in each of `shards` (all at once, a page at a time each); 'moved'
 * when a flush moved a shard's changes between two of its pages, so the read must start over.
 */
export async function readWaitingChanges(
  store: BucketScanStore,
  keys: CounterKeys,
  entity: CountedEntity,
  shards: readonly ShardKeys[],
  target: BucketScanTarget,
): Promise<WaitingChanges | 'moved'> {
  const scans = await Promise.all(shards.map((shard) => scanShard(store, shard, target)));
  if (scans.some((scan) => scan === undefined)) return 'moved';
  const rows = new Map<string, WaitingRowChanges>();
  const batchIds = new Set<string>();
  for (const { batchId, changes } of scans as ShardScan[]) {
    for (const change of changes) {
      const id = canonicalIdText(entity, keys.decodeId(change.encodedId));
      const row = rows.get(id) ?? { waiting: 0, inFlight: 0, batchId };
      if (change.inFlight) {
        row.inFlight += change.value;
        batchIds.add(batchId);
      } else {
        row.waiting += change.value;
      }
      rows.set(id, row);
    }
  }
  return { versions: scans.map((scan) => scan!.version), rows, batchIds: [...batchIds] };
}

/** Each shard's version now (see BucketScanPage.version), in the order given. */
export function readVersions(
  store: BucketScanStore,
  shards: readonly ShardKeys[],
  target: BucketScanTarget,
): Promise<string[]> {
  return Promise.all(shards.map((shard) => store.version(shard, target)));
}

/** Scans one shard to its end; undefined when its version moved between two pages. */
async function scanShard(
  store: BucketScanStore,
  shard: ShardKeys,
  target: BucketScanTarget,
): Promise<ShardScan | undefined> {
  let page = await store.page(shard, target, FIRST_PAGE);
  const { version, batchId } = page;
  // HSCAN may give a field twice: the later value, which only changes made meanwhile set apart, stands.
  const changes = new Map<string, ScannedBucketChange>();
  for (;;) {
    for (const change of page.changes) changes.set(change.place, change);
    if (!page.next) return { version, batchId, changes: changes.values() };
    page = await store.page(shard, target, page.next);
    if (page.version !== version) return undefined;
  }
}
