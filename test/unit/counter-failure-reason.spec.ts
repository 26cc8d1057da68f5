import { describe, expect, it } from 'vitest';
import { failureReasonOf } from '../../lib/exceptions/counter-failure-reason.js';
import {
  CounterDatabaseUnavailableError,
  CounterReplicationLagError,
  CounterStoreUnavailableError,
  type CounterFailureReason,
} from '../../lib/index.js';

/** An error as TypeORM throws it: the driver's error in `driverError`. */
const queryFailed = (driverError: object) =>
  Object.assign(new Error('the database said things'), { name: 'QueryFailedError', driverError });

// What status() and the health indicator show of a failure: its kind, from each driver's codes, and
// never its words. The integration specs (status, health) meet the real errors; this pins the table.
describe('the reason of a failure', () => {
  const cases: Array<[string, unknown, CounterFailureReason]> = [
    ['Redis unreachable', new CounterStoreUnavailableError('…'), 'redis-unavailable'],
    ['a database timeout', new CounterDatabaseUnavailableError('…'), 'database-unavailable'],
    ['a claim not replicated', new CounterReplicationLagError('…'), 'replication-lag'],
    ['a PostgreSQL CHECK', queryFailed({ code: '23514' }), 'constraint-violation'],
    ['a PostgreSQL value out of range', queryFailed({ code: '22003' }), 'invalid-data'],
    ['a PostgreSQL deadlock', queryFailed({ code: '40P01' }), 'lock-conflict'],
    ['PostgreSQL shutting down', queryFailed({ code: '57P01' }), 'database-unavailable'],
    ['too many PostgreSQL connections', queryFailed({ code: '53300' }), 'database-unavailable'],
    [
      'a MariaDB CHECK',
      queryFailed({ errno: 4025, sqlState: '23000', code: 'ER_CONSTRAINT_FAILED' }),
      'constraint-violation',
    ],
    [
      'a MariaDB lock wait timeout',
      queryFailed({ errno: 1205, sqlState: 'HY000', code: 'ER_LOCK_WAIT_TIMEOUT' }),
      'lock-conflict',
    ],
    ['a MariaDB connection lost', queryFailed({ code: 'PROTOCOL_CONNECTION_LOST' }), 'database-unavailable'],
    ['an SQLite trigger', queryFailed({ code: 'SQLITE_CONSTRAINT_TRIGGER' }), 'constraint-violation'],
    ['a busy SQLite', queryFailed({ code: 'SQLITE_BUSY' }), 'lock-conflict'],
    [
      'a refused connection',
      Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
      'database-unavailable',
    ],
    [
      'a released query runner',
      Object.assign(new Error('…'), { name: 'QueryRunnerAlreadyReleasedError' }),
      'database-unavailable',
    ],
    [
      'a closed PostgreSQL connection',
      queryFailed(new Error('Connection terminated unexpectedly')),
      'database-unavailable',
    ],
    ['anything else', new Error('database gone'), 'unknown'],
    ['a thrown string', 'oops', 'unknown'],
    ['nothing', undefined, 'unknown'],
  ];
  it.each(cases)('%s', (_, error, reason) => {
    expect(failureReasonOf(error)).toBe(reason);
  });
});
