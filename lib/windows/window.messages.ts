/** The messages of counts over time (windowed counters), in the voice of counter.messages.ts. */
export const WINDOW_MESSAGES = {
  badWindows: (entity: string, counter: string, windows: unknown) =>
    `${entity}.${counter} declares windows ${JSON.stringify(windows)}; give an array of 'hour' and/or 'day', ` +
    `each once: @Counted('${counter}', { windows: ['hour', 'day'] }).`,
  windowedNameTooLong: (entity: string, counter: string, most: number) =>
    `${entity}.${counter} declares windows, so its name goes into CounterBucket's "counter" column: it may ` +
    `have at most ${most} characters.`,
  bucketsMissing: (entity: string, counter: string) =>
    `${entity}.${counter} declares windows, but the counted data source does not include CounterBucket. Add ` +
    `it to the entities of your TypeORM data source, and create its table (a migration, or synchronize: true).`,
  rollingWithoutWindows: (entity: string, counter: string) =>
    `${entity}.${counter} declares rolling windows but no windows: a rolling window sums the counter's ` +
    `buckets, so declare them too: @Counted('${counter}', { windows: ['hour', 'day'], rolling: ['24h'] }).`,
  badRolling: (entity: string, counter: string, rolling: unknown, finest: string) =>
    `${entity}.${counter} declares rolling windows ${JSON.stringify(rolling)}; give an array of distinct ` +
    `lengths, each '<n>h' or '<n>d' and a whole number of ${finest}s (its finest granularity): ` +
    `@Counted('${counter}', { windows: ['hour', 'day'], rolling: ['24h', '7d'] }).`,
  rollingTablesMissing: (entity: string, counter: string) =>
    `${entity}.${counter} declares rolling windows, but the counted data source does not include ` +
    `CounterRollingWindow and CounterRollingSum. Add both to the entities of your TypeORM data source, and ` +
    `create their tables (a migration, or synchronize: true).`,
  rollingBeyondRetention: (entity: string, counter: string, window: string, granularity: string, retentionMs: number) =>
    `${entity}.${counter} declares the rolling window '${window}', which counts ${granularity} buckets ` +
    `further back than bucketRetentionMs.${granularity} (${retentionMs} ms) keeps them. Keep ` +
    `${granularity}s longer (bucketRetentionMs.${granularity}), or declare a shorter window.`,
  rollingCountIsColumn: (entity: string, property: string) =>
    `${entity}.${property} is a column, so @RollingCount() cannot fill it: the overlay writes a window's ` +
    `count into a property the database does not load. Remove its @Column(), or put @RollingCount() on ` +
    `another property.`,
  rollingCountTwice: (entity: string, property: string) =>
    `${entity}.${property} carries @RollingCount() more than once; keep one per property.`,
  rollingCountUnknownCounter: (entity: string, property: string, counter: string, known: readonly string[]) =>
    `${entity}.${property} is a @RollingCount() of "${counter}", which is not a counter of ${entity}. Name one ` +
    `of its counters${known.length > 0 ? ` (${known.join(', ')})` : ''}, declared with @Counted().`,
  rollingCountNotWindowed: (entity: string, property: string, counter: string) =>
    `${entity}.${property} is a @RollingCount() of ${counter}, which keeps no counts over time: declare ` +
    `@Counted('${counter}', { windows: ['hour', 'day'], rolling: ['24h'] }).`,
  rollingCountBadWindow: (entity: string, property: string, window: unknown, finest: string) =>
    `${entity}.${property} is a @RollingCount() over ${JSON.stringify(window)}; give a length '<n>h' or ` +
    `'<n>d', a whole number of ${finest}s (its counter's finest granularity): @RollingCount('view_count', '24h').`,
  rollingCountBeyondRetention: (
    entity: string,
    property: string,
    window: string,
    granularity: string,
    retentionMs: number,
  ) =>
    `${entity}.${property} is a @RollingCount() over '${window}', which counts ${granularity} buckets further ` +
    `back than bucketRetentionMs.${granularity} (${retentionMs} ms) keeps them. Keep ${granularity}s longer ` +
    `(bucketRetentionMs.${granularity}), or count over a shorter window.`,
  rollingCountNotDeclared: (entity: string, property: string, counter: string, window: string, declared: string[]) =>
    `${entity}.${property} is a @RollingCount() over '${window}', which is not one of ${counter}'s rolling ` +
    `windows (${declared.length > 0 ? declared.map((name) => `'${name}'`).join(', ') : 'none'}): the overlay ` +
    `reads the sum the flush keeps per row and window. Add it: @Counted('${counter}', { windows: [...], ` +
    `rolling: [${[...declared, window].map((name) => `'${name}'`).join(', ')}] }).`,
  badLimit: (limit: unknown, most: number) =>
    `The "limit" of top must be a whole number from 1 to ${most}; got ${String(limit)}.`,
  bucketPruneFailed: (reason: string) =>
    `Pruning the buckets of windowed counters failed (${reason}); a later flush tries again.`,
  rollingAdvanceFailed: (reason: string) =>
    `Moving the rolling windows of counters on failed (${reason}); a later flush tries again, and top moves ` +
    `a window it reads first.`,
  notWindowed: (entity: string, counter: string) =>
    `${entity}.${counter} keeps no counts over time: declare @Counted('${counter}', { windows: ['hour', ` +
    `'day'] }) to ask for windows of it.`,
  notADate: (option: string, value: unknown) =>
    `The window's "${option}" must be a Date or a time in ms; got ` +
    `${value instanceof Date ? 'an invalid Date' : String(value)}.`,
  emptyWindow: (since: number, until: number) =>
    `The window's "until" (${new Date(until).toISOString()}) must be after its "since" ` +
    `(${new Date(since).toISOString()}).`,
  granularityNotKept: (entity: string, counter: string, granularity: unknown, kept: readonly string[]) =>
    `${entity}.${counter} keeps buckets of ${kept.join(' and ')}; got the granularity ${JSON.stringify(granularity)}.`,
  beyondRetention: (granularity: string, retentionMs: number, keptSince: Date, hint: string) =>
    `The window reaches back past the ${granularity} buckets kept: bucketRetentionMs.${granularity} is ` +
    `${retentionMs} ms, so they start at ${keptSince.toISOString()}. ${hint}`,
  windowContended: (entity: string, id: string) =>
    `The window of ${entity} ${id} could not be read: flushes of its shard kept moving its changes. Retrying ` +
    `is safe.`,
  rollingCountsContended: (entity: string) =>
    `The rolling counts of ${entity} could not be read: flushes of their shards kept moving their changes.`,
  rollingCountsFailed: (reason: string) =>
    `Overlaying rolling counts failed (${reason}); they keep the values they were loaded with.`,
  topContended: (entity: string, counter: string) =>
    `The top rows of ${entity}.${counter} could not be read: flushes kept moving its changes. Retrying is safe.`,
  hourEdgeHint: () => 'Start the window at midnight UTC to count it in days, or keep hours longer.',
  keepLongerHint: (granularity: string) => `Keep ${granularity}s longer, or ask for a shorter window.`,
  rowIdCollation: (entity: string, theirs: string, table: string, column: string, ours: string, ourEntity: string) => {
    const charset = ours.split('_')[0];
    return (
      `${entity}'s key compares as ${theirs}, but ${table}.${column} (${ourEntity}) as ${ours}, which may take ` +
      `two of its ids for one and add their buckets or sums together. Make the column binary: ALTER TABLE ` +
      `${table} MODIFY ${column} VARCHAR(255) CHARACTER SET ${charset} COLLATE ${charset}_bin NOT NULL.`
    );
  },
  rowIdCollationUnread: (reason: string) =>
    `Could not read the collations of the counter tables' row_id columns at bootstrap (${reason}); ids that ` +
    `differ only in case may share buckets on MySQL/MariaDB (docs/GUIDE.md, "Counts over time").`,
};
