// The instances of the randomised soak (scenario 10) and the faults applied to them, one episode at a
// time (see fault-schedule.ts). Every instance reaches Redis through a proxy of its own (to cut one
// instance off) and the database through a proxy they share (a database outage hits them all). Each
// instance flushes in a loop; the load runs throughout.
//
// Each fault is set up so that the exact invariant still holds, and so that every committed batch is
// accounted for:
// - No increment is in flight on an instance when it is killed or frozen, or when its Redis link is cut
//   or restored (it is taken out of the load first): so every increment has a known outcome, and one
//   sent into a cut link never reached Redis. The kill and the freeze still land in its flushes.
// - No flush is in flight when the database goes away (the loops are paused first): so no COMMIT can
//   be lost on the way back, leaving a batch that is in the ledger but in no report.
// - A SIGKILL does lose a flush's report: the other loops are paused around it and the ledger is
//   counted before and after, so the batches the dead instance committed unreported are known exactly.
import type { DataSourceOptions } from 'typeorm';
import { REDIS_URL } from '../../support/redis.js';
import { TcpProxy } from '../../support/tcp-proxy.js';
import type { WireFlushReport } from '../worker/worker-protocol.js';
import type { ChaosDeployment } from './chaos-deployment.js';
import type { ChaosWorker } from './chaos-worker.js';
import type { CounterTarget } from './counter-targets.js';
import type { FaultEpisode, FaultKind } from './fault-schedule.js';
import { FlushLoops } from './flush-loops.js';
import type { LoadGenerator } from './load-generator.js';
import { sleep } from './time.js';

/** Time for a killed instance's server sessions to finish what they had received (a COMMIT). */
const SETTLE_AFTER_KILL_MS = 300;

interface Instance {
  label: string;
  worker: ChaosWorker;
  redisProxy: TcpProxy;
  restarts: number;
}

export class SoakFleet {
  readonly loops = new FlushLoops(50);
  /** Reports of the storms' flushes (the loops keep their own). */
  readonly stormReports: WireFlushReport[] = [];
  /** Batches committed by instances killed before they could report them. */
  unreportedBatches = 0;
  readonly applied: Record<FaultKind, number> = {
    'instance-killed': 0,
    'instance-frozen': 0,
    'database-reset': 0,
    'database-blackhole': 0,
    'redis-blackhole': 0,
    'flush-storm': 0,
  };
  private load?: LoadGenerator;

  private constructor(
    private readonly deployment: ChaosDeployment,
    private readonly databaseProxy: TcpProxy,
    private readonly databaseOptions: DataSourceOptions,
    private readonly instances: Instance[],
  ) {}

  static async start(deployment: ChaosDeployment, size: number): Promise<SoakFleet> {
    const { proxy, options } = await deployment.databaseProxy();
    const fleet = new SoakFleet(deployment, proxy, options, []);
    const url = new URL(REDIS_URL);
    for (let i = 0; i < size; i++) {
      const redisProxy = await TcpProxy.start({ host: url.hostname, port: Number(url.port || 6379) });
      deployment.onClose(() => redisProxy.close());
      const instance: Instance = { label: `i${i + 1}`, worker: undefined!, redisProxy, restarts: 0 };
      instance.worker = await fleet.boot(instance);
      fleet.instances.push(instance);
    }
    deployment.onClose(() => fleet.loops.stop());
    return fleet;
  }

  get workers(): ChaosWorker[] {
    return this.instances.map((instance) => instance.worker).filter((worker) => worker.alive);
  }

  startLoad(targets: CounterTarget[], seed: number): LoadGenerator {
    this.load = this.deployment.startLoad({ targets, workers: this.workers, seed });
    return this.load;
  }

  async apply(episode: FaultEpisode): Promise<void> {
    const instance = this.instances[episode.instance];
    switch (episode.kind) {
      case 'instance-killed':
        await this.kill(instance, episode.durationMs, episode.extra);
        break;
      case 'instance-frozen':
        await this.freeze(instance, episode.durationMs);
        break;
      case 'database-reset':
      case 'database-blackhole':
        await this.databaseOutage(episode.kind === 'database-reset' ? 'reset' : 'blackhole', episode.durationMs);
        break;
      case 'redis-blackhole':
        await this.cutFromRedis(instance, episode.durationMs);
        break;
      case 'flush-storm':
        await this.storm(episode.extra);
        break;
    }
    this.applied[episode.kind]++;
  }

  /** Every report: the loops', the storms'. */
  reports(): WireFlushReport[] {
    return [...this.loops.reports, ...this.stormReports];
  }

  private async boot(instance: Instance): Promise<ChaosWorker> {
    const name = instance.restarts === 0 ? instance.label : `${instance.label}.${instance.restarts}`;
    const worker = await this.deployment.startWorker({
      name,
      database: this.databaseOptions,
      counter: { redis: instance.redisProxy.url },
    });
    this.loops.add(worker);
    return worker;
  }

  private async useWorkers(except?: Instance): Promise<void> {
    await this.load!.useWorkers(this.workers.filter((worker) => worker !== except?.worker));
  }

  private async kill(instance: Instance, flushAloneMs: number, restartAfterMs: number): Promise<void> {
    await this.useWorkers(instance);
    await this.loops.pause();
    const ledgerBefore = await this.deployment.ledgerRows();
    const reportsBefore = this.loops.reports.length;
    this.loops.resume(instance.worker);
    await sleep(flushAloneMs);
    await instance.worker.signal('SIGKILL');
    await sleep(SETTLE_AFTER_KILL_MS);
    const committed = (await this.deployment.ledgerRows()) - ledgerBefore;
    const reported = this.loops.reports.slice(reportsBefore).reduce((sum, report) => sum + report.batches, 0);
    this.unreportedBatches += committed - reported;
    this.loops.resume();
    await sleep(restartAfterMs);
    instance.restarts++;
    instance.worker = await this.boot(instance);
    await this.useWorkers();
  }

  private async freeze(instance: Instance, ms: number): Promise<void> {
    await this.useWorkers(instance);
    await instance.worker.signal('SIGSTOP');
    await sleep(ms);
    await instance.worker.signal('SIGCONT');
    await this.useWorkers();
  }

  private async databaseOutage(mode: 'reset' | 'blackhole', ms: number): Promise<void> {
    await this.loops.pause();
    this.databaseProxy.setMode(mode);
    this.loops.resume();
    await sleep(ms);
    // A blackholed connection stays dead: reset them all (the server then drops its end), then pass.
    this.databaseProxy.setMode('reset');
    await sleep(50);
    this.databaseProxy.setMode('pass');
  }

  private async cutFromRedis(instance: Instance, ms: number): Promise<void> {
    await this.useWorkers(instance);
    instance.redisProxy.setMode('blackhole');
    // Back in the load while cut off: its increments time out (nothing reaches Redis).
    await this.useWorkers();
    await sleep(ms);
    await this.useWorkers(instance);
    instance.redisProxy.setMode('reset');
    await sleep(50);
    instance.redisProxy.setMode('pass');
    await this.useWorkers();
  }

  private async storm(rounds: number): Promise<void> {
    for (let round = 0; round < rounds; round++) {
      const at = Date.now() + 25;
      const workers = this.workers;
      this.stormReports.push(...(await Promise.all(workers.map((worker) => worker.flush(at)))));
    }
  }
}
