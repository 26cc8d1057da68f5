import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { databaseTarget } from '../../sample-app/src/config/database.target.js';

describe("the sample app's DATABASE_URL", () => {
  it('names a SQLite file, absolute or relative to the working directory, or a server', () => {
    expect(databaseTarget('sqlite:///tmp/a%20b/judge.sqlite')).toMatchObject({
      kind: 'sqlite',
      file: '/tmp/a b/judge.sqlite',
    });
    expect(databaseTarget('sqlite:data/judge.sqlite')).toMatchObject({
      kind: 'sqlite',
      file: join(process.cwd(), 'data/judge.sqlite'),
    });
    expect(databaseTarget('mysql://root@127.0.0.1:3306/judge')).toMatchObject({ kind: 'mariadb' });
    expect(databaseTarget('postgresql://u:secret@db:5432/judge')).toMatchObject({ kind: 'postgres' });
    // Two databases never share a key prefix; a password does not change it.
    expect(databaseTarget('sqlite:///tmp/one.sqlite').identity).not.toBe(
      databaseTarget('sqlite:///tmp/two.sqlite').identity,
    );
    expect(databaseTarget('postgres://u:a@db/judge').identity).toBe(databaseTarget('postgres://u:b@db/judge').identity);
  });

  it('refuses what it cannot use, saying what it expects', () => {
    const expected = 'expected postgres://…, mysql://…, mariadb://… or sqlite:///path/to/file.sqlite';
    expect(() => databaseTarget('sqlite://judge.sqlite')).toThrow(
      `DATABASE_URL "sqlite://judge.sqlite" names no SQLite file path (${expected}).`,
    );
    expect(() => databaseTarget('mongodb://db/judge')).toThrow(`DATABASE_URL uses "mongodb:"; ${expected}.`);
    expect(() => databaseTarget('judge.sqlite')).toThrow(`DATABASE_URL is not a valid URL (${expected}).`);
  });
});
