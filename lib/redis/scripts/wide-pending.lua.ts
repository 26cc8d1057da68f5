/**
 * A field a shard's pending hash holds from its first change on: no change (the claim's reader skips
 * fields starting with '#'), with a value longer than Redis's default `hash-max-listpack-value` (64
 * bytes), so the hash is a hash table from the start. Up to `hash-max-listpack-entries` fields (512 by
 * default) Redis would otherwise keep it as a listpack, which every increment's HINCRBY searches field
 * by field. Redis's own time per HINCRBY on a hash of 150 fields: 1.2 µs as a listpack, 0.25 µs as a
 * hash table; of 500 fields: 3.2 and 0.3 µs. The whole one-change increment script, on a pending hash
 * of 100 / 300 / 500 fields: 5.7 / 6.4 / 8.0 µs against a listpack, 4.6 / 5.0 / 5.8 µs against a hash
 * table (redis-benchmark, one client, on the 2-core bench machine). The price: about 50 bytes more per
 * pending change while a shard holds fewer than 512, and a pending hash of this one field (248 bytes,
 * `MEMORY USAGE`) left in every shard once claimed.
 */
const WIDE_FIELD = '#wide';
const WIDE_VALUE = '-'.repeat(65);

/**
 * `make_wide(pending)` adds the field. The claim calls it on the new pending hash it leaves; an
 * increment calls it when its changes made the pending hash (the hash holds only the fields they just
 * made), which only a row's first change since a claim can do, so no other increment pays a command
 * for it.
 */
export const WIDE_PENDING_LUA = `
local function make_wide(pending)
  redis.call('HSET', pending, '${WIDE_FIELD}', '${WIDE_VALUE}')
end
`;
