import type { RepairKeys } from './counter.keys.js';
import type { ScriptRunner } from './script.runner.js';

/** How far a walk of a counter went: resume after `after` (null: from the first row). */
export interface RepairProgress {
  after: string | number | null;
  checked: number;
  corrected: number;
}

/** A counter to walk after a loss of Redis data (see repair-enqueue.lua.ts). */
export interface RepairJob {
  /** `<entity key> <counter>`. */
  counter: string;
  walk: string;
  /** When the walk may start, on the Redis clock (ms). */
  notBefore: number;
  /** Null until the walk starts. */
  progress: RepairProgress | null;
}

/** What `take` found: nothing, another instance's lease, walks still waiting, or walks due (lease taken). */
export type RepairTurn =
  { kind: 'none' } | { kind: 'busy' } | { kind: 'wait'; ms: number } | { kind: 'due'; now: number; jobs: RepairJob[] };

/**
 * The repairs' side of Redis: the counters to walk after a loss of Redis data, how far each walk went,
 * and the lease of the instance walking them. It is shared by every instance of the deployment, so one
 * loss makes one walk, and a walk outlives the instance that started it.
 */
export class RepairStore {
  constructor(
    private readonly runner: ScriptRunner,
    private readonly keys: RepairKeys,
  ) {}

  /** The name of a counter's job. */
  static counterOf(entityKey: string, counter: string): string {
    return `${entityKey} ${counter}`;
  }

  /**
   * Queues a walk of `counters` starting no earlier than `delayMs` from now; a walk under way starts
   * over (see repair-enqueue.lua.ts).
   */
  async enqueue(counters: string[], delayMs: number, walk: string): Promise<void> {
    if (counters.length === 0) return;
    await this.runner.call(() =>
      this.runner.client.nestjsCounterRepairEnqueue(1, this.keys.jobs, delayMs, walk, ...counters),
    );
  }

  /** Takes the lease when a walk may start or go on (see repair-take.lua.ts). */
  async take(token: string, leaseMs: number): Promise<RepairTurn> {
    const reply = (await this.runner.call(() =>
      this.runner.client.nestjsCounterRepairTake(2, this.keys.jobs, this.keys.lease, token, leaseMs),
    )) as string[];
    const kind = String(reply[0]);
    if (kind === 'none' || kind === 'busy') return { kind };
    if (kind === 'wait') return { kind, ms: Number(reply[1]) };
    const jobs: RepairJob[] = [];
    for (let at = 2; at < reply.length; at += 2) jobs.push(parseJob(String(reply[at]), String(reply[at + 1])));
    return { kind: 'due', now: Number(reply[1]), jobs };
  }

  /** Every job queued (for `DataLossRepairer.idle`). */
  async jobs(): Promise<RepairJob[]> {
    const entries = (await this.runner.call(() => this.runner.client.hgetall(this.keys.jobs))) as Record<
      string,
      string
    >;
    return Object.entries(entries).map(([counter, job]) => parseJob(counter, job));
  }

  /**
   * Records a walk's progress, or its end (`progress` null), if `token` still holds the lease and the
   * job is still that walk (see repair-save.lua.ts). False: the walk is no longer the caller's to go on.
   */
  async save(token: string, job: RepairJob, progress: RepairProgress | null): Promise<boolean> {
    const encoded = progress === null ? '' : JSON.stringify(progress);
    const reply = await this.runner.call(() =>
      this.runner.client.nestjsCounterRepairSave(
        2,
        this.keys.jobs,
        this.keys.lease,
        token,
        job.counter,
        job.walk,
        encoded,
      ),
    );
    return Number(reply) === 1;
  }

  /** Extends the lease by `leaseMs` if `token` still holds it (see renew.lua.ts). */
  async renew(token: string, leaseMs: number): Promise<boolean> {
    const reply = await this.runner.call(() =>
      this.runner.client.nestjsCounterRenew(1, this.keys.lease, token, leaseMs),
    );
    return String(reply) === '1';
  }

  /** Gives the lease back if `token` holds it (see release.lua.ts). */
  async release(token: string): Promise<void> {
    await this.runner.call(() => this.runner.client.nestjsCounterRelease(1, this.keys.lease, token));
  }
}

function parseJob(counter: string, job: string): RepairJob {
  const [walk, notBefore, ...rest] = job.split(' ');
  const progress = rest.join(' ');
  return {
    counter,
    walk,
    notBefore: Number(notBefore),
    progress: progress === '-' ? null : (JSON.parse(progress) as RepairProgress),
  };
}
