import { MESSAGES } from '../counter.messages.js';
import type { CountedEntity } from '../model/counted-entity.js';
import { InvalidCounterIdError } from '../exceptions/invalid-counter-id.error.js';
import { InvalidCounterOptionError } from '../exceptions/invalid-counter-option.error.js';
import type { AuditOptions, RecountOptions } from '../interfaces/reconcile.interface.js';
import { toRowId } from '../model/row-id.js';

/** Rows read from the source and compared per step, unless the caller says otherwise. */
export const DEFAULT_BATCH_SIZE = 1000;

/** The rows a recount or an audit compares, its options validated; ids as the database takes them. */
export interface ReconcileScope {
  ids?: Array<string | number>;
  sample?: number;
  batchSize: number;
  after?: string | number;
  limit: number;
}

/**
 * `recount`'s options, validated (G6: before any query or source call).
 * @throws InvalidCounterOptionError, InvalidCounterIdError
 */
export function recountScope(entity: CountedEntity, options: RecountOptions = {}): ReconcileScope {
  const check = new OptionCheck('recount', entity);
  return {
    ids: check.ids(options.ids),
    batchSize: check.count('batchSize', options.batchSize) ?? DEFAULT_BATCH_SIZE,
    after: check.after(options.after),
    limit: check.count('limit', options.limit) ?? Number.POSITIVE_INFINITY,
  };
}

/**
 * `audit`'s options, validated (G6: before any query or source call).
 * @throws InvalidCounterOptionError, InvalidCounterIdError
 */
export function auditScope(entity: CountedEntity, options: AuditOptions = {}): ReconcileScope {
  const check = new OptionCheck('audit', entity);
  return {
    ids: check.ids(options.ids),
    sample: check.count('sample', options.sample),
    batchSize: check.count('batchSize', options.batchSize) ?? DEFAULT_BATCH_SIZE,
    limit: Number.POSITIVE_INFINITY,
  };
}

class OptionCheck {
  constructor(
    private readonly method: 'recount' | 'audit',
    private readonly entity: CountedEntity,
  ) {}

  /** A positive safe integer, or undefined when not given. */
  count(option: string, value: unknown): number | undefined {
    if (value === undefined) return undefined;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
      throw this.refused(option, value, 'a positive safe integer');
    }
    return value;
  }

  /** Each id validated as `increment` validates it (the same error), as the database takes it. */
  ids(value: unknown): Array<string | number> | undefined {
    if (value === undefined) return undefined;
    // A string is iterable: "12" would be rows 1 and 2.
    if (!Array.isArray(value)) throw this.refused('ids', value, 'an array of ids');
    return value.map((id: unknown) => toRowId(this.entity, id).sql);
  }

  after(value: unknown): string | number | undefined {
    if (value === undefined) return undefined;
    try {
      return toRowId(this.entity, value).sql;
    } catch (error) {
      if (!(error instanceof InvalidCounterIdError)) throw error;
      const message = MESSAGES.invalidReconcileAfter(this.method, this.entity.name, error.message);
      throw new InvalidCounterOptionError('after', message);
    }
  }

  private refused(option: string, value: unknown, expected: string): InvalidCounterOptionError {
    return new InvalidCounterOptionError(option, MESSAGES.invalidReconcileOption(this.method, option, value, expected));
  }
}
