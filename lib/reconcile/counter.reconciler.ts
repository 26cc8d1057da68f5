import { Inject, Injectable, Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { chunks } from '../collections.js';
import { COUNTER_DATA_SOURCE, COUNTER_INSTRUMENTS } from '../counter.constants.js';
import { CounterChangeApplier } from '../counter-change.applier.js';
import { MESSAGES } from '../counter.messages.js';
import { CounterReader } from '../counter.reader.js';
import type { CountedEntity, CounterField } from '../model/counted-entity.js';
import { CounterConfigurationError } from '../exceptions/counter-configuration.error.js';
import type { CounterSource } from '../interfaces/counted-options.interface.js';
import type { AuditOptions, AuditReport, RecountOptions, RecountReport } from '../interfaces/reconcile.interface.js';
import type { CounterInstruments } from '../metrics/counter.instruments.js';
import { toRowId } from '../model/row-id.js';
import type { VersionedValue } from '../redis/counter.store.js';
import { CountedRowsQuery } from '../sql/counted-rows.query.js';
import { onPrimary } from '../sql/on-primary.js';
import { auditScope, recountScope, type ReconcileScope } from './reconcile-options.js';

/** Times a row that keeps changing is read and compared again before the recount leaves it (`skipped`). */
const RECOUNT_ROUNDS = 3;

/** A source value that is not a safe integer: the number, or the text of anything else. */
interface Unusable {
  given: number | string;
}

/** A row whose live value differs from its source's, or whose source value is unusable. */
interface Difference {
  id: string | number;
  live: VersionedValue;
  source: number | Unusable;
}

/** Reads the live values of rows (with their versions; '' where the caller sets nothing). */
type LiveRead = (ids: Array<string | number>) => Promise<Array<VersionedValue | undefined>>;

/**
 * Compares counters with their declared source (`@Counted({ source })`) and corrects those that differ.
 * A step reads the source for a batch of rows, then their live values with their versions, and sets each
 * counter that differs to its source value only if its live value and version are still the ones read: a
 * row changed since (a change, or another recount's correction, which alone moves the version) is read
 * and compared again, so a change made after the reads is never undone or counted twice, nor a
 * correction made twice. What is left: a source row committed before the source read and counted after
 * the live read is counted twice; one committed after the source read and counted before the live read
 * is missed.
 * That window, the commit-to-increment delay plus the gap between the two reads, is named in
 * docs/DESIGN.md (G9). A source value the counter cannot take is reported (`refused`), and the walk goes on.
 */
@Injectable()
export class CounterReconciler {
  /** Progress is logged under the name users call the recount by. */
  private readonly logger = new Logger('CounterService');

  constructor(
    private readonly reader: CounterReader,
    private readonly changes: CounterChangeApplier,
    private readonly rows: CountedRowsQuery,
    @Inject(COUNTER_DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(COUNTER_INSTRUMENTS) private readonly instruments: CounterInstruments,
  ) {}

  async recount(entity: CountedEntity, field: CounterField, options?: RecountOptions): Promise<RecountReport> {
    const scope = recountScope(entity, options);
    const source = sourceOf(entity, field);
    const report: RecountReport = { checked: 0, corrected: [], skipped: [], refused: [], cursor: null };
    for await (const ids of this.batches(entity, scope, report)) {
      let pending = ids;
      for (let round = 1; pending.length > 0; round++) {
        const { checked, differences } = await this.compare(entity, source, pending, (ids) =>
          this.versionedValues(entity, field, ids),
        );
        if (round === 1) report.checked += checked;
        const settable: Array<{ id: string | number; live: VersionedValue; source: number }> = [];
        for (const { id, live, source: value } of differences) {
          if (typeof value !== 'number') report.refused.push({ id, source: value.given, reason: 'not-a-safe-integer' });
          else if (value < field.min || value > field.max)
            report.refused.push({ id, source: value, reason: 'out-of-range' });
          else settable.push({ id, live, source: value });
        }
        if (round > RECOUNT_ROUNDS) {
          report.skipped.push(...settable.map((drift) => drift.id));
          break;
        }
        const outcomes = await Promise.all(
          settable.map(({ id, live, source: value }) => this.changes.replace(entity, field, id, live, value)),
        );
        pending = [];
        settable.forEach(({ id, live, source: value }, index) => {
          if (outcomes[index] === 'applied') report.corrected.push({ id, was: live.value, now: value });
          else if (outcomes[index] === 'changed') pending.push(id);
          else report.refused.push({ id, source: value, reason: 'out-of-range' });
        });
      }
      if (scope.ids === undefined) {
        const { checked, corrected } = report;
        this.logger.log(MESSAGES.recountProgress(entity.name, field.name, checked, corrected.length, ids.at(-1)));
      }
    }
    return report;
  }

  async audit(entity: CountedEntity, field: CounterField, options?: AuditOptions): Promise<AuditReport> {
    const scope = auditScope(entity, options);
    const source = sourceOf(entity, field);
    const report: AuditReport = { checked: 0, drifted: [] };
    const batches =
      scope.sample === undefined
        ? this.batches(entity, scope, { cursor: null })
        : chunks(await this.rows.sample(entity, scope.sample), scope.batchSize);
    for await (const ids of batches) {
      const { checked, differences } = await this.compare(entity, source, ids, async (rows) =>
        (await this.liveValues(entity, field, rows)).map((value) =>
          value === undefined ? undefined : { value, version: '' },
        ),
      );
      report.checked += checked;
      for (const { id, live, source: value } of differences) {
        // An audit reports numbers: a source that gives something else is the app's to fix.
        if (typeof value !== 'number') {
          throw new CounterConfigurationError(MESSAGES.badSourceValue(entity.name, field.name, id, value.given));
        }
        report.drifted.push({ id, live: live.value, source: value });
      }
    }
    this.instruments.audited(entity, field, report.drifted.length);
    return report;
  }

  /** Reads the source of the rows, then their live values: how many exist, and those that differ. */
  private async compare(
    entity: CountedEntity,
    source: CounterSource,
    ids: Array<string | number>,
    readLive: LiveRead,
  ): Promise<{ checked: number; differences: Difference[] }> {
    const truth = await this.sourceValues(entity, source, ids);
    const live = await readLive(ids);
    let checked = 0;
    const differences: Difference[] = [];
    ids.forEach((id, index) => {
      const value = live[index];
      if (value === undefined) return;
      checked++;
      const given = truth(id);
      if (value.value !== given) differences.push({ id, live: value, source: given });
    });
    return { checked, differences };
  }

  /** The ids given, in batches; else the table's, walked in key order up to `limit` (noting where it stopped). */
  private async *batches(
    entity: CountedEntity,
    { ids, batchSize, after, limit }: ReconcileScope,
    report: Pick<RecountReport, 'cursor'>,
  ): AsyncGenerator<Array<string | number>> {
    if (ids !== undefined) {
      yield* chunks(ids, batchSize);
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

  /** Per id, the counter's live value (rows Redis lacks loaded first); undefined for a row not in the database. */
  private async liveValues(
    entity: CountedEntity,
    field: CounterField,
    ids: ReadonlyArray<string | number>,
  ): Promise<Array<number | undefined>> {
    const values = await this.reader.read(
      ids.map((id) => ({ entity, id: toRowId(entity, id) })),
      false,
    );
    const index = entity.counters.indexOf(field);
    return values.map((row) => row?.[index]);
  }

  /** Live values with their versions, read at once; undefined for a row missing from the database. */
  private async versionedValues(
    entity: CountedEntity,
    field: CounterField,
    ids: ReadonlyArray<string | number>,
  ): Promise<Array<VersionedValue | undefined>> {
    const values = await this.liveValues(entity, field, ids);
    const loaded = ids.filter((_, index) => values[index] !== undefined);
    const versioned = await this.changes.versioned(entity, field, loaded);
    let at = 0;
    // A row that expired since it was loaded has no version to expect: '' is none, so its set finds it changed.
    return values.map((value) => (value === undefined ? undefined : (versioned[at++] ?? { value, version: '' })));
  }

  /**
   * The source's value of each id (0 for an id it leaves out): a safe integer, or the text of a value
   * that is not one.
   */
  private async sourceValues(
    entity: CountedEntity,
    source: CounterSource,
    ids: Array<string | number>,
  ): Promise<(id: string | number) => number | Unusable> {
    const values = new Map<string, number | Unusable>();
    // The source's manager reads the primary: a replica behind it would undo the changes it has not seen.
    const pairs = await onPrimary(this.dataSource, (manager) => source(ids, manager));
    for (const [id, value] of pairs) {
      const number = Number(value);
      const usable = Number.isSafeInteger(number) && (typeof value !== 'string' || value.trim() !== '');
      values.set(
        toRowId(entity, id).text,
        usable ? number : { given: typeof value === 'number' ? value : String(value) },
      );
    }
    return (id) => values.get(toRowId(entity, id).text) ?? 0;
  }
}

function sourceOf(entity: CountedEntity, field: CounterField): CounterSource {
  if (!field.source) throw new CounterConfigurationError(MESSAGES.noSource(entity.name, field.name));
  return field.source;
}
