import calculateSlot from 'cluster-key-slot';

/**
 * Key layout. The hash tag is the shard, not the row: `ctr:{article:17}:r:42` is row 42 of shard 17
 * and `ctr:{article:17}:dirty` that shard's dirty set, so a row and everything a script touches with it
 * live in one cluster slot.
 */
export class CounterKeys {
  /** The ShardKeys of each entity, built once: the increment path only indexes into them. */
  private readonly cache = new Map<string, readonly ShardKeys[]>();

  constructor(
    private readonly prefix: string,
    readonly shards: number,
  ) {}

  /** Encodes an id so that `{`, `}` and `:` in it can never break a key or its hash tag. */
  encodeId(id: string): string {
    return encodeURIComponent(id);
  }

  decodeId(encodedId: string): string {
    return decodeURIComponent(encodedId);
  }

  /** Stable across processes and releases: FNV-1a of the encoded id. */
  shardOf(encodedId: string): number {
    let hash = 0x811c9dc5;
    for (let i = 0; i < encodedId.length; i++) {
      hash ^= encodedId.charCodeAt(i);
      hash = Math.imul(hash, 0x01000193);
    }
    return (hash >>> 0) % this.shards;
  }

  /** Every shard of an entity. */
  shardsOf(entityKey: string): readonly ShardKeys[] {
    let shards = this.cache.get(entityKey);
    if (!shards) {
      const tag = `${this.prefix}:{${encodeURIComponent(entityKey)}`;
      shards = Array.from({ length: this.shards }, (_, shard) => new ShardKeys(`${tag}:${shard}}`));
      this.cache.set(entityKey, shards);
    }
    return shards;
  }

  shard(entityKey: string, shard: number): ShardKeys {
    return this.shardsOf(entityKey)[shard];
  }
}

/** The keys of one shard; all share one hash tag. */
export class ShardKeys {
  readonly dirty: string;
  readonly lease: string;
  readonly batch: string;
  readonly generation: string;
  readonly rowPrefix: string;
  /** The cluster slot of every key of the shard. */
  readonly slot: number;

  constructor(readonly tag: string) {
    this.slot = calculateSlot(tag);
    this.dirty = `${tag}:dirty`;
    this.lease = `${tag}:lease`;
    this.batch = `${tag}:batch`;
    this.generation = `${tag}:gen`;
    this.rowPrefix = `${tag}:r:`;
  }

  row(encodedId: string): string {
    return this.rowPrefix + encodedId;
  }
}
