// Chaos scenario 11 (issue 42): safe retries. DESIGN.md G8: a caller that retries every failed or
// timed-out keyed change with its key until it resolves gets each change applied exactly once.
//
// Two instances (scheduled flush on) take a steady load of keyed increments; each failed attempt, its
// outcome known or not, is sent again with the same key through either instance, while Redis is
// - "blackhole": the shared Redis behind a proxy that holds every connection and answers nothing, so
//   commands already sent time out and their outcome is unknown (scenario 4's fault);
// - "restart": a redis-server of the scenario's own with `appendfsync always`, killed with SIGKILL and
//   started again (scenario 5's persistent case): the keys recorded survive with the changes.
// Every change ends acknowledged, none uncertain, and the database holds exactly start + acknowledged.
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { REDIS_URL } from '../../support/redis.js';
import { TcpProxy } from '../../support/tcp-proxy.js';
import { ChaosDeployment, CHAOS_DATABASES } from '../harness/chaos-deployment.js';
import { useChaosScenario } from '../harness/chaos-scenario.js';
import { insertArticleTargets, readTargets } from '../harness/counter-targets.js';
import { privateRedisFor } from '../harness/redis-process.js';
import { sleep, within } from '../harness/time.js';

const ROWS = 40;
const REDIS_TIMEOUT_MS = 300;
const FLUSH_INTERVAL_MS = 200;
const MAX_BACKOFF_MS = 1_000;
const LOAD_BEFORE_MS = 800;
const BLACKHOLE_MS = 2_500;
const DOWN_MS = 300;
const LOAD_AFTER_MS = 800;
/** Callers retry until Redis is back: the outage, ioredis's reconnection (at most 2 s apart), and slack. */
const RETRIES_END_BOUND_MS = 15_000;

type Fault = 'blackhole' | 'restart';

interface FaultControl {
  /** What the workers connect to. */
  url: string;
  /** The parent's client of the same Redis, directly (not through the fault). */
  inspector: Redis;
  /** Injects the fault and ends it. */
  inject(): Promise<void>;
  injected: string;
}

async function faultFor(kind: Fault, deployment: ChaosDeployment): Promise<FaultControl> {
  if (kind === 'restart') {
    const { server, inspector } = await privateRedisFor(deployment, ['--appendonly', 'yes', '--appendfsync', 'always']);
    return {
      url: server.url,
      inspector,
      inject: async () => {
        await server.kill('SIGKILL');
        await sleep(DOWN_MS);
        await server.restart();
      },
      injected: `redis-server (appendfsync always) SIGKILLed under keyed load, down ${DOWN_MS} ms, restarted`,
    };
  }
  const shared = new URL(REDIS_URL);
  const proxy = await TcpProxy.start({ host: shared.hostname, port: Number(shared.port || 6379) });
  deployment.onClose(() => proxy.close());
  return {
    url: proxy.url,
    inspector: deployment.redis,
    inject: async () => {
      proxy.setMode('blackhole');
      await sleep(BLACKHOLE_MS);
      proxy.setMode('pass');
    },
    injected: `proxy in front of Redis blackholing every connection for ${BLACKHOLE_MS} ms, keyed load retried`,
  };
}

describe.each(CHAOS_DATABASES)('scenario 11: keyed changes retried through Redis faults, on %s', (databaseName) => {
  const scenario = useChaosScenario(databaseName);

  it.each<Fault>(['blackhole', 'restart'])(
    'Redis %s: every keyed change retried until it resolves is applied exactly once',
    async (kind) => {
      const run = await scenario.deploy(`s11-${kind}`, {
        redisCommandTimeoutMs: REDIS_TIMEOUT_MS,
        flushEnabled: true,
        flushIntervalMs: FLUSH_INTERVAL_MS,
        flushMaxBackoffMs: MAX_BACKOFF_MS,
      });
      const { deployment, seed } = run;
      const fault = await faultFor(kind, deployment);
      const targets = await insertArticleTargets(deployment.observer, ROWS);
      const start = await readTargets(deployment.observer, targets);
      const workers = await deployment.startWorkers(['a', 'b'], { counter: { redis: fault.url } });
      const sampler = deployment.startSampler(targets);
      const load = deployment.startLoad({ targets, workers, seed, keyed: true });
      await sleep(LOAD_BEFORE_MS);
      await fault.inject();
      await sleep(LOAD_AFTER_MS);
      const tally = await within(load.stop(), RETRIES_END_BOUND_MS, 'every keyed change resolving');
      const { figures } = await run.settle({
        flusher: workers[0],
        targets,
        start,
        tally,
        sampler,
        redis: fault.inspector,
      });

      const details = {
        seed,
        changes: tally.calls.acknowledged + tally.calls.uncertain,
        attempts: Object.values(tally.attempts).reduce((sum, count) => sum + count, 0),
        failedAttemptsUncertain: tally.attempts.uncertain,
        failedAttemptsRefused: tally.attempts.refused,
        errors: [...tally.errors].map(([name, count]) => `${name}×${count}`).join(','),
      };
      run.record(`11 keyed retries, Redis ${kind}`, figures, { ...details, injected: fault.injected });

      // The fault made attempts fail, some with an unknown outcome; their retries resolved every one.
      expect(tally.attempts.refused + tally.attempts.uncertain, 'attempts failed during the fault').toBeGreaterThan(0);
      if (kind === 'blackhole')
        expect(tally.attempts.uncertain, 'attempts sent into the blackhole timed out').toBeGreaterThan(0);
      expect([...tally.errors.keys()]).toEqual(['CounterStoreUnavailableError']);
      expect(tally.calls.uncertain).toBe(0);
      expect(figures.wrong).toEqual([]);
      expect(figures).toMatchObject({ lost: 0, duplicated: 0, uncertain: 0, backwards: 0 });
      expect(figures.inDatabase).toBe(figures.acknowledged);
    },
  );
});
