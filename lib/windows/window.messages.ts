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
  hourEdgeHint: () => 'Start the window at midnight UTC to count it in days, or keep hours longer.',
  keepLongerHint: (granularity: string) => `Keep ${granularity}s longer, or ask for a shorter window.`,
};
