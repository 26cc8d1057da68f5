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
};
