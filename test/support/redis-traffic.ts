import { randomBytes } from 'node:crypto';
import { generateMulti } from 'cluster-key-slot';
import type { Redis } from 'ioredis';
import { tapCommands } from '../../support/command-tap.js';
import { isCluster, masters, type AnyRedis } from '../../support/redis.js';

/**
 * Watches what a test's keys receive, through connections in MONITOR mode (one per master on a
 * cluster): every command sent by a client (not the ones a script runs inside Redis) that names a
 * key under the prefix.
 */
export class RedisTraffic {
  private commands: string[][] = [];
  private readonly markers = new Map<string, () => void>();
  private readonly monitors: Redis[] = [];

  private constructor(private readonly prefix: string) {}

  /** Starts monitoring (every master of a cluster); resolves once Redis has confirmed MONITOR mode. */
  static async start(redis: AnyRedis, prefix: string): Promise<RedisTraffic> {
    const traffic = new RedisTraffic(prefix);
    const nodes = isCluster(redis) ? await masters(redis) : [redis];
    await Promise.all(nodes.map((node) => traffic.watch(node)));
    return traffic;
  }

  /** Opens a MONITOR connection to `node`, listening before it connects so that no line is missed. */
  private async watch(node: Redis): Promise<void> {
    const monitor = node.duplicate({ monitor: true, lazyConnect: true });
    this.monitors.push(monitor);
    // Under heavy traffic from parallel specs, lines can arrive with MONITOR's own OK, before ioredis
    // switches the connection to monitor mode; it reports them as a queue error. They precede anything
    // measured (measurements start after a marker), so they are ignored; other errors still surface.
    monitor.on('error', (error: Error) => {
      if (!error.message.startsWith('Command queue state error')) throw error;
    });
    monitor.on('monitor', (_time: string, quoted: string[], source: string) => {
      if (source === 'lua') return;
      const args = quoted.map(unescapeMonitorArg);
      const isMarker = args.length === 2 && ['get', 'echo'].includes(args[0].toLowerCase());
      const marker = isMarker ? this.markers.get(args[1]) : undefined;
      if (marker) return marker();
      if (args.some((arg) => arg.startsWith(`${this.prefix}:`))) this.commands.push(args);
    });
    const monitoring = new Promise((resolve) => monitor.once('monitoring', resolve));
    await monitor.connect();
    await monitoring;
  }

  /** Forgets what was seen so far, once everything sent before this call has been seen. */
  async reset(via: AnyRedis): Promise<void> {
    await this.seen(via);
    this.commands = [];
  }

  /**
   * The commands seen so far. Sends a marker through `via` first and waits for MONITOR to echo it:
   * MONITOR reports in execution order, so everything sent before the marker has been seen. On a
   * cluster every master gets a marker of its own (an ECHO: a key would be redirected, not run).
   */
  async seen(via: AnyRedis): Promise<string[][]> {
    const nodes = isCluster(via) ? await masters(via) : [via];
    await Promise.all(
      nodes.map(async (node) => {
        const marker = `${this.prefix}~marker~${randomBytes(4).toString('hex')}`;
        const echoed = this.echoOf(marker);
        await (isCluster(via) ? node.echo(marker) : node.get(marker));
        await echoed;
      }),
    );
    return [...this.commands];
  }

  stop(): void {
    for (const monitor of this.monitors) monitor.disconnect();
  }

  private echoOf(marker: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('MONITOR did not echo the marker within 5 s')), 5_000);
      this.markers.set(marker, () => {
        clearTimeout(timer);
        this.markers.delete(marker);
        resolve();
      });
    });
  }
}

/**
 * An argument as sent, from MONITOR's quoted form: Redis writes a line break as `\n`, a backslash as
 * `\\` and other unprintable bytes as `\xHH` (ioredis only turns `\"` back into `"`).
 */
export function unescapeMonitorArg(arg: string): string {
  const escapes: Record<string, string> = { n: '\n', r: '\r', t: '\t', a: '\x07', b: '\b', '\\': '\\' };
  return arg.replace(/\\(x[0-9a-f]{2}|[nrtab\\])/g, (_, code: string) =>
    code.length === 3 ? String.fromCharCode(parseInt(code.slice(1), 16)) : escapes[code],
  );
}

/** One round trip: an executed pipeline, or a command sent alone. */
export interface RoundTrip {
  /** Its commands by name, in order. */
  commands: string[];
  /** The keys of each of its commands. */
  keys: string[][];
  /** The arguments of each of its commands. */
  args: string[][];
  /** The node (`host:port`) it went to; undefined for a lone command that a cluster routed on its own. */
  node?: string;
  pipelined: boolean;
}

/**
 * The node a round trip went to. A lone command on a cluster goes where ioredis routes it: to `owner`
 * of its keys' slot (`slotOwners`).
 */
export function nodeOfTrip(trip: RoundTrip, owner: (slot: number) => string): string {
  return trip.node ?? owner(generateMulti(trip.keys.flat()));
}

/**
 * Counts round trips of one ioredis client (`Redis` or `Cluster`): every executed pipeline, and every
 * command sent alone that names a key under the prefix.
 */
export class RoundTrips {
  /** In the order sent. */
  readonly trips: RoundTrip[] = [];
  private current = new WeakMap<object, RoundTrip>();
  private readonly restore: () => void;

  constructor(client: AnyRedis, prefix: string) {
    this.restore = tapCommands(client, (command) => {
      if (!command.pipeline) {
        if (command.args.some((arg) => arg.startsWith(`${prefix}:`))) {
          this.trips.push({
            commands: [command.name],
            keys: [command.keys],
            args: [command.args],
            node: command.node,
            pipelined: false,
          });
        }
        return;
      }
      // Each execution of a pipeline (a resend after a redirection too) is a round trip of its own.
      let trip = this.current.get(command.pipeline);
      if (!trip) {
        trip = { commands: [], keys: [], args: [], node: command.node ?? '?', pipelined: true };
        this.trips.push(trip);
        this.current.set(command.pipeline, trip);
      }
      trip.commands.push(command.name);
      trip.keys.push(command.keys);
      trip.args.push(command.args);
    });
  }

  reset(): void {
    this.trips.length = 0;
    this.current = new WeakMap();
  }

  stop(): void {
    this.restore();
  }
}
