/** A request waiting in a TurnBatcher, with the means to settle it. */
export interface Queued<Request, Result> {
  request: Request;
  resolve(result: Result): void;
  reject(error: unknown): void;
}

/**
 * Gathers the requests made in one turn of the event loop and hands them over together, on the next
 * tick: callers woken together (by one read of replies from the socket) send their next requests
 * together, and a lone request waits for no timer.
 *
 * At most `perTurn` go at once; the rest follow on the next turn of the event loop (`setImmediate`), in
 * a write of their own, so that Redis runs one batch while this process reads the replies of the one
 * before (see docs/PERFORMANCE.md, "Increments batched per turn"). Past `maxWaiting` left behind, the
 * surplus goes at once too: an event loop slowed by other work delays requests but never throttles them.
 *
 * `send` must settle every request it is given.
 */
export class TurnBatcher<Request, Result> {
  private readonly queued: Queued<Request, Result>[] = [];
  private scheduled = false;

  constructor(
    private readonly perTurn: number,
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
    const sending = this.queued.splice(0, Math.max(this.perTurn, this.queued.length - this.maxWaiting));
    if (this.queued.length > 0) setImmediate(() => this.drain());
    else this.scheduled = false;
    this.send(sending).catch((error: unknown) => {
      for (const { reject } of sending) reject(error);
    });
  }
}
