/** A request waiting in a TickQueue, with the means to settle it. */
export interface Queued<Request, Result> {
  request: Request;
  resolve(result: Result): void;
  reject(error: unknown): void;
}

/**
 * Collects the requests made in one turn of the event loop and hands them over together on the next
 * tick: after the promise continuations of the current turn have run, so callers woken together (by
 * one socket read of replies) send their next requests together, and a lone request waits for no timer.
 *
 * At most `limit` go at once. The rest follow on the next turn of the event loop (`setImmediate`), in
 * a write of their own. Against a single Redis that is what lets Redis run one call while this process
 * handles the replies of the one before, so the two work side by side instead of taking turns. Sent
 * all at once, a large queue would reach Redis in one read and its replies would come back in one
 * write, and each side would wait for the other (about half the throughput, measured by the increment
 * bench).
 *
 * At most `maxWaiting` are left behind, though: past that the surplus goes at once too, so an event
 * loop slowed by other work (long turns) can delay increments by a few turns but never throttle them
 * to `limit` per turn.
 *
 * `send` must settle every request it is given.
 */
export class TickQueue<Request, Result> {
  private readonly queued: Queued<Request, Result>[] = [];
  private scheduled = false;

  constructor(
    private readonly limit: number,
    private readonly maxWaiting: number,
    private readonly send: (queued: Queued<Request, Result>[]) => Promise<void>,
  ) {}

  add(request: Request): Promise<Result> {
    return new Promise((resolve, reject) => {
      this.queued.push({ request, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        process.nextTick(() => this.drain());
      }
    });
  }

  private drain(): void {
    const sending = this.queued.splice(0, Math.max(this.limit, this.queued.length - this.maxWaiting));
    if (this.queued.length > 0) setImmediate(() => this.drain());
    else this.scheduled = false;
    this.send(sending).catch((error: unknown) => {
      for (const { reject } of sending) reject(error);
    });
  }
}
