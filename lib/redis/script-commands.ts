import type { RedisClient } from './counter-redis.handle.js';
import { loadLua } from './scripts/lua.loader.js';
import { ACK_LUA } from './scripts/ack.lua.js';
import { BUCKET_READ_LUA } from './scripts/bucket-read.lua.js';
import { BUCKET_SCAN_LUA } from './scripts/bucket-scan.lua.js';
import { CLAIM_LUA } from './scripts/claim.lua.js';
import { FORGET_LUA } from './scripts/forget.lua.js';
import { GIVE_BACK_LUA } from './scripts/give-back.lua.js';
import { INCREMENT_LUA } from './scripts/increment.lua.js';
import { READ_LUA } from './scripts/read.lua.js';
import { RELEASE_LUA } from './scripts/release.lua.js';
import { RENEW_LUA } from './scripts/renew.lua.js';
import { ROLLING_COUNT_READ_LUA } from './scripts/rolling-count-read.lua.js';
import { REPAIR_ENQUEUE_LUA } from './scripts/repair-enqueue.lua.js';
import { REPAIR_SAVE_LUA } from './scripts/repair-save.lua.js';
import { REPAIR_TAKE_LUA } from './scripts/repair-take.lua.js';
import { SEED_LUA } from './scripts/seed.lua.js';
import { SET_LUA } from './scripts/set.lua.js';
import { STATUS_LUA } from './scripts/status.lua.js';
import { VERSIONED_READ_LUA } from './scripts/versioned-read.lua.js';

export type Arg = string | number;

/**
 * The scripts as client commands, registered with ioredis's `defineCommand`: sent by SHA, and whole
 * only when a server answers NOSCRIPT. Every call gives its number of keys first.
 */
export const COUNTER_SCRIPTS = {
  nestjsCounterIncrement: loadLua(INCREMENT_LUA),
  nestjsCounterRead: loadLua(READ_LUA),
  nestjsCounterSeed: loadLua(SEED_LUA),
  nestjsCounterSet: loadLua(SET_LUA),
  nestjsCounterVersionedRead: loadLua(VERSIONED_READ_LUA),
  nestjsCounterClaim: loadLua(CLAIM_LUA),
  nestjsCounterAck: loadLua(ACK_LUA),
  nestjsCounterForget: loadLua(FORGET_LUA),
  nestjsCounterGiveBack: loadLua(GIVE_BACK_LUA),
  nestjsCounterRelease: loadLua(RELEASE_LUA),
  nestjsCounterRenew: loadLua(RENEW_LUA),
  nestjsCounterStatus: loadLua(STATUS_LUA),
  nestjsCounterRepairEnqueue: loadLua(REPAIR_ENQUEUE_LUA),
  nestjsCounterRepairTake: loadLua(REPAIR_TAKE_LUA),
  nestjsCounterRepairSave: loadLua(REPAIR_SAVE_LUA),
  nestjsCounterBucketRead: loadLua(BUCKET_READ_LUA),
  nestjsCounterBucketScan: loadLua(BUCKET_SCAN_LUA),
  nestjsCounterRollingCountRead: loadLua(ROLLING_COUNT_READ_LUA),
} as const;

/**
 * The scripts' reply codes, named once: each script's header says when it answers which, and every
 * reader of a reply compares with these.
 */
export const REPLY = {
  /** Per change (increment.lua.ts). */
  increment: { unseeded: 0, applied: 1, outOfRange: 2, alreadyApplied: 3 },
  /** set.lua.ts; `changed` only when the caller gave the value and version it expects. */
  set: { unseeded: 0, applied: 1, outOfRange: 2, changed: 3 },
  /** Per shard (seed.lua.ts). */
  seed: { generationMoved: 0, loaded: 1 },
  /** The reply's first item (claim.lua.ts). */
  claim: { busy: 'busy', empty: 'empty', leftBehind: 'pending', claimed: 'claimed' },
  ack: { alreadyAcknowledged: 0, acknowledged: 1 },
  forget: { kept: 0, forgotten: 1, lost: 2 },
  giveBack: { notTheCallers: 0, givenBack: 1 },
  /** Per lease, one character each (renew.lua.ts). */
  renew: { lost: '0', renewed: '1' },
  /** The reply's first item (repair-take.lua.ts). */
  repairTake: { none: 'none', busy: 'busy', wait: 'wait', due: 'due' },
  repairSave: { notTheCallers: 0, saved: 1 },
} as const;

export type ScriptName = keyof typeof COUNTER_SCRIPTS;
/** The commands the store sends: the scripts, the claim's with its strings as Buffers, and two plain ones. */
export type CommandName = ScriptName | 'nestjsCounterClaimBuffer' | 'set' | 'hgetall';
/** A command's reply, handed over as it arrives (ioredis calls a command's last argument so). */
export type ReplyCallback = (error: Error | null | undefined, reply?: unknown) => void;
/** The client or a pipeline, each command called by name (`defineCommand` made the scripts' commands). */
export type CommandTarget = { [name in CommandName]: (...args: Array<Arg | ReplyCallback>) => unknown };

/**
 * The body of the script a command runs, and whether its reply's strings come as Buffers; undefined
 * for a command that is not a script.
 */
export function scriptBody(command: CommandName): { lua: string; buffers: boolean } | undefined {
  const name = command === 'nestjsCounterClaimBuffer' ? 'nestjsCounterClaim' : command;
  if (!(name in COUNTER_SCRIPTS)) return undefined;
  return { lua: COUNTER_SCRIPTS[name as ScriptName], buffers: name !== command };
}

/** Registers the scripts as the client's commands (once: a client the application shares may have them already). */
export function defineScripts(client: RedisClient): void {
  for (const [name, lua] of Object.entries(COUNTER_SCRIPTS)) {
    if (typeof (client as unknown as Record<string, unknown>)[name] !== 'function') client.defineCommand(name, { lua });
  }
}
