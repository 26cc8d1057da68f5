// What every scenario does around its fault: a deployment of its own for each test (database, key
// prefix, the parent's connections), the load's seed, and, once the fault is over, the final flush, the
// invariant and the result line. The deployment (its workers, proxies and Redis servers with it) is
// closed after each test, whatever the test did.
import { afterEach } from 'vitest';
import type { DatabaseName } from '../../support/databases.js';
import type { AnyRedis } from '../../support/redis.js';
import { testSeed } from '../../support/seeded-random.js';
import type { WireFlushReport } from '../worker/worker-protocol.js';
import type { AcknowledgedDeltas } from './acknowledged-deltas.js';
import { ChaosDeployment, type WorkerCounterOptions } from './chaos-deployment.js';
import { recordResult } from './chaos-results.js';
import type { ChaosWorker } from './chaos-worker.js';
import type { CounterTarget } from './counter-targets.js';
import type { DatabaseSampler } from './database-sampler.js';
import { flushUntilSettled } from './final-flush.js';
import { checkInvariant, type InvariantFigures } from './invariant.js';

export interface SettleInput {
  /** The instance that flushes until Redis holds nothing pending. */
  flusher: ChaosWorker;
  targets: CounterTarget[];
  /** The targets' database values before the fault, from `readTargets`. */
  start: Map<string, number>;
  tally: AcknowledgedDeltas;
  sampler: DatabaseSampler;
  /** Where the backlog is read: the deployment's Redis unless the workers use another one. */
  redis?: AnyRedis;
  timeoutMs?: number;
}

/** One test's deployment, with what it needs to end the way every scenario ends. */
export class ChaosRun {
  constructor(
    readonly deployment: ChaosDeployment,
    private readonly databaseName: DatabaseName,
    /** When the test began (epoch ms): its result's duration counts from here. */
    readonly began: number,
    /** The load's seed (COUNTER_TEST_SEED replays it). */
    readonly seed: number,
  ) {}

  /** The final flush through `flusher`, then the sampler stopped and the invariant checked. */
  async settle({ flusher, targets, start, tally, sampler, redis, timeoutMs }: SettleInput) {
    const { deployment } = this;
    const final: WireFlushReport[] = await flushUntilSettled(
      flusher,
      redis ?? deployment.redis,
      deployment.prefix,
      timeoutMs,
    );
    await sampler.stop();
    const figures = await checkInvariant({ dataSource: deployment.observer, targets, start, tally, sampler });
    return { final, figures };
  }

  /**
   * Prints and appends the result of this run, with its database and duration; `server` is the one
   * the scenario ran on when not the suite's (a server of its own, started from another binary).
   */
  record(scenario: string, figures: InvariantFigures, details: Record<string, unknown>, server?: string): void {
    recordResult({
      scenario,
      database: this.databaseName,
      ...figures,
      durationMs: Date.now() - this.began,
      details,
      ...(server ? { server } : {}),
    });
  }
}

export interface ChaosScenarioOptions {
  /** Runs after each test's deployment is closed (also when the test made none), with its key prefix. */
  afterClose?: (prefix: string | undefined) => Promise<void>;
  /** How long the teardown may take (vitest's hook timeout by default). */
  teardownTimeoutMs?: number;
}

export interface ChaosScenario {
  /** Creates the running test's deployment (closed after the test): counter options of every worker. */
  deploy(label: string, counter?: WorkerCounterOptions): Promise<ChaosRun>;
}

/** Call in the scenario's `describe`: each test deploys once through it, and is cleaned up after. */
export function useChaosScenario(databaseName: DatabaseName, options: ChaosScenarioOptions = {}): ChaosScenario {
  let current: ChaosDeployment | undefined;
  afterEach(async () => {
    const deployment = current;
    current = undefined;
    try {
      await deployment?.close();
    } finally {
      await options.afterClose?.(deployment?.prefix);
    }
  }, options.teardownTimeoutMs);
  return {
    async deploy(label, counter) {
      const began = Date.now();
      const seed = testSeed();
      current = await ChaosDeployment.create(databaseName, label, counter);
      return new ChaosRun(current, databaseName, began, seed);
    },
  };
}
