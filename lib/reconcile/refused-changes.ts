import { Inject, Injectable, Logger } from '@nestjs/common';
import { COUNTER_OPTIONS } from '../counter.constants.js';
import { MESSAGES } from '../counter.messages.js';
import { CounterRegistry } from '../counter.registry.js';
import type { CountedEntity, CounterField } from '../model/counted-entity.js';
import { CounterStoreUnavailableError } from '../exceptions/counter-store-unavailable.error.js';
import type { EntityClass } from '../interfaces/entity-class.interface.js';
import type { ResolvedCounterOptions } from '../interfaces/resolved-counter-options.interface.js';

/** Most rows whose refused changes an instance remembers; beyond, their counters are recounted whole. */
export const MAX_REFUSED_ROWS = 10_000;

/** The rows of one counter whose changes Redis could not take. */
export interface RefusedRows {
  entity: CountedEntity;
  field: CounterField;
  ids: Array<string | number>;
}

/**
 * With `repairOnDataLoss`: the rows of counters with a source whose changes were refused because Redis
 * could not be reached (the app's row was written, its count was not), kept in memory, bounded, until
 * DataLossRepairer recounts them from the source once Redis is back.
 */
@Injectable()
export class RefusedChanges {
  private readonly logger = new Logger('CounterRepair');
  /** Per counter, its rows by id text. */
  private readonly rows = new Map<CounterField, { entity: CountedEntity; ids: Map<string, string | number> }>();
  private size = 0;
  /** Counters that had more rows refused than the bound: recounted whole. */
  private readonly whole = new Map<CounterField, CountedEntity>();
  /** When the rows may be recounted (epoch ms): Redis has then answered for a flush lease (see `unreachable`). */
  private notBefore = 0;

  constructor(
    private readonly registry: CounterRegistry,
    @Inject(COUNTER_OPTIONS) private readonly options: ResolvedCounterOptions,
  ) {}

  /** Remembers the row of a change that failed, if Redis could not be reached and its counter has a source. */
  remember(target: EntityClass, id: string | number, counter: string, error: unknown): void {
    if (!this.options.repairOnDataLoss || !(error instanceof CounterStoreUnavailableError)) return;
    // The change got as far as Redis, so its entity and counter are known.
    const entity = this.registry.get(target);
    const field = this.registry.counter(entity, counter);
    if (!field.source) return;
    this.unreachable();
    if (this.whole.has(field)) return;
    const rows = this.rows.get(field) ?? { entity, ids: new Map<string, string | number>() };
    this.rows.set(field, rows);
    if (rows.ids.has(String(id))) return;
    if (this.size === MAX_REFUSED_ROWS) return this.overflow(entity, field);
    rows.ids.set(String(id), id);
    this.size++;
  }

  /**
   * Redis could not be reached: rows are recounted no earlier than a flush lease after that, so that a
   * loss of its data, if it was one, is detected (and its flushes in flight have landed) first.
   */
  unreachable(): void {
    this.notBefore = Date.now() + this.options.flushLeaseMs;
  }

  get empty(): boolean {
    return this.size === 0 && this.whole.size === 0;
  }

  /** The rows and whole counters to recount now; none while Redis may still be unreachable. */
  due(): { rows: RefusedRows[]; whole: Array<{ entity: CountedEntity; field: CounterField }> } {
    if (this.empty || Date.now() < this.notBefore) return { rows: [], whole: [] };
    return {
      rows: [...this.rows].map(([field, { entity, ids }]) => ({ entity, field, ids: [...ids.values()] })),
      whole: [...this.whole].map(([field, entity]) => ({ entity, field })),
    };
  }

  /** Rows recounted from the source: forgotten. */
  recounted(field: CounterField, ids: Array<string | number>): void {
    const rows = this.rows.get(field);
    if (!rows) return;
    for (const id of ids) if (rows.ids.delete(String(id))) this.size--;
    if (rows.ids.size === 0) this.rows.delete(field);
  }

  /** A counter's whole walk was queued: its rows need no recount of their own. */
  queuedWhole(field: CounterField): void {
    this.whole.delete(field);
  }

  private overflow(entity: CountedEntity, field: CounterField): void {
    if (this.whole.size === 0) this.logger.warn(MESSAGES.refusedRowsOverflow(MAX_REFUSED_ROWS));
    this.whole.set(field, entity);
    this.recounted(field, [...(this.rows.get(field)?.ids.values() ?? [])]);
  }
}
