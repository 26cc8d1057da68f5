import { driverErrorOf } from '../sql/counter-dialect.js';
import { errorKindOf, type CounterFailureReason } from './counter-error-kind.js';

/** What `failureReasonOf` gives, named where its callers import it from. */
export type { CounterFailureReason } from './counter-error-kind.js';

/** SQLSTATE classes (PostgreSQL's `code`, mysql2's `sqlState`), by their first two characters. */
const SQLSTATE_CLASSES: Record<string, CounterFailureReason> = {
  '08': 'database-unavailable', // connection exception
  '22': 'invalid-data', // data exception
  '23': 'constraint-violation', // integrity constraint violation
  '40': 'lock-conflict', // transaction rollback: serialization failure, deadlock
  '53': 'database-unavailable', // insufficient resources: too many connections, disk full
  '57': 'database-unavailable', // operator intervention: shutdown, sessions terminated
};

/** Driver codes that are no SQLSTATE: the network's (Node), mysql2's own, SQLite's result codes (by prefix). */
const DRIVER_CODES: Array<[string, CounterFailureReason]> = [
  ['SQLITE_CONSTRAINT', 'constraint-violation'],
  ['SQLITE_MISMATCH', 'invalid-data'],
  ['SQLITE_TOOBIG', 'invalid-data'],
  ['SQLITE_BUSY', 'lock-conflict'],
  ['SQLITE_LOCKED', 'lock-conflict'],
  ['SQLITE_IOERR', 'database-unavailable'],
  ['SQLITE_CANTOPEN', 'database-unavailable'],
  ['SQLITE_FULL', 'database-unavailable'],
  ['SQLITE_READONLY', 'database-unavailable'],
  ['ECONNREFUSED', 'database-unavailable'],
  ['ECONNRESET', 'database-unavailable'],
  ['ETIMEDOUT', 'database-unavailable'],
  ['EPIPE', 'database-unavailable'],
  ['EHOSTUNREACH', 'database-unavailable'],
  ['ENETUNREACH', 'database-unavailable'],
  ['ENOTFOUND', 'database-unavailable'],
  ['EAI_AGAIN', 'database-unavailable'],
  ['PROTOCOL_CONNECTION_LOST', 'database-unavailable'],
  ['PROTOCOL_SEQUENCE_TIMEOUT', 'database-unavailable'],
  // MySQL's lock wait timeout has SQLSTATE HY000, the class of every error without one of its own.
  ['ER_LOCK_WAIT_TIMEOUT', 'lock-conflict'],
];

/**
 * Errors without a code that mean the connection was gone: TypeORM's, whose query runner lost it, and
 * node-postgres's, whose server closed it.
 */
const CONNECTION_LOST = [/^QueryRunnerAlreadyReleased/, /^ConnectionIsNotSet/, /^Connection terminated/];

/**
 * Which kind of failure `error` was (see CounterFailureReason): the module's own errors by their kind,
 * the others by their driver's codes, every database's in one table.
 */
export function failureReasonOf(error: unknown): CounterFailureReason {
  const own = errorKindOf(error).failure;
  if (own) return own;
  const driver = driverErrorOf(error);
  const code = typeof driver.code === 'string' ? driver.code : '';
  const sqlState = driver.sqlState ?? (/^[0-9A-Z]{5}$/.test(code) ? code : undefined);
  const byClass = sqlState === undefined ? undefined : SQLSTATE_CLASSES[sqlState.slice(0, 2)];
  if (byClass) return byClass;
  const byCode = DRIVER_CODES.find(([prefix]) => code.startsWith(prefix));
  if (byCode) return byCode[1];
  return [error, driver].some(connectionLost) ? 'database-unavailable' : 'unknown';
}

function connectionLost(error: unknown): boolean {
  const { name, message } = (error ?? {}) as { name?: unknown; message?: unknown };
  return CONNECTION_LOST.some((pattern) => pattern.test(String(name)) || pattern.test(String(message)));
}
