import type { CountedEntity, IdRange } from './counted-entity.js';
import { InvalidCounterIdError } from '../exceptions/invalid-counter-id.error.js';
import { loneSurrogateAt } from '../well-formed-text.js';

/** A row id as the module handles it: one canonical string for keys, one value for SQL. */
export interface RowId {
  /** Canonical text: 17 and '17' are the same row. */
  text: string;
  /** The value bound in SQL: a number for integer keys that fit, the text otherwise. */
  sql: string | number;
}

/** Decides whether a string is taken as the id of an integer key: digits without a leading zero ('017' is refused). */
const INTEGER_ID_TEXT = /^-?(0|[1-9]\d*)$/;

/**
 * Decides whether a row's shard goes by its run of 100 ids (`CounterKeys.shardOf`): a sign and digits,
 * leading zeros included. Wider than INTEGER_ID_TEXT because string keys reach it too ('0123', a varchar
 * of digits): narrowing it would move their rows to other shards.
 */
export const RUN_SHARDED_ID_TEXT = /^-?\d+$/;

const UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Validates an id against the entity's primary key type. Throws InvalidCounterIdError. */
export function toRowId(entity: CountedEntity, id: unknown): RowId {
  if (entity.numericId) {
    const text =
      typeof id === 'number' && Number.isSafeInteger(id)
        ? String(id)
        : typeof id === 'bigint'
          ? id.toString()
          : typeof id === 'string' && INTEGER_ID_TEXT.test(id)
            ? id
            : undefined;
    if (text === undefined) throw InvalidCounterIdError.notOfType(entity.name, id, 'integers');
    // A safe integer's own text and value are canonical: '-0' is row 0, as the database sees it.
    const asNumber = Object.is(Number(text), -0) ? 0 : Number(text);
    const safe = Number.isSafeInteger(asNumber);
    // The database would refuse the query (PostgreSQL's 22003) or compare wrapped values: refuse it here.
    if (entity.idRange && !inRange(entity.idRange, safe ? asNumber : BigInt(text))) {
      throw InvalidCounterIdError.outOfRange(entity.name, id, entity.idRange);
    }
    return safe ? { text: String(asNumber), sql: asNumber } : { text, sql: text };
  }
  if (
    (typeof id !== 'string' && typeof id !== 'number') ||
    id === '' ||
    (typeof id === 'number' && !Number.isFinite(id))
  ) {
    throw InvalidCounterIdError.notOfType(entity.name, id, 'non-empty strings');
  }
  if (entity.uuidId) {
    if (!UUID_TEXT.test(String(id))) throw InvalidCounterIdError.notOfType(entity.name, id, 'UUIDs');
    const text = canonicalIdText(entity, id);
    return { text, sql: text };
  }
  const text = String(id);
  checkText(entity, id, text);
  return { text, sql: text };
}

/**
 * The canonical text of an id the database gave back (or a valid UUID): UUIDs lowercased, as the database
 * compares them without regard to case; any other id's own text.
 */
export function canonicalIdText(entity: CountedEntity, id: unknown): string {
  return entity.uuidId ? String(id).toLowerCase() : String(id);
}

/**
 * Refuses a string key that could not reach Redis and the database as sent (a lone surrogate becomes
 * U+FFFD in UTF-8, PostgreSQL refuses NUL) or that its column cannot hold, before any query.
 */
function checkText(entity: CountedEntity, id: string | number, text: string): void {
  const surrogate = loneSurrogateAt(text);
  if (surrogate !== -1) throw InvalidCounterIdError.notText(entity.name, id, 'surrogate', surrogate);
  const nul = text.indexOf('\u0000');
  if (nul !== -1) throw InvalidCounterIdError.notText(entity.name, id, 'nul', nul);
  // Databases count characters, not UTF-16 units; a text no longer in units than the limit fits in any case.
  const max = entity.idMaxLength;
  if (max !== undefined && text.length > max) {
    const characters = [...text].length;
    if (characters > max) throw InvalidCounterIdError.tooLong(entity.name, id, max, characters);
  }
}

/** Numbers and bigints compare exactly with each other. */
function inRange(range: IdRange, id: number | bigint): boolean {
  return id >= range.min && id <= range.max;
}
