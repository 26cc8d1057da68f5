import type { RepairKeys } from './counter.keys.js';
import { REPLY, type Arg, type ScriptName } from './script-commands.js';
import { scriptCall, type ScriptRunner } from './script.runner.js';

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
    await this.send('nestjsCounterRepairEnqueue', [this.keys.jobs], [delayMs, walk, ...counters], () => undefined);
  }

  /** Takes the lease when a walk may start or go on (see repair-take.lua.ts). */
  take(token: string, leaseMs: number): Promise<RepairTurn> {
    return this.send('nestjsCounterRepairTake', [this.keys.jobs, this.keys.lease], [token, leaseMs], (reply) => {
      const items = (reply as unknown[]).map(String);
      const kind = items[0];
      if (kind === REPLY.repairTake.none || kind === REPLY.repairTake.busy) return { kind };
      if (kind === REPLY.repairTake.wait) return { kind, ms: Number(items[1]) };
      const jobs: RepairJob[] = [];
      for (let at = 2; at < items.length; at += 2) jobs.push(parseJob(items[at], items[at + 1]));
      return { kind: 'due', now: Number(items[1]), jobs };
    });
  }

  /** Every job queued (for `DataLossRepairer.idle`). */
  async jobs(): Promise<RepairJob[]> {
    const [jobs] = this.runner.sendNow([
      {
        slot: undefined,
        command: 'hgetall',
        args: [this.keys.jobs],
        read: (reply) =>
          Object.entries(reply as Record<string, string>).map(([counter, job]) => parseJob(counter, job)),
      },
    ]);
    return jobs;
  }

  /**
   * Records a walk's progress, or its end (`progress` null), if `token` still holds the lease and the
   * job is still that walk (see repair-save.lua.ts). False: the walk is no longer the caller's to go on.
   */
  save(token: string, job: RepairJob, progress: RepairProgress | null): Promise<boolean> {
    const encoded = progress === null ? '' : JSON.stringify(progress);
    const keys = [this.keys.jobs, this.keys.lease];
    const args = [token, job.counter, job.walk, encoded];
    return this.send('nestjsCounterRepairSave', keys, args, (reply) => Number(reply) === REPLY.repairSave.saved);
  }

  /** Extends the lease by `leaseMs` if `token` still holds it (see renew.lua.ts). */
  renew(token: string, leaseMs: number): Promise<boolean> {
    return this.send('nestjsCounterRenew', [this.keys.lease], [token, leaseMs], (reply) => {
      return String(reply) === REPLY.renew.renewed;
    });
  }

  /** Gives the lease back if `token` holds it (see release.lua.ts). */
  async release(token: string): Promise<void> {
    await this.send('nestjsCounterRelease', [this.keys.lease], [token], () => undefined);
  }

  /** One script call on the repair keys, sent now on its own. */
  private send<T>(script: ScriptName, keys: string[], argv: Arg[], read: (reply: unknown) => T): Promise<T> {
    const [result] = this.runner.sendNow([scriptCall(script, undefined, keys, argv, read)]);
    return result;
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
