import type { ChainableCommander } from 'ioredis';
import type { RedisClient } from './counter-redis.handle.js';
import { ACK_LUA } from './scripts/ack.lua.js';
import { CLAIM_LUA } from './scripts/claim.lua.js';
import { FORGET_LUA } from './scripts/forget.lua.js';
import { GIVE_BACK_LUA } from './scripts/give-back.lua.js';
import { INCREMENT_LUA } from './scripts/increment.lua.js';
import { READ_LUA } from './scripts/read.lua.js';
import { RELEASE_LUA } from './scripts/release.lua.js';
import { RENEW_LUA } from './scripts/renew.lua.js';
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
  nestjsCounterIncrement: INCREMENT_LUA,
  nestjsCounterRead: READ_LUA,
  nestjsCounterSeed: SEED_LUA,
  nestjsCounterSet: SET_LUA,
  nestjsCounterVersionedRead: VERSIONED_READ_LUA,
  nestjsCounterClaim: CLAIM_LUA,
  nestjsCounterAck: ACK_LUA,
  nestjsCounterForget: FORGET_LUA,
  nestjsCounterGiveBack: GIVE_BACK_LUA,
  nestjsCounterRelease: RELEASE_LUA,
  nestjsCounterRenew: RENEW_LUA,
  nestjsCounterStatus: STATUS_LUA,
  nestjsCounterRepairEnqueue: REPAIR_ENQUEUE_LUA,
  nestjsCounterRepairTake: REPAIR_TAKE_LUA,
  nestjsCounterRepairSave: REPAIR_SAVE_LUA,
} as const;

type ScriptName = keyof typeof COUNTER_SCRIPTS;
/** A command's reply, handed over as it arrives (ioredis calls a command's last argument so). */
export type ReplyCallback = (error: Error | null | undefined, reply?: unknown) => void;
/** Each script as a command; `defineCommand` also makes the `…Buffer` form, whose strings come as Buffers. */
type ScriptCommands<R> = {
  [name in ScriptName | 'nestjsCounterClaimBuffer']: (...args: Array<Arg | ReplyCallback>) => R;
};
export type ScriptClient = RedisClient & ScriptCommands<Promise<unknown>>;
export interface ScriptPipeline extends ChainableCommander, ScriptCommands<ScriptPipeline> {}
/** Where a call goes: the client itself (a lone call) or a pipeline; what both offer. */
export type CallTarget = ScriptCommands<unknown> & {
  set(key: string, value: string, mode: 'NX'): unknown;
  hgetall(key: string, done?: ReplyCallback): unknown;
};

/** The client with the scripts registered (once: a client the application shares may have them already). */
export function withScripts(client: RedisClient): ScriptClient {
  for (const [name, lua] of Object.entries(COUNTER_SCRIPTS)) {
    if (typeof (client as unknown as Record<string, unknown>)[name] !== 'function') client.defineCommand(name, { lua });
  }
  return client as ScriptClient;
}
