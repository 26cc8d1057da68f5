import { IDEMPOTENCY_PRUNE_PER_CHANGE, UNKNOWN_CHANGES_KEPT_MS } from '../../counter.constants.js';
import { BUCKETS_LUA } from './buckets.lua.js';
import { CLOCK_LUA } from './clock.lua.js';
import { NUMBERS_LUA } from './numbers.lua.js';
import { ROW_CHANGE_LUA } from './row-change.lua.js';
import { WIDE_HASH_LUA } from './wide-hash.lua.js';

/** The Lua pieces a script may include, by name. */
const PIECES: Readonly<Record<string, string>> = {
  numbers: NUMBERS_LUA,
  clock: CLOCK_LUA,
  buckets: BUCKETS_LUA,
  'wide-hash': WIDE_HASH_LUA,
  'row-change': ROW_CHANGE_LUA,
  // The library's limits the scripts apply, from counter.constants.ts.
  limits: `
local IDEMPOTENCY_PRUNE_PER_CHANGE = ${IDEMPOTENCY_PRUNE_PER_CHANGE}
local UNKNOWN_CHANGES_KEPT_MS = ${UNKNOWN_CHANGES_KEPT_MS}
`,
};

const INCLUDE = /^--@include (\S+)\n/gm;

/**
 * A script's text as Redis runs it: each `--@include <piece>` line replaced by that piece (whose own
 * includes are resolved too), a piece included once, where first named.
 */
export function loadLua(lua: string, included = new Set<string>()): string {
  return lua.replace(INCLUDE, (_, name: string) => {
    const piece = PIECES[name];
    if (piece === undefined) throw new Error(`No Lua piece is named '${name}'.`);
    if (included.has(name)) return '';
    included.add(name);
    return loadLua(piece, included);
  });
}
