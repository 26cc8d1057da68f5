// The parent's handle on one chaos worker: forks chaos/dist/chaos/worker/main.js (compiled by the
// global setup), sends it requests, listens for the steps it reaches, and signals or kills it. Every
// worker ever started is killed when the parent process exits, whatever happened to the test.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { CounterStatus } from '../../lib/index.js';
import type {
  CountedEntityName,
  FlushStep,
  ParentMessage,
  WireError,
  WireFlushReport,
  WorkerConfig,
  WorkerMessage,
  WorkerRequest,
} from '../worker/worker-protocol.js';

export const WORKER_ENTRY = fileURLToPath(new URL('../dist/chaos/worker/main.js', import.meta.url));

const BOOT_TIMEOUT_MS = 30_000;
const OUTPUT_KEPT_CHARS = 64_000;

/** An error the worker replied with (the library's error name and message). */
export class WorkerRequestError extends Error {
  constructor(
    readonly worker: string,
    readonly wire: WireError,
  ) {
    super(`${worker}: ${wire.name}: ${wire.message}`);
    this.name = wire.name;
  }
}

/** The worker died or was killed before it replied: the request's outcome is unknown. */
export class WorkerExitedError extends Error {
  override readonly name = 'WorkerExitedError';
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

const everyWorker = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of everyWorker) child.kill('SIGKILL');
});

export class ChaosWorker {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly reachedWaiters: Array<{
    step: FlushStep;
    resolve(message: Reached): void;
    reject(error: Error): void;
  }> = [];
  /** Steps reported before anyone waited for them. */
  private readonly reachedUnclaimed: Reached[] = [];
  private outputTail = '';
  /** Resolves with the exit code and signal once the process has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(
    readonly name: string,
    private readonly child: ChildProcess,
  ) {
    everyWorker.add(child);
    const keep = (chunk: Buffer) => {
      this.outputTail = (this.outputTail + chunk.toString()).slice(-OUTPUT_KEPT_CHARS);
      if (process.env.CHAOS_VERBOSE) process.stderr.write(`[${name}] ${chunk.toString()}`);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.on('message', (message: WorkerMessage) => this.receive(message));
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        everyWorker.delete(child);
        const exited = () => new WorkerExitedError(`worker ${name} exited (${signal ?? code})`);
        for (const { reject } of this.pending.values()) reject(exited());
        this.pending.clear();
        for (const waiter of this.reachedWaiters.splice(0)) waiter.reject(exited());
        resolve({ code, signal });
      }),
    );
  }

  /** Forks a worker and resolves once its Nest app is up. */
  static async start(config: WorkerConfig): Promise<ChaosWorker> {
    const child = fork(WORKER_ENTRY, [], {
      env: { ...process.env, CHAOS_WORKER_CONFIG: JSON.stringify(config) },
      // Not the test runner's loader flags: the worker is plain compiled JavaScript.
      execArgv: ['--enable-source-maps'],
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      serialization: 'advanced',
    });
    const worker = new ChaosWorker(config.name, child);
    let timer: NodeJS.Timeout | undefined;
    const booted = new Promise<void>((resolve, reject) => {
      timer = setTimeout(
        () => reject(new Error(`worker ${config.name} did not boot within ${BOOT_TIMEOUT_MS} ms`)),
        BOOT_TIMEOUT_MS,
      );
      child.on('message', (message: WorkerMessage) => {
        if (message.kind === 'ready') resolve();
        if (message.kind === 'boot-failed')
          reject(new Error(`worker ${config.name} failed to boot: ${message.error.message}`));
      });
      void worker.exited.then(({ code, signal }) =>
        reject(new Error(`worker ${config.name} exited during boot (${signal ?? code}):\n${worker.output}`)),
      );
    });
    try {
      await booted;
    } catch (error) {
      await worker.destroy();
      throw error;
    } finally {
      clearTimeout(timer);
    }
    return worker;
  }

  get pid(): number {
    return this.child.pid!;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The last 64 kB the worker printed (Nest's warnings and errors). */
  get output(): string {
    return this.outputTail;
  }

  request<T>(request: WorkerRequest): Promise<T> {
    if (!this.alive || !this.child.connected) {
      return Promise.reject(new WorkerExitedError(`worker ${this.name} is not running`));
    }
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.child.send({ ...request, id } satisfies ParentMessage, (error) => {
        if (error && this.pending.delete(id)) reject(new WorkerExitedError(`worker ${this.name}: ${error.message}`));
      });
    });
  }

  increment(
    entity: CountedEntityName,
    rowId: string | number,
    counter: string,
    by: number,
    idempotencyKey?: string,
  ): Promise<number> {
    return this.request({ op: 'increment', entity, rowId, counter, by, idempotencyKey });
  }

  flush(at?: number): Promise<WireFlushReport> {
    return this.request({ op: 'flush', at });
  }

  status(): Promise<CounterStatus> {
    return this.request({ op: 'status' });
  }

  pauseAt(step: FlushStep): Promise<void> {
    return this.request({ op: 'pauseAt', step });
  }

  resume(): Promise<boolean> {
    return this.request({ op: 'resume' });
  }

  /** Resolves when the worker reports it stopped at `step` (arm it with `pauseAt` first); rejects if it exits. */
  reached(step: FlushStep): Promise<Reached> {
    const index = this.reachedUnclaimed.findIndex((message) => message.reached === step);
    if (index >= 0) return Promise.resolve(this.reachedUnclaimed.splice(index, 1)[0]);
    if (!this.alive) return Promise.reject(new WorkerExitedError(`worker ${this.name} is not running`));
    return new Promise((resolve, reject) => this.reachedWaiters.push({ step, resolve, reject }));
  }

  /** Sends a signal (SIGKILL, SIGSTOP, SIGCONT, SIGTERM…); for SIGKILL, resolves once the process is gone. */
  async signal(signal: NodeJS.Signals): Promise<void> {
    if (!this.alive) return;
    this.child.kill(signal);
    if (signal === 'SIGKILL') await this.exited;
  }

  /** Kills the worker if it still runs, even a stopped one, and waits until it is gone. */
  async destroy(): Promise<void> {
    if (this.alive) {
      this.child.kill('SIGKILL');
      await this.exited;
    }
  }

  private receive(message: WorkerMessage): void {
    if (message.kind === 'reply') {
      const pending = this.pending.get(message.id);
      if (!pending) return;
      this.pending.delete(message.id);
      if (message.ok) pending.resolve(message.result);
      else pending.reject(new WorkerRequestError(this.name, message.error));
    } else if (message.kind === 'reached') {
      const index = this.reachedWaiters.findIndex((waiter) => waiter.step === message.reached);
      if (index >= 0) this.reachedWaiters.splice(index, 1)[0].resolve(message);
      else this.reachedUnclaimed.push(message);
    }
  }
}

export type Reached = Extract<WorkerMessage, { kind: 'reached' }>;
