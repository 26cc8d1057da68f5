import type { Cluster, Command } from 'ioredis';
import { isCluster, type AnyRedis } from './redis.js';

/** One command as a client sent it: alone, or as part of one pipeline (one round trip). */
export interface SentCommand {
  /** Lower case, as ioredis names it: a script call is `evalsha` (or `eval` the first time per connection). */
  name: string;
  args: string[];
  /** The keys Redis routes the command by (a script's KEYS); empty for commands without keys. */
  keys: string[];
  /** The same object for every command of one executed pipeline; undefined for a command sent alone. */
  pipeline?: object;
  /**
   * The node (`host:port`) the command went to: known for a pipeline, and for every command tapped on
   * a single connection; undefined for a command a cluster routes on its own.
   */
  node?: string;
  /** The command itself: the same object whether tapped on a cluster or on the node it reached. */
  command: Command;
  /** Settles with the command's reply or error (never rejects). */
  outcome: Promise<{ reply?: unknown; error?: Error }>;
}

interface Connection {
  options: { host?: string; port?: number };
}

interface PipelineStream {
  isPipeline?: boolean;
  /** Where a pipeline goes: a cluster picks the node while sending its first command and records it here. */
  destination?: { redis?: Connection };
}

const addressOf = (connection: Connection) => `${connection.options.host}:${connection.options.port}`;

/**
 * Calls `listener` for every command a client sends, in order, including each command of a pipeline
 * (a pipeline hands its commands to the client's `sendCommand` one by one, with a stream of its own).
 * Works on a `Redis` and on a `Cluster`. Returns a function that removes the tap.
 */
export function tapCommands(client: AnyRedis, listener: (command: SentCommand) => void): () => void {
  const original = client.sendCommand;
  const ownAddress = isCluster(client) ? undefined : addressOf(client);
  client.sendCommand = function (this: AnyRedis, ...params: unknown[]) {
    const [command, stream] = params as [Command, PipelineStream | undefined];
    // Copied before sending: a script command replaces its SHA with the body when it first uses a connection.
    const args = command.args.map(String);
    const name = command.name.toLowerCase();
    const keys = keysOf(command, name, args);
    const result = (original as (...all: unknown[]) => unknown).apply(this, params);
    const pipeline = stream?.isPipeline === true ? stream : undefined;
    const target = pipeline?.destination?.redis;
    listener({
      name,
      args,
      keys,
      pipeline,
      node: target ? addressOf(target) : ownAddress,
      command,
      outcome: command.promise.then(
        (reply: unknown) => ({ reply }),
        (error: Error) => ({ error }),
      ),
    });
    return result;
  } as typeof client.sendCommand;
  return () => {
    client.sendCommand = original;
  };
}

/**
 * Taps each node connection of a connected cluster: every command as the node it reached received it,
 * including commands sent on a node's connection directly rather than routed by the cluster.
 */
export function tapClusterNodes(cluster: Cluster, listener: (command: SentCommand) => void): () => void {
  const nodes = cluster.nodes('all');
  if (nodes.length === 0) throw new Error('tapClusterNodes: the cluster has no node connections yet (not ready)');
  const restores = nodes.map((node) => tapCommands(node, listener));
  return () => restores.forEach((restore) => restore());
}

/** A script's declared keys are read from its own arguments; other commands ask ioredis. */
function keysOf(command: Command, name: string, args: string[]): string[] {
  if (name === 'evalsha' || name === 'eval') return args.slice(2, 2 + Number(args[1]));
  return command.getKeys().map(String);
}
