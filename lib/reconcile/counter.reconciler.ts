import type { Logger } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { chunks } from '../collections.js';
import { MESSAGES } from '../counter.messages.js';
import type { CountedEntity, CounterField } from '../counter.registry.js';
import { CounterConfigurationError } from '../exceptions/counter-configuration.error.js';
import type { CounterSource } from '../interfaces/counted-options.interface.js';
import type { AuditOptions, AuditReport, RecountOptions, RecountReport } from '../interfaces/reconcile.interface.js';
import { toRowId } from '../row-id.js';
import type { CountedRowsQuery } from '../sql/counted-rows.query.js';

/** Rows read from the source and compared per step, unless the caller says otherwise. */
const DEFAULT_BATCH_SIZE = 1000;

/** What the reconciler needs of the service: live values (loading rows Redis lacks), and changes. */
export interface ReconciledCounters {
  /** Per id, the live value of the counter; undefined for a row missing from the database. */
  live(
    entity: CountedEntity,
    field: CounterField,
    ids: ReadonlyArray<string | number>,
  ): Promise<Array<number | undefined>>;
  /** Adds `delta` to the counter, as `increment` does. */
  add(entity: CountedEntity, field: CounterField, id: string | number, delta: number): Promise<number>;
}

/**
 * Compares counters with their declared source (`@Counted({ source })`) and corrects those that differ.
 * A step reads the source for a batch of rows, then their live values, and adds to each counter the
 * difference: a change made after those reads stays counted. A change whose source row was committed
 * before the source read and counted after the live read is counted twice; one committed after the
 * source read and counted before the live read is missed. That window, the commit-to-increment delay
 * plus the gap between the two reads, is the only one left (docs/DESIGN.md, G9).
 */
export class CounterReconciler {
  constructor(
    private readonly counters: ReconciledCounters,
    private readonly rows: CountedRowsQuery,
    private readonly manager: EntityManager,
    private readonly logger: Logger,
  ) {}

  async recount(entity: CountedEntity, field: CounterField, options: RecountOptions = {}): Promise<RecountReport> {
    const source = sourceOf(entity, field);
    const report: RecountReport = { checked: 0, corrected: [], cursor: null };
    for await (const ids of this.batches(entity, options, report)) {
      const truth = await this.sourceValues(entity, field, source, ids);
      const live = await this.counters.live(entity, field, ids);
      const drifted: RecountReport['corrected'] = [];
      ids.forEach((id, index) => {
        const was = live[index];
        if (was === undefined) return;
        report.checked++;
        if (was !== truth(id)) drifted.push({ id, was, now: truth(id) });
      });
      await Promise.all(drifted.map(({ id, was, now }) => this.counters.add(entity, field, id, now - was)));
      report.corrected.push(...drifted);
      if (options.ids === undefined) {
        const progress = MESSAGES.recountProgress(
          entity.name,
          field.name,
          report.checked,
          report.corrected.length,
          ids.at(-1),
        );
        this.logger.log(progress);
      }
    }
    return report;
  }

  async audit(entity: CountedEntity, field: CounterField, options: AuditOptions = {}): Promise<AuditReport> {
    const source = sourceOf(entity, field);
    const report: AuditReport = { checked: 0, drifted: [] };
    const batches =
      options.sample === undefined
        ? this.batches(entity, { ids: options.ids, batchSize: options.batchSize }, { cursor: null })
        : this.once(await this.rows.sample(entity, options.sample));
    for await (const ids of batches) {
      const truth = await this.sourceValues(entity, field, source, ids);
      const live = await this.counters.live(entity, field, ids);
      ids.forEach((id, index) => {
        const value = live[index];
        if (value === undefined) return;
        report.checked++;
        if (value !== truth(id)) report.drifted.push({ id, live: value, source: truth(id) });
      });
    }
    return report;
  }

  /** The ids given, in batches; else the table's, walked in key order up to `limit` (noting where it stopped). */
  private async *batches(
    entity: CountedEntity,
    { ids, batchSize = DEFAULT_BATCH_SIZE, after, limit = Number.POSITIVE_INFINITY }: RecountOptions,
    report: Pick<RecountReport, 'cursor'>,
  ): AsyncGenerator<Array<string | number>> {
    if (ids !== undefined) {
      yield* chunks([...ids], batchSize);
      return;
    }
    let cursor = after;
    let walked = 0;
    while (walked < limit) {
      const page = await this.rows.idsAfter(entity, cursor, Math.min(batchSize, limit - walked));
      if (page.length === 0) return;
      yield page;
      walked += page.length;
      cursor = page[page.length - 1];
    }
    report.cursor = cursor ?? null;
  }

  private async *once(ids: Array<string | number>): AsyncGenerator<Array<string | number>> {
    if (ids.length > 0) yield ids;
  }

  /** The source's value of each id (0 for an id it leaves out), checked to be safe integers. */
  private async sourceValues(
    entity: CountedEntity,
    field: CounterField,
    source: CounterSource,
    ids: Array<string | number>,
  ): Promise<(id: string | number) => number> {
    const values = new Map<string, number>();
    for (const [id, value] of await source(ids, this.manager)) {
      const number = Number(value);
      if (!Number.isSafeInteger(number)) {
        throw new CounterConfigurationError(MESSAGES.badSourceValue(entity.name, field.name, id, value));
      }
      values.set(toRowId(entity, id).text, number);
    }
    return (id) => values.get(toRowId(entity, id).text) ?? 0;
  }
}

function sourceOf(entity: CountedEntity, field: CounterField): CounterSource {
  if (!field.source) throw new CounterConfigurationError(MESSAGES.noSource(entity.name, field.name));
  return field.source;
}
