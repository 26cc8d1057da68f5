import {
  Inject,
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { COUNTER_OPTIONS } from '../counter.constants.js';
import { MESSAGES } from '../counter.messages.js';
import type { CountedEntity } from '../counter.registry.js';
import { CounterService } from '../counter.service.js';
import { FlushRecord } from '../flush/flush.record.js';
import type { ResolvedCounterOptions } from '../interfaces/counter-module-options.interface.js';

/** Rows a repair recounts per call, so that a shutdown stops it between two calls. */
const ROWS_PER_STEP = 1000;

/**
 * `repairOnDataLoss`: recounts, in the background, the counters that declare a source of the entities
 * whose Redis data was lost, once per detected loss; losses detected during a repair queue behind it.
 * A shutdown stops it between two steps.
 */
@Injectable()
export class DataLossRepairer implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('CounterRepair');
  private queue: Promise<void> = Promise.resolve();
  private stopping = false;

  constructor(
    private readonly record: FlushRecord,
    private readonly counters: CounterService,
    @Inject(COUNTER_OPTIONS) private readonly options: ResolvedCounterOptions,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.options.repairOnDataLoss) return;
    this.record.onRedisDataLoss((entities) => {
      this.queue = this.queue.then(() => this.repair(entities));
    });
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    await this.queue;
  }

  /** The promise of the repairs queued so far (for tests and shutdown). */
  get idle(): Promise<void> {
    return this.queue;
  }

  private async repair(entities: CountedEntity[]): Promise<void> {
    for (const entity of entities) {
      for (const counter of entity.counters.filter((field) => field.source)) {
        const name = `${entity.name}.${counter.name}`;
        let checked = 0;
        let corrected = 0;
        try {
          let after: string | number | undefined;
          do {
            if (this.stopping) return;
            const report = await this.counters.recount(entity.target, counter.name, { after, limit: ROWS_PER_STEP });
            checked += report.checked;
            corrected += report.corrected.length;
            after = report.cursor ?? undefined;
          } while (after !== undefined);
          this.logger.log(MESSAGES.repairDone(name, checked, corrected));
        } catch (error) {
          this.logger.error(MESSAGES.repairFailed(name, checked, (error as Error).message));
        }
      }
    }
  }
}
