import { describe, expect, it } from 'vitest';
import { isMariaDbWithValues } from '../../lib/sql/mysql.dialect.js';

// The batch UPDATE's derived table is a VALUES list on MariaDB 10.3.3 and later, told from the version
// the server reports; any other server gets the derived table of SELECTs every MySQL-family server takes.
describe('which MySQL-family servers get the VALUES list', () => {
  it.each([
    ['10.11.19-MariaDB-0+deb12u1', true],
    ['11.4.2-MariaDB', true],
    ['10.3.3-MariaDB-log', true],
    ['10.3.2-MariaDB', false],
    ['10.2.44-MariaDB', false],
    ['8.0.36', false],
    ['8.4.3-standard', false],
    // The prefix older MariaDB servers gave themselves for MySQL clients: read as 5.5.5, the safe form.
    ['5.5.5-10.11.6-MariaDB', false],
    ['', false],
  ])('%s: %s', (version, expected) => {
    expect(isMariaDbWithValues(version)).toBe(expected);
  });
});
