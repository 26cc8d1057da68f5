import { randomBytes } from 'node:crypto';
import type { ChainableCommander, Redis } from 'ioredis';

/**
 * Watches what a test's keys receive, through a second connection in MONITOR mode: every command
 * sent by a client (not the ones a script runs inside Redis) that names a key under the prefix.
 */
export class RedisTraffic {
  private commands: string[][] = [];
  private readonly markers = new Map<string, () => void>();

  private constructor(
    private readonly monitor: Redis,
    private readonly prefix: string,
  ) {
    // Under heavy traffic from parallel specs, lines can arrive with MONITOR's own OK, before ioredis
    // switches the connection to monitor mode; it reports them as a queue error. They precede anything
    // measured (measurements start after a marker), so they are ignored; other errors still surface.
    monitor.on('error', (error: Error) => {
      if (!error.message.startsWith('Command queue state error')) throw error;
    });
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source === 'lua') return;
      const marker = args.length === 2 && args[0].toLowerCase() === 'get' ? this.markers.get(args[1]) : undefined;
      if (marker) return marker();
      if (args.some((arg) => arg.startsWith(`${this.prefix}:`))) this.commands.push(args);
    });
  }

  /** Starts monitoring; resolves once Redis has confirmed MONITOR mode. */
  static async start(redis: Redis, prefix: string): Promise<RedisTraffic> {
    return new RedisTraffic(await redis.monitor(), prefix);
  }

  /** Forgets what was seen so far, once everything sent before this call has been seen. */
  async reset(via: Redis): Promise<void> {
    await this.seen(via);
    this.commands = [];
  }

  /**
   * The commands seen so far. Sends a marker through `via` first and waits for MONITOR to echo it:
   * MONITOR reports in execution order, so everything sent before the marker has been seen.
   */
  async seen(via: Redis): Promise<string[][]> {
    const marker = `${this.prefix}~marker~${randomBytes(4).toString('hex')}`;
    const echoed = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('MONITOR did not echo the marker within 5 s')), 5_000);
      this.markers.set(marker, () => {
        clearTimeout(timer);
        this.markers.delete(marker);
        resolve();
      });
    });
    await via.get(marker);
    await echoed;
    return [...this.commands];
  }

  stop(): void {
    this.monitor.disconnect();
  }
}

/** Counts round trips of one ioredis client: pipelines executed and single commands sent outside them. */
export class RoundTrips {
  /** Commands (by name) per executed pipeline, in order. */
  readonly pipelines: string[][] = [];
  /** Commands sent one by one (not in a pipeline) that name a key under the prefix. */
  readonly single: string[][] = [];
  private readonly restore: () => void;

  constructor(client: Redis, prefix: string) {
    const pipeline = client.pipeline;
    const sendCommand = client.sendCommand;
    const pipelines = this.pipelines;
    const single = this.single;
    client.pipeline = function (this: Redis, ...args: Parameters<Redis['pipeline']>): ChainableCommander {
      const created = pipeline.apply(this, args);
      const exec = created.exec;
      created.exec = function (this: ChainableCommander, ...execArgs: Parameters<ChainableCommander['exec']>) {
        const queue = (this as unknown as { _queue: Array<{ name: string }> })._queue;
        pipelines.push(queue.map((command) => command.name));
        return exec.apply(this, execArgs);
      };
      return created;
    };
    client.sendCommand = function (this: Redis, ...args: Parameters<Redis['sendCommand']>) {
      const [command, stream] = args;
      const inPipeline = (stream as { isPipeline?: boolean } | undefined)?.isPipeline === true;
      if (!inPipeline && command.args.some((arg) => String(arg).startsWith(`${prefix}:`))) {
        single.push([command.name, ...command.args.map(String)]);
      }
      return sendCommand.apply(this, args);
    };
    this.restore = () => {
      client.pipeline = pipeline;
      client.sendCommand = sendCommand;
    };
  }

  reset(): void {
    this.pipelines.length = 0;
    this.single.length = 0;
  }

  stop(): void {
    this.restore();
  }
}
