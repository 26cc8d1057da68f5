import { describe, expect, it } from 'vitest';
import type { CountedEntity } from '../../lib/model/counted-entity.js';
import { InvalidCounterIdError } from '../../lib/index.js';
import { toRowId } from '../../lib/model/row-id.js';

const entity = (numericId: boolean, uuidId = false, idMaxLength?: number) =>
  ({ name: 'Article', numericId, uuidId, idMaxLength }) as CountedEntity;

// One row, one canonical text: the text names the row in Redis, so two spellings of one database row
// must give the same text (G2: every read includes every change of the row).
describe('a row id', () => {
  it('is one canonical text for every spelling of an integer key', () => {
    const rows = [17, '17', 17n, -0, '-0', 0, '0', '-12'].map((id) => toRowId(entity(true), id));
    expect(rows).toEqual([
      { text: '17', sql: 17 },
      { text: '17', sql: 17 },
      { text: '17', sql: 17 },
      { text: '0', sql: 0 },
      { text: '0', sql: 0 },
      { text: '0', sql: 0 },
      { text: '0', sql: 0 },
      { text: '-12', sql: -12 },
    ]);
  });

  it('keeps an integer key beyond the safe integers as its text', () => {
    expect(toRowId(entity(true), '12345678901234567890')).toEqual({
      text: '12345678901234567890',
      sql: '12345678901234567890',
    });
    expect(toRowId(entity(true), 12345678901234567890n)).toEqual({
      text: '12345678901234567890',
      sql: '12345678901234567890',
    });
  });

  it('refuses what is not an integer for an integer key', () => {
    for (const id of ['007', '1.5', '1e3', ' 1', '', 'abc', 1.5, Number.NaN, null, undefined]) {
      expect(() => toRowId(entity(true), id)).toThrow(InvalidCounterIdError);
    }
  });

  it('takes UUIDs in either case as one row, and string keys as they are', () => {
    const upper = toRowId(entity(false, true), '2A1B3C4D-0000-4000-8000-000000000001');
    expect(upper).toEqual({
      text: '2a1b3c4d-0000-4000-8000-000000000001',
      sql: '2a1b3c4d-0000-4000-8000-000000000001',
    });
    expect(() => toRowId(entity(false, true), 'not-a-uuid')).toThrow(InvalidCounterIdError);
    expect(toRowId(entity(false), 'User:{1}')).toEqual({ text: 'User:{1}', sql: 'User:{1}' });
    expect(() => toRowId(entity(false), '')).toThrow(InvalidCounterIdError);
  });

  it('refuses string keys that are not well-formed Unicode or hold NUL: they would not reach Redis or SQL as sent', () => {
    for (const id of ['\uD800', 'a\uDBFFb', '\uDC00', '\uDE00\uD83D', '\u0000', 'a\u0000']) {
      expect(() => toRowId(entity(false), id)).toThrow(InvalidCounterIdError);
    }
    // A surrogate pair is one character; other control characters are text like any other.
    expect(toRowId(entity(false), 'a\uD83D\uDE00')).toEqual({ text: 'a\uD83D\uDE00', sql: 'a\uD83D\uDE00' });
    expect(toRowId(entity(false), '\u0001\t\u007f')).toEqual({ text: '\u0001\t\u007f', sql: '\u0001\t\u007f' });
  });

  it('refuses string keys longer than the declared length, counted in characters as databases do', () => {
    expect(toRowId(entity(false, false, 3), 'abc')).toEqual({ text: 'abc', sql: 'abc' });
    expect(toRowId(entity(false, false, 3), '😀😀😀').text).toBe('😀😀😀');
    expect(() => toRowId(entity(false, false, 3), 'abcd')).toThrow(
      'Article ids must be at most 3 characters, the length of its primary column; got a string of 4 characters.',
    );
    expect(() => toRowId(entity(false, false, 3), '😀😀😀😀')).toThrow('got a string of 4 characters');
    expect(toRowId(entity(false), 'x'.repeat(10_000)).text).toHaveLength(10_000);
  });
});
