import type { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { chunks } from '../collections.js';
import { MESSAGES } from '../counter.messages.js';
import type { CountedEntity, CounterField } from '../counter.registry.js';
import { CounterConfigurationError } from '../exceptions/counter-configuration.error.js';
import type { CounterSource } from '../interfaces/counted-options.interface.js';
import type { AuditOptions, AuditReport, RecountOptions, RecountReport } from '../interfaces/reconcile.interface.js';
import { toRowId } from '../row-id.js';
import type { CountedRowsQuery } from '../sql/counted-rows.query.js';
import { onPrimary } from '../sql/on-primary.js';

/** Rows read from the source and compared per step, unless the caller says otherwise. */
const DEFAULT_BATCH_SIZE = 1000;
/** Times a row that keeps changing is read and compared again before the recount leaves it (`skipped`). */
const RECOUNT_ROUNDS = 3;

/** What the reconciler needs of the service: live values (loading rows Redis lacks), and changes. */
export interface ReconciledCounters {
  /** Per id, the live value of the counter; undefined for a row missing from the database. */
  live(
    entity: CountedEntity,
    field: CounterField,
    ids: ReadonlyArray<string | number>,
  ): Promise<Array<number | undefined>>;
  /** Sets the counter to `value` only while its live value is `expected`; false when it moved. */
  replace(
    entity: CountedEntity,
    field: CounterField,
    id: string | number,
    expected: number,
    value: number,
  ): Promise<boolean>;
}

/**
 * Compares counters with their declared source (`@Counted({ source })`) and corrects those that differ.
 * A step reads the source for a batch of rows, then their live values, and sets each counter that differs
 * to its source value only if its live value is still the one read: a row changed since (a change, or
 * another recount) is read and compared again, so a change made after the reads is never undone or
 * counted twice. What is left: a source row committed before the source read and counted after the live
 * read is counted twice; one committed after the source read and counted before the live read is missed.
 * That window, the commit-to-increment delay plus the gap between the two reads, is named in
 * docs/DESIGN.md (G9).
 */
export class CounterReconciler {
  constructor(
    private readonly counters: ReconciledCounters,
    private readonly rows: CountedRowsQuery,
    private readonly dataSource: DataSource,
    private readonly logger: Logger,
  ) {}

  async recount(entity: CountedEntity, field: CounterField, options: RecountOptions = {}): Promise<RecountReport> {
    const source = sourceOf(entity, field);
    const report: RecountReport = { checked: 0, corrected: [], skipped: [], cursor: null };
    for await (const ids of this.batches(entity, options, report)) {
      let pending = ids;
      for (let round = 1; pending.length > 0; round++) {
        const { checked, drifted } = await this.compare(entity, field, source, pending);
        if (round === 1) report.checked += checked;
        if (round > RECOUNT_ROUNDS) {
          report.skipped.push(...drifted.map((drift) => drift.id));
          break;
        }
        const replaced = await Promise.all(
          drifted.map(({ id, live, source: value }) => this.counters.replace(entity, field, id, live, value)),
        );
        drifted.forEach(({ id, live, source: value }, index) => {
          if (replaced[index]) report.corrected.push({ id, was: live, now: value });
        });
        pending = drifted.filter((_, index) => !replaced[index]).map((drift) => drift.id);
      }
      if (options.ids === undefined) {
        const { checked, corrected } = report;
        this.logger.log(MESSAGES.recountProgress(entity.name, field.name, checked, corrected.length, ids.at(-1)));
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
      const { checked, drifted } = await this.compare(entity, field, source, ids);
      report.checked += checked;
      report.drifted.push(...drifted);
    }
    return report;
  }

  /** Reads the source of the rows, then their live values: the rows that exist, and those that differ. */
  private async compare(
    entity: CountedEntity,
    field: CounterField,
    source: CounterSource,
    ids: Array<string | number>,
  ): Promise<AuditReport> {
    const truth = await this.sourceValues(entity, field, source, ids);
    const live = await this.counters.live(entity, field, ids);
    const report: AuditReport = { checked: 0, drifted: [] };
    ids.forEach((id, index) => {
      const value = live[index];
      if (value === undefined) return;
      report.checked++;
      if (value !== truth(id)) report.drifted.push({ id, live: value, source: truth(id) });
    });
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
    // The source's manager reads the primary: a replica behind it would undo the changes it has not seen.
    const pairs = await onPrimary(this.dataSource, (manager) => source(ids, manager));
    for (const [id, value] of pairs) {
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
