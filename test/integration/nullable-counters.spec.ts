import { beforeAll, describe, it } from 'vitest';
import { Tally } from '../fixtures/entities.js';
import type { CounterApp } from '../support/counter-app.js';
import { useCounterSuite } from '../support/counter-suite.js';
import { DATABASES } from '../../support/databases.js';
import { countOnNullableColumn } from '../support/tallies.js';

// A nullable counter column may hold NULL: a read gives it as 0, and a flush adds to it as to 0, whether
// the row was loaded into Redis before its change or by it.
describe.each(DATABASES)('a nullable counter column on %s', (database) => {
  const suite = useCounterSuite(database, 'nullable', { shards: 2 }, 1, [Tally]);
  let counter: CounterApp;
  beforeAll(() => void (counter = suite.counter));

  it('reads NULL as 0 and adds the delta to it as to 0, beside a NOT NULL counter', async () => {
    await countOnNullableColumn(counter);
  });
});
