import type { ChainableCommander } from 'ioredis';
import { ACK_LUA } from './scripts/ack.script.js';
import { CLAIM_LUA } from './scripts/claim.script.js';
import { GIVE_BACK_LUA } from './scripts/give-back.script.js';
import { INCREMENT_MANY_LUA, INCREMENT_ONE_LUA } from './scripts/increment.script.js';
import { READ_LUA } from './scripts/read.script.js';
import { RELEASE_LUA } from './scripts/release.script.js';
import { SEED_LUA } from './scripts/seed.script.js';
import { STATUS_LUA } from './scripts/status.script.js';
import type { RedisClient } from './redis-connection.js';

export type Arg = string | number;

/** The scripts, registered once per client with `defineCommand` (sent by SHA, loaded on NOSCRIPT). */
const SCRIPTS = {
  nestjsCounterIncrement: { lua: INCREMENT_ONE_LUA, numberOfKeys: 1 },
  nestjsCounterIncrementMany: { lua: INCREMENT_MANY_LUA },
  nestjsCounterRead: { lua: READ_LUA },
  nestjsCounterSeed: { lua: SEED_LUA },
  nestjsCounterClaim: { lua: CLAIM_LUA, numberOfKeys: 6 },
  nestjsCounterAck: { lua: ACK_LUA, numberOfKeys: 5 },
  nestjsCounterGiveBack: { lua: GIVE_BACK_LUA, numberOfKeys: 3 },
  nestjsCounterRelease: { lua: RELEASE_LUA, numberOfKeys: 1 },
  nestjsCounterStatus: { lua: STATUS_LUA },
} as const;

type ScriptName = keyof typeof SCRIPTS;
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
  for (const [name, definition] of Object.entries(SCRIPTS)) {
    if (typeof (client as unknown as Record<string, unknown>)[name] !== 'function') {
      client.defineCommand(name, definition);
    }
  }
  return client as ScriptClient;
}
