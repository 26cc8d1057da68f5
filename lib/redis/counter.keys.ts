import calculateSlot from 'cluster-key-slot';
import { COUNTER_DEFAULTS } from '../counter.constants.js';
import { RUN_SHARDED_ID_TEXT } from '../model/row-id.js';

/** Digits an integer id drops to name its run of ids (see `CounterKeys.shardOf`): runs of 100. */
const RUN_DIGITS = 2;

/**
 * The key layout: every Redis key the module uses is named here, and only here. Scripts get each key
 * they touch in `KEYS`, built by this module; no Lua code makes a key name.
 *
 * Rows are spread over `shards` shards per entity. The hash tag names a slot group of an entity, not a
 * row: `ctr:{article:1}:17:r:42` is row 42 of shard 17, and `ctr:{article:1}:17:dirty` that shard's dirty
 * set. Shard n is in slot group n mod `slotsPerEntity`, so a row, its shard's keys and the other shards
 * of its group share one cluster slot, and a script that touches a row and its shard stays in that slot.
 */
export class CounterKeys {
  /** The ShardKeys of each entity, built once. */
  private readonly cache = new Map<string, readonly ShardKeys[]>();
  private repairKeys?: RepairKeys;
  /** Slot groups per entity: never more than there are shards. */
  private readonly slotGroups: number;

  constructor(
    private readonly prefix: string,
    readonly shards: number,
    slotsPerEntity: number = COUNTER_DEFAULTS.slotsPerEntity,
  ) {
    this.slotGroups = Math.min(shards, slotsPerEntity);
  }

  /** Encodes an id so that `{`, `}` and `:` in it can never break a key or its hash tag. */
  encodeId(id: string): string {
    return encodeURIComponent(id);
  }

  decodeId(encodedId: string): string {
    return decodeURIComponent(encodedId);
  }

  /**
   * The shard of a row, stable across processes and releases: FNV-1a of the encoded id, where an integer
   * id counts by its run of 100 (its sign and every digit but the last two), so ids 1200-1299 share a
   * shard. Rows with close integer keys are stored close together in the table, so a flush transaction
   * of such a run rewrites a few pages instead of one per row (docs/PERFORMANCE.md, "Shards by runs of 100 ids").
   */
  shardOf(encodedId: string): number {
    const end = RUN_SHARDED_ID_TEXT.test(encodedId)
      ? Math.max(encodedId.startsWith('-') ? 1 : 0, encodedId.length - RUN_DIGITS)
      : encodedId.length;
    let hash = 0x811c9dc5;
    for (let i = 0; i < end; i++) {
      hash ^= encodedId.charCodeAt(i);
      hash = Math.imul(hash, 0x01000193);
    }
    return (hash >>> 0) % this.shards;
  }

  /** Every shard of an entity. */
  shardsOf(entityKey: string): readonly ShardKeys[] {
    let shards = this.cache.get(entityKey);
    if (!shards) {
      const entity = `${this.prefix}:{${encodeURIComponent(entityKey)}`;
      shards = Array.from(
        { length: this.shards },
        (_, shard) => new ShardKeys(`${entity}:${shard % this.slotGroups}}`, shard),
      );
      this.cache.set(entityKey, shards);
    }
    return shards;
  }

  shard(entityKey: string, shard: number): ShardKeys {
    return this.shardsOf(entityKey)[shard];
  }

  /** The keys of the deployment's repairs after losses of Redis data. */
  get repair(): RepairKeys {
    return (this.repairKeys ??= new RepairKeys(`${this.prefix}:{repair}`));
  }
}

/**
 * The keys of the repairs after losses of Redis data, one pair per deployment (key prefix); they share
 * a hash tag, so one script touches both.
 */
export class RepairKeys {
  /**
   * Per counter to repair (`<entity key> <counter>`), its walk: `<walk id> <not before (ms)> <progress>`,
   * where progress is '-' until the walk starts (a hash, never expires).
   */
  readonly jobs: string;
  /** Which instance walks the repairs, with an expiry (a string). */
  readonly lease: string;

  constructor(tag: string) {
    this.jobs = `${tag}:jobs`;
    this.lease = `${tag}:lease`;
  }
}

/** The keys of one shard; all share the hash tag of its slot group. */
export class ShardKeys {
  /** What every key of the shard starts with; unique to the shard. */
  readonly tag: string;
  /** Rows with changes no flush has claimed, scored by when each became dirty (a sorted set). */
  readonly dirty: string;
  /** Which flusher owns the shard, with an expiry (a string). */
  readonly lease: string;
  /** The changes claimed by a flush and not yet acknowledged, with the batch's own fields ('#…'). */
  readonly batch: string;
  /** Bumped by every acknowledged batch; never expires, so its absence means Redis lost the shard's data. */
  readonly generation: string;
  /** Per "<encoded id> <counter>", the delta no flush has claimed yet (a hash). */
  readonly pending: string;
  /**
   * Changes of counters that the flusher which claimed them did not know (an instance deployed before
   * the counter was added), until one that knows them claims the shard, and `#at`, when changes were
   * last given back (a hash without TTL; see give-back.lua.ts).
   */
  readonly unknown: string;
  /**
   * The idempotency keys of the shard's applied keyed changes, `<encoded id> <key>`, scored by when each
   * expires (a sorted set without TTL, pruned by keyed changes).
   */
  readonly idempotency: string;
  /** The cluster slot of every key of the shard (and of the other shards of its group). */
  readonly slot: number;
  /**
   * Written just before a wait for the AOF, so that the wait covers every write acknowledged before it
   * (see aof.waiter.ts); one per slot group, with a TTL (a string).
   */
  readonly aofMark: string;

  /** @param slotTag `prefix:{entity:group}`, the part of the key that decides the slot. */
  constructor(
    readonly slotTag: string,
    readonly shard: number,
  ) {
    this.tag = `${slotTag}:${shard}`;
    this.slot = calculateSlot(slotTag);
    this.dirty = `${this.tag}:dirty`;
    this.lease = `${this.tag}:lease`;
    this.batch = `${this.tag}:batch`;
    this.generation = `${this.tag}:gen`;
    this.pending = `${this.tag}:pending`;
    this.unknown = `${this.tag}:unknown`;
    this.idempotency = `${this.tag}:idem`;
    this.aofMark = `${slotTag}:aof`;
  }

  /** The hash of a row's live values (`v:<counter>` fields), a cache that expires. */
  row(encodedId: string): string {
    return `${this.tag}:r:${encodedId}`;
  }
}
