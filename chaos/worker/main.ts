// Entry point of a chaos worker: one app instance of a deployment, run as a child process by
// chaos/harness/chaos-worker.ts (compiled to chaos/dist first). Reads its WorkerConfig from
// CHAOS_WORKER_CONFIG, boots the Nest app, says `ready`, then serves the parent's requests over IPC
// (see worker-protocol.ts). Each reply carries the result or the error's name and message; an
// increment replied with ok is an acknowledged delta.
import 'reflect-metadata';
import type { INestApplicationContext } from '@nestjs/common';
import { CounterService, type FlushReport } from '../../lib/index.js';
import { Article, Badge, Remark } from '../../test/fixtures/entities.js';
import { Topic } from '../../test/fixtures/sourced-entities.js';
import { Clip } from './clip.entity.js';
import { FlushStepHooks } from './flush-step-hooks.js';
import { createWorkerApp } from './worker-app.js';
import {
  toWireError,
  type CountedEntityName,
  type ParentMessage,
  type WireFlushReport,
  type WorkerConfig,
  type WorkerMessage,
} from './worker-protocol.js';

const ENTITY_CLASSES: Record<CountedEntityName, abstract new () => unknown> = { Article, Remark, Badge, Topic, Clip };

const config = JSON.parse(process.env.CHAOS_WORKER_CONFIG ?? '') as WorkerConfig;

function send(message: WorkerMessage): void {
  process.send?.(message);
}

// Without its parent a worker has nobody to serve: never outlive it.
process.on('disconnect', () => process.exit(0));

class WorkerServer {
  private readonly counters: CounterService;
  private hooks?: FlushStepHooks;

  constructor(private readonly app: INestApplicationContext) {
    this.counters = app.get(CounterService);
  }

  async handle(request: ParentMessage): Promise<unknown> {
    switch (request.op) {
      case 'increment':
        return this.counters.increment(ENTITY_CLASSES[request.entity], request.rowId, request.counter, request.by, {
          idempotencyKey: request.idempotencyKey,
        });
      case 'get':
        return this.counters.get(ENTITY_CLASSES[request.entity], request.rowId, request.counter);
      case 'getMany':
        return [...(await this.counters.getMany(ENTITY_CLASSES[request.entity], request.ids, request.counters))];
      case 'flush':
        if (request.at) await new Promise((resolve) => setTimeout(resolve, Math.max(0, request.at! - Date.now())));
        return this.flush();
      case 'status':
        return this.counters.status();
      case 'pauseAt':
        this.hooks ??= FlushStepHooks.install(this.app, send);
        this.hooks.pauseAt(request.step);
        return true;
      case 'resume':
        return this.hooks?.resume() ?? false;
      case 'close':
        await this.app.close();
        setImmediate(() => process.exit(0));
        return true;
    }
  }

  private async flush(): Promise<WireFlushReport> {
    const startedAt = Date.now();
    const report: FlushReport = await this.counters.flush();
    const { error, ...figures } = report;
    return { worker: config.name, ...figures, error: error && toWireError(error), startedAt, endedAt: Date.now() };
  }
}

async function main(): Promise<void> {
  let app: INestApplicationContext;
  try {
    app = await createWorkerApp(config);
  } catch (error) {
    send({ kind: 'boot-failed', error: toWireError(error) });
    process.exit(1);
  }
  const server = new WorkerServer(app);
  process.on('message', (request: ParentMessage) => {
    server.handle(request).then(
      (result) => send({ kind: 'reply', id: request.id, ok: true, result }),
      (error: unknown) => send({ kind: 'reply', id: request.id, ok: false, error: toWireError(error) }),
    );
  });
  send({ kind: 'ready', pid: process.pid });
}

void main();
