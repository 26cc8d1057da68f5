import type { Redis } from 'ioredis';

/** Connections of the waits per master: a wait blocks its connection until the fsync. */
const MAX_LANES = 4;

/** A connection the waits go on, and since when it has been connected (undefined: it is not). */
export interface AofWaitLane {
  readonly connection: Redis;
  readyAt: number | undefined;
  busy: boolean;
}

interface Waiter {
  /** The earliest send of the writes the wait covers, read when a lane comes free (callers still join). */
  sentBefore(): number;
  resolve(lane: AofWaitLane | undefined): void;
}

/**
 * The connections one master's waits go on. A wait blocks its connection until the fsync, so a wait sent
 * on a busy one would start only after that fsync and end a second later: each wait takes a free one, up
 * to MAX_LANES. A wait proves something of the writes sent before it only on a connection connected since
 * before they were sent: one that connected later may reach a server restarted since, which lost them.
 */
export class AofWaitLanes {
  private readonly lanes: AofWaitLane[] = [];
  private readonly waiting: Waiter[] = [];

  /** @param open makes a connection to the master, connecting at once. */
  constructor(
    private readonly open: () => Redis,
    private readonly maxWaitMs: number,
  ) {}

  /**
   * Opens a first lane if there is none, so that later waits find one connected before their writes;
   * resolves once one is connected (or after `maxWaitMs`).
   */
  async warm(): Promise<void> {
    if (this.lanes.length === 0) this.add();
    if (this.lanes.some((lane) => lane.readyAt !== undefined)) return;
    const { connection } = this.lanes[0];
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, this.maxWaitMs);
      function done() {
        clearTimeout(timer);
        connection.off('ready', done);
        resolve();
      }
      // Registered after the lane's own listener, so its readyAt is set by then.
      connection.once('ready', done);
    });
  }

  /**
   * A free lane connected since before `sentBefore`, or the first such one to come free; undefined when
   * no lane has been connected that long (a lane is opened for the waits to come).
   */
  acquire(sentBefore: () => number): Promise<AofWaitLane | undefined> {
    const eligible = this.lanes.filter((lane) => coversWritesSentAt(lane, sentBefore()));
    const free = eligible.find((lane) => !lane.busy);
    if (free) {
      free.busy = true;
      return Promise.resolve(free);
    }
    if (this.lanes.length < MAX_LANES) this.add();
    if (eligible.length === 0) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const waiter: Waiter = { sentBefore, resolve };
      this.waiting.push(waiter);
      setTimeout(() => {
        const at = this.waiting.indexOf(waiter);
        if (at < 0) return;
        this.waiting.splice(at, 1);
        resolve(undefined);
      }, this.maxWaitMs).unref();
    });
  }

  release(lane: AofWaitLane): void {
    lane.busy = false;
    const at = this.waiting.findIndex((waiter) => coversWritesSentAt(lane, waiter.sentBefore()));
    if (at < 0) return;
    const [waiter] = this.waiting.splice(at, 1);
    lane.busy = true;
    waiter.resolve(lane);
  }

  close(): void {
    for (const { connection } of this.lanes) connection.disconnect();
    for (const waiter of this.waiting.splice(0)) waiter.resolve(undefined);
  }

  private add(): void {
    const lane: AofWaitLane = { connection: this.open(), readyAt: undefined, busy: false };
    lane.connection.on('ready', () => (lane.readyAt = performance.now()));
    lane.connection.on('close', () => (lane.readyAt = undefined));
    this.lanes.push(lane);
  }
}

/**
 * Whether a wait on `lane` covers writes sent at `sentAt`: its connection was up before they were sent
 * and still is, so the server they reached is the one it talks to (a restart closes every connection).
 * Also the rule of the replicas' WAIT (ReplicaWaiter), which counts the writes of its connection.
 */
export function coversWritesSentAt(lane: Pick<AofWaitLane, 'connection' | 'readyAt'>, sentAt: number): boolean {
  return lane.readyAt !== undefined && lane.readyAt < sentAt && lane.connection.status === 'ready';
}
