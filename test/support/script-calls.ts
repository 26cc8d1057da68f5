import { createHash } from 'node:crypto';
import type { SentCommand } from '../../support/command-tap.js';
import { readDumpedHash, textOf } from '../../lib/redis/claim/dumped-hash.parser.js';
import { COUNTER_SCRIPTS } from '../../lib/redis/script-commands.js';

/** The library's scripts by SHA: a script call goes out as `EVALSHA <sha>`, so the SHA names the script. */
export function scriptsBySha(): Map<string, string> {
  return new Map(
    Object.entries(COUNTER_SCRIPTS).map(([name, lua]) => [createHash('sha1').update(lua).digest('hex'), name]),
  );
}

/** A script call's declared keys (KEYS) and other arguments (ARGV), from `EVALSHA sha numkeys …`. */
export function scriptArguments(command: Pick<SentCommand, 'args'>): { keys: string[]; argv: string[] } {
  const count = Number(command.args[1]);
  return { keys: command.args.slice(2, 2 + count), argv: command.args.slice(2 + count) };
}

/**
 * The encoded ids in a claim's reply (read as Buffers): {kind, lost, generation, batchId, more, deltas},
 * where deltas is the `DUMP` of the batch hash, whose fields are "<encoded id> <counter>" with the delta
 * as value. Each id once.
 */
export function claimedIds(reply: unknown): string[] {
  if (!Array.isArray(reply) || !Buffer.isBuffer(reply[5])) return [];
  const ids = new Set<string>();
  // The batch's own fields start with '#', and a change that netted to zero has nothing for the database.
  readDumpedHash(reply[5], (field, value) => {
    const name = textOf(field);
    if (!name.startsWith('#') && textOf(value) !== '0') ids.add(name.slice(0, name.indexOf(' ')));
  });
  return [...ids];
}

/** The batch id in a claim's reply (a UUID), if it claimed or found one. */
export function claimedBatchId(reply: unknown): string | undefined {
  if (!Array.isArray(reply)) return undefined;
  return reply
    .slice(0, 5)
    .map(String)
    .find((item) => /^[0-9a-f]{8}-[0-9a-f-]{27}$/.test(item));
}

/** The library script a command runs, by its SHA; undefined for other commands. */
export function scriptOf(command: SentCommand, scripts: Map<string, string>): string | undefined {
  return command.name === 'evalsha' ? scripts.get(command.args[0]) : undefined;
}

/**
 * The replicas asked for by the WAIT sent to a claim's node after the claim (at `claimIndex` in `sent`)
 * and before the ack of its batch, between which the batch is written; null when there was none.
 */
export function replicasAwaited(
  sent: SentCommand[],
  claimIndex: number,
  batchId: string,
  scripts: Map<string, string>,
): number | null {
  const { node } = sent[claimIndex];
  const isAck = (command: SentCommand) =>
    scriptOf(command, scripts) === 'nestjsCounterAck' && scriptArguments(command).argv[1] === batchId;
  const ackAt = sent.findIndex((command, at) => at > claimIndex && isAck(command));
  const before = ackAt < 0 ? sent.length : ackAt;
  const wait = sent.slice(claimIndex + 1, before).find((command) => command.name === 'wait' && command.node === node);
  return wait ? Number(wait.args[0]) : null;
}
