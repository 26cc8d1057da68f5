import { Injectable, Logger } from '@nestjs/common';
import { collectCountedInstances, type CountedInstance } from './counted-instances.js';
import { MESSAGES } from './counter.messages.js';
import { CounterReader, type RowRequest } from './counter.reader.js';
import { CounterRegistry } from './counter.registry.js';
import { CounterStoreUnavailableError } from './exceptions/counter-store-unavailable.error.js';
import type { CounterOverlayOptions } from './interfaces/counter-overlay.interface.js';
import { toRowId } from './model/row-id.js';
import { CounterValueHydrator } from './sql/counter-value.hydrator.js';
import { RollingCountOverlay } from './windows/rolling-count.overlay.js';

/** Writes live counter values into the counted entities of a value (`CounterService.overlay`). */
@Injectable()
export class CounterOverlay {
  /** Warnings are logged under the name users call the overlay by. */
  private readonly logger = new Logger('CounterService');

  constructor(
    private readonly registry: CounterRegistry,
    private readonly reader: CounterReader,
    private readonly hydrator: CounterValueHydrator,
    private readonly rollingCounts: RollingCountOverlay,
  ) {}

  /**
   * Overlays every counted entity in `value`, in place, with values of the column's TypeORM type; with
   * Redis unreachable, they keep their database values (a NULL counter becomes 0). With `windowed`, their
   * rolling counts too, read meanwhile (see RollingCountOverlay, which never rejects).
   */
  async overlay<T>(value: T, options: CounterOverlayOptions = {}): Promise<T> {
    const instances = collectCountedInstances(value, this.registry);
    if (!options.windowed) return this.overlayTotals(value, instances);
    const [totals] = await Promise.allSettled([
      this.overlayTotals(value, instances),
      this.rollingCounts.overlay(instances),
    ]);
    if (totals.status === 'rejected') throw totals.reason;
    return value;
  }

  private async overlayTotals<T>(value: T, instances: CountedInstance[]): Promise<T> {
    const requests: Array<RowRequest & { instance: Record<string, unknown> }> = [];
    for (const { entity, instance } of instances) {
      const id = instance[entity.primary.propertyName];
      if (id === undefined || id === null) continue;
      requests.push({ entity, id: toRowId(entity, id), instance });
    }
    if (requests.length === 0) return value;
    let values: Array<number[] | undefined>;
    try {
      values = await this.reader.read(requests, false);
    } catch (error) {
      if (!(error instanceof CounterStoreUnavailableError)) throw error;
      // Redis down: logged once as an outage (OutageLog), not once per read.
      this.logger.debug(`${MESSAGES.overlayFailed()} ${error.message}`);
      for (const { entity, instance } of requests) {
        for (const field of entity.counters)
          if (instance[field.propertyName] === null) instance[field.propertyName] = this.hydrator.hydrate(field, 0);
      }
      return value;
    }
    requests.forEach(({ entity, instance }, index) => {
      const row = values[index];
      if (!row) return;
      for (let counter = 0; counter < row.length; counter++) {
        const field = entity.counters[counter];
        instance[field.propertyName] = this.hydrator.hydrate(field, row[counter]);
      }
    });
    return value;
  }
}
