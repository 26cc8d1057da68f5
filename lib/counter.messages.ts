const lostSince = (lastFlush: Date | null): string =>
  lastFlush
    ? `after the last flush that finished before the loss (${lastFlush.toISOString()})`
    : 'since this instance started';

/**
 * What an outage makes unreachable, as a message names it: Redis, the database, or the confirmations a
 * claim waits for before its batch is written (its replicas' WAIT, the AOFs' WAITAOF).
 */
export type Dependency = 'Redis' | 'database' | 'claim confirmations';

/** The line an outage begins with, per dependency. */
const OUTAGE_BEGAN: Record<Dependency, (reason: string) => string> = {
  Redis: (reason) =>
    `Redis became unreachable (${reason}). Counter changes fail and reads fall back to the database until it ` +
    `returns; flushes retry with backoff, logged at debug level.`,
  database: (reason) =>
    `The database became unreachable (${reason}). Counter changes wait in Redis and reads come from there; ` +
    `flushes retry with backoff, logged at debug level.`,
  'claim confirmations': (reason) =>
    `Redis stopped confirming claims in time: ${reason} Changes and reads go on; flushes retry with backoff, ` +
    `logged at debug level.`,
};

/** `count` things, in the singular or the plural. */
const counted = (count: number, one: string, many = `${one}s`): string => `${count} ${count === 1 ? one : many}`;

/** Since when what this instance accepted is counted: its last flush that went well, if one did. */
const sinceFlush = (flushed: boolean): string => (flushed ? 'since its last flush' : 'since it started');

/** Longest id a message quotes; a longer one is told by its length, so a message stays a sentence. */
const MAX_QUOTED_LENGTH = 100;

/** An id as a message shows it: a string quoted with its control characters escaped, or its length. */
const quoted = (id: unknown): string =>
  typeof id !== 'string'
    ? String(id)
    : id.length > MAX_QUOTED_LENGTH
      ? `a string of ${id.length} characters`
      : JSON.stringify(id);

export const MESSAGES = {
  unknownEntity: (entity: string) =>
    `${entity} has no counters: decorate a numeric column with @Counted() and list the entity in ` +
    `the TypeORM data source the CounterModule uses.`,
  unknownCounter: (entity: string, counter: string, known: readonly string[]) =>
    `${entity} has no counter named "${counter}". Its counters are: ${known.join(', ')}.`,
  invalidDelta: (delta: unknown) =>
    `A counter can only change by a safe integer (between -(2^53-1) and 2^53-1); got ${String(delta)}.`,
  invalidValue: (value: unknown) =>
    `A counter can only be set to a safe integer (between -(2^53-1) and 2^53-1); got ${String(value)}.`,
  invalidIdempotencyKey: (key: unknown, maxLength: number) =>
    `An idempotency key must be a non-empty string of at most ${maxLength} characters; got ` +
    `${typeof key === 'string' ? `a string of ${key.length} characters` : typeof key}. Use one key per change, ` +
    `e.g. a UUID made when the change is first attempted and reused for its retries.`,
  idempotencyKeyNotUnicode: (position: number) =>
    `An idempotency key must be well-formed Unicode: it holds a lone surrogate (half of a UTF-16 character) at ` +
    `index ${position}, which Redis would store as U+FFFD, so other keys would collide with it. Make keys of ` +
    `whole characters, e.g. a UUID made when the change is first attempted and reused for its retries.`,
  invalidId: (entity: string, id: unknown, expected: string) => `${entity} ids must be ${expected}; got ${quoted(id)}.`,
  idNotText: (entity: string, flaw: 'surrogate' | 'nul', index: number) =>
    `${entity} ids must be well-formed Unicode without NUL characters; got a string with ` +
    `${flaw === 'surrogate' ? 'a lone surrogate (half of a UTF-16 character)' : 'a NUL character (U+0000)'} at ` +
    `index ${index}.`,
  idTooLong: (entity: string, maxLength: number, length: number) =>
    `${entity} ids must be at most ${maxLength} characters, the length of its primary column; got a string of ` +
    `${length} characters.`,
  badSource: (entity: string, counter: string) =>
    `${entity}.${counter} declares a source that is not a function: give @Counted() { source: (ids, manager) => … }.`,
  noSource: (entity: string, counter: string) =>
    `${entity}.${counter} declares no source, so it cannot be recounted or audited: give it one with ` +
    `@Counted('${counter}', { source: (ids, manager) => … }).`,
  badSourceValue: (entity: string, counter: string, id: unknown, value: unknown) =>
    `The source of ${entity}.${counter} gave ${typeof value === 'string' ? `"${value}"` : String(value)} for id ` +
    `${String(id)}; a source must give safe integers.`,
  invalidReconcileOption: (method: string, option: string, value: unknown, expected: string) =>
    `CounterService.${method}() option "${option}" must be ${expected}; got ` +
    `${typeof value === 'string' ? `"${value}"` : String(value)}.`,
  invalidReconcileAfter: (method: string, entity: string, reason: string) =>
    `CounterService.${method}() option "after" must be a ${entity} id: ${reason}`,
  recountProgress: (entity: string, counter: string, checked: number, corrected: number, cursor: unknown) =>
    `Recounting ${entity}.${counter}: ${checked} rows checked, ${corrected} corrected; ` +
    `resume after id ${String(cursor)}.`,
  idOutOfRange: (entity: string, id: unknown, min: bigint, max: bigint) =>
    `${entity} ids must be integers in [${min}, ${max}], the range of its primary column's type; got ` +
    `${quoted(id)}.`,
  httpUnavailable: (status: number) =>
    status === 503
      ? 'Counters are unavailable for a moment (Redis or the database cannot be reached); retry later.'
      : 'Internal server error',
  idRefusedByDatabase: (entity: string, reason: string) =>
    `The database refused the ${entity} ids asked for (${reason}): the ids do not fit its primary column.`,
  outOfRange: (entity: string, counter: string, current: number, delta: number, min: number, max: number) =>
    `${entity}.${counter} is ${current}; changing it by ${delta} would leave its allowed range [${min}, ${max}], ` +
    `so nothing was changed.`,
  rowNotFound: (entity: string, id: string) =>
    `${entity} with id ${id} does not exist in the database, so its counters cannot be read or changed.`,
  databaseValueUnsafe: (entity: string, counter: string, id: string, value: unknown) =>
    `${entity}.${counter} of row ${id} holds ${String(value)} in the database, which is not a safe integer; ` +
    `counters must stay within ±(2^53-1).`,
  storeUnavailable: (reason: string, sent: boolean) =>
    sent
      ? `Redis did not answer (${reason}); the command may or may not have been applied. Retry once Redis is reachable.`
      : `Redis is not available (${reason}); nothing was sent to it. Retry once Redis is reachable.`,
  evictionUnsafe: (servers: Array<{ server: string; policy: string }>) =>
    `Redis can evict the keys that hold unflushed counter changes: maxmemory-policy is ` +
    `${servers.map(({ server, policy }) => `${policy} on ${server}`).join(', ')}. Set maxmemory-policy noeviction ` +
    `(or a volatile-* policy: the module puts a TTL only on keys it can lose safely), or accept losing changes ` +
    `to eviction with the CounterModule option acceptLossOnEviction: true.`,
  durabilityUnsupported: (problems: string[]) =>
    `CounterModule option durability: 'fsync' needs every Redis master to have a WAITAOF that waits for the ` +
    `fsync (Redis 7.2+ or Valkey, without redis/redis#13793's bug) and its AOF on (appendonly yes, appendfsync ` +
    `everysec); ${problems.join(', ')} cannot. Turn the AOF on and upgrade Redis where needed, or leave ` +
    `durability out (changes then resolve before their fsync).`,
  changeNotFsynced: (reason: string) =>
    `A counter change was applied in Redis but not confirmed fsynced to its AOF (${reason}); it may be lost if ` +
    `Redis crashes now. Retry it with its idempotency key, or check that Redis and its disk keep up.`,
  evictionUnsafeLate: (problem: string) =>
    `${problem} (Checked when Redis was reached after the application started; it keeps running, and changes ` +
    `can be lost until this is fixed.)`,
  evictionPolicyUnreadable: (reason: string) =>
    `Could not read Redis's maxmemory-policy (${reason}), so the counter module cannot check that Redis never ` +
    `evicts unflushed changes: allow INFO to the module's Redis user, and use maxmemory-policy noeviction or ` +
    `volatile-*.`,
  storeOutOfMemory: (reason: string) =>
    `Redis is out of memory and refused the command (${reason}); nothing was applied. Free memory in Redis or ` +
    `raise its maxmemory, then retry.`,
  seedContended: (entity: string, id: string) =>
    `Could not load the counters of ${entity} ${id} into Redis: flushes kept changing the row while it was read. ` +
    `Retry the call.`,
  notNumericColumn: (entity: string, property: string, type: string) =>
    `${entity}.${property} is decorated with @Counted() but its column type is "${type}". Counters need an ` +
    `integer column: use @Column('int') or @Column('bigint').`,
  notAColumn: (entity: string, property: string) =>
    `${entity}.${property} is decorated with @Counted() but is not a column. Add @Column('int') (or another ` +
    `integer type) to it.`,
  badPrimaryKey: (entity: string, count: number) =>
    `${entity} has ${count === 0 ? 'no primary key' : `a composite primary key of ${count} columns`}; counted ` +
    `entities need exactly one primary column.`,
  duplicateCounter: (entity: string, counter: string) =>
    `${entity} declares the counter "${counter}" twice. Give each @Counted() property its own name.`,
  badCounterName: (entity: string, counter: string) =>
    `${entity} has a counter named "${counter}"; counter names may use letters, digits, "_" and "-" only.`,
  badBounds: (entity: string, counter: string) =>
    `${entity}.${counter} has @Counted() bounds that are not safe integers with min <= max, or that its column ` +
    `type cannot hold.`,
  ledgerMissing: () =>
    `The counted data source does not include CounterLedgerEntry. Add it to the entities of your TypeORM data ` +
    `source, and create its table (a migration, or synchronize: true).`,
  dataSourceMissing: (dataSource: string) =>
    `CounterModule could not find the TypeORM data source "${dataSource}". Import TypeOrmModule.forRoot() (with ` +
    `that name) in the same application.`,
  unsupportedDatabase: (type: string) =>
    `CounterModule supports PostgreSQL, MySQL/MariaDB and SQLite (better-sqlite3); this data source is "${type}".`,
  schedulerMissing: () =>
    `CounterModule schedules its flush through @nestjs/schedule: import ScheduleModule.forRoot() in your ` +
    `application, or set flushEnabled: false and call CounterService.flush() yourself.`,
  badOption: (name: string, value: unknown, expected: string) =>
    `CounterModule option "${name}" must be ${expected}; got ${String(value)}.`,
  flushFailed: (attempt: number, retryInMs: number) =>
    `Counter flush failed (attempt ${attempt}); the batch stays in Redis and is retried in ${retryInMs} ms.`,
  rowsDropped: (table: string, ids: string[]) =>
    `Dropped pending counter changes of ${ids.length} ${table} row(s) that no longer exist in the database: ` +
    `${ids.slice(0, 20).join(', ')}${ids.length > 20 ? ', …' : ''}.`,
  finalFlushFailed: () =>
    `The final counter flush before shutdown failed; the pending changes stay in Redis and the next instance ` +
    `flushes them.`,
  finalFlushLeftWork: (left: { busy: number; lost: number; failed: number; reason?: string; rows: number | null }) =>
    `The final counter flush before shutdown left work in Redis: ` +
    [
      left.busy > 0 &&
        `${left.busy} shard(s) busy (another instance holds their lease: it is flushing them, or it died and ` +
          `they are taken over by the next flush of a running instance once its lease runs out, flushLeaseMs)`,
      left.lost > 0 && `${left.lost} shard(s) whose lease ran out during the flush (another instance finishes them)`,
      left.failed > 0 && `${left.failed} shard(s) failed`,
      left.reason !== undefined && `the flush failed (${left.reason})`,
    ]
      .filter(Boolean)
      .join(', ') +
    `; ${left.rows === null ? 'an unknown number of' : left.rows} row(s) wait in Redis for a running instance's ` +
    `flush. Nothing is lost: they reach the database once an instance flushes them.`,
  finalFlushNothingPending: (left: { refused: number; flushed: boolean }) =>
    `Redis is unreachable, so the final counter flush could not run; this instance accepted no counter change ` +
    `${sinceFlush(left.flushed)}` +
    (left.refused > 0
      ? ` (${left.refused} ${left.refused === 1 ? 'was' : 'were'} refused while Redis was unreachable)`
      : '') +
    `: nothing of its own was pending.`,
  finalFlushMayLeave: (left: { accepted: number; uncertain: number; flushed: boolean }) =>
    `Redis is unreachable, so the final counter flush could not run; ` +
    [
      left.accepted > 0 &&
        `${counted(left.accepted, 'counter change')} this instance accepted ${sinceFlush(left.flushed)}`,
      left.uncertain > 0 &&
        `${counted(left.uncertain, 'change')} whose outcome is unknown (sent as Redis stopped answering)`,
    ]
      .filter(Boolean)
      .join(' and ') +
    ` may wait in Redis. An instance flushes them once Redis is back; nothing is lost unless Redis lost its data.`,
  outageBegan: (dependency: Dependency, reason: string) => OUTAGE_BEGAN[dependency](reason),
  outageEnded: (dependency: Dependency, failedFlushes: number, refusedChanges: number) =>
    dependency === 'claim confirmations'
      ? `Redis confirms claims again, after ${counted(failedFlushes, 'failed flush', 'failed flushes')}.`
      : `${dependency === 'Redis' ? 'Redis' : 'The database'} is back after ` +
        [
          (failedFlushes > 0 || refusedChanges === 0) && counted(failedFlushes, 'failed flush', 'failed flushes'),
          refusedChanges > 0 && counted(refusedChanges, 'refused change'),
        ]
          .filter(Boolean)
          .join(' and ') +
        '.',
  redisConnectionLost: (reason: string) =>
    `Redis connection lost (${reason}); counter reads fall back to the database and changes fail until it returns.`,
  redisConnectionRestored: () => `Redis connection restored.`,
  clientReplaysCommands: () =>
    `The Redis client given to CounterModule may resend a command after a timeout or reconnect, so a change ` +
    `reported as failed could still be applied. Create it with { enableOfflineQueue: false, ` +
    `autoResendUnfulfilledCommands: false, socketTimeout } (a Cluster: also retryDelayOnFailover: 0, the others ` +
    `in redisOptions; see docs/OPERATING.md, "Your own Redis client"), or pass a URL or { clusterNodes } and ` +
    `let the module create it.`,
  redisDataLost: (shards: number, entities: string[], lastFlush: Date | null) =>
    `Redis lost the counter data of ${shards} shard(s) of ${entities.join(', ')} (a restart without ` +
    `persistence, a failover to a replica that was behind, or eviction). Changes acknowledged ` +
    `${lostSince(lastFlush)} and not yet written to the database are lost, at most those; database values ` +
    `are intact and rows are reloaded from the database.`,
  /** `counters`: each counter of the entities concerned, as `Entity.counter`, and whether it declares a source. */
  dataLossRepair: (counters: Array<{ name: string; sourced: boolean }>) => {
    const named = (sourced: boolean) =>
      counters
        .filter((counter) => counter.sourced === sourced)
        .map((counter) => counter.name)
        .join(', ');
    const [sourced, unsourced] = [named(true), named(false)];
    return (
      (sourced !== ''
        ? `To repair, recount ${sourced} (CounterService.recount(), or the option repairOnDataLoss).`
        : 'No counter of theirs declares a source to recount.') +
      (unsourced !== '' ? ` What ${unsourced} lost cannot be recovered: they declare no source.` : '')
    );
  },
  repairDone: (counter: string, checked: number, corrected: number) =>
    `Repaired ${counter} after a loss of Redis data: ${checked} rows checked against its source, ` +
    `${corrected} corrected.`,
  repairRetrying: (counter: string, checked: number, reason: string, retryMs: number) =>
    `A step of the repair of ${counter} after a loss of Redis data failed after ${checked} rows (${reason}); ` +
    `it is retried in ${retryMs} ms from where it stopped, by this instance or, if it stops, another one ` +
    `with repairOnDataLoss. Nothing to do unless it keeps failing: then make Redis and the database reachable.`,
  repairWaitFailed: (reason: string, retryMs: number) =>
    `Could not check Redis for repairs to run (${reason}); trying again in ${retryMs} ms. Changes refused ` +
    `meanwhile are recounted once Redis answers again.`,
  refusedRowsOverflow: (limit: number) =>
    `More than ${limit} rows had changes refused while Redis was unreachable: this instance stops ` +
    `remembering them one by one and recounts each counter concerned whole once Redis is back. Nothing to do.`,
  refusedRowsRecounted: (counter: string, checked: number, corrected: number) =>
    `Recounted ${counter} on ${checked} rows whose changes were refused while Redis was unreachable: ` +
    `${corrected} corrected from the source.`,
  lossCheckFailed: (reason: string) =>
    `Could not read the ledger to tell whether Redis lost data while no instance ran (${reason}); a loss ` +
    `then goes unreported. If Redis restarted empty meanwhile, run CounterService.recount() for counters with a ` +
    `source.`,
  databaseTimeout: (operation: string, timeoutMs: number) =>
    `The database did not answer within ${timeoutMs} ms (${operation}); counter changes stay in Redis and are ` +
    `written by a later flush.`,
  databaseFailed: (operation: string, reason: string) =>
    `The database failed while ${operation} (${reason}); nothing was changed. Retry once the database is reachable.`,
  lateBatchNotSettled: (entity: string, reason: string) =>
    `A ${entity} batch transaction that ended after the flush stopped waiting for it could not be settled in ` +
    `Redis (${reason}); the shard's next flush finishes it.`,
  batchTakenOver: (entity: string, shard: number) =>
    `A claimed batch of ${entity} shard ${shard} was taken over by another flusher (its lease ran out) before it ` +
    `was written; that flusher finishes it.`,
  claimNotReplicated: (confirmed: number, replicas: number, waitedMs: number) =>
    `A claimed counter batch reached ${confirmed} of ${replicas} replica(s) of its Redis node within ${waitedMs} ` +
    `ms; it stays in Redis and a later flush writes it.`,
  claimNotFsynced: (waitedMs: number) =>
    `A claimed counter batch was not confirmed fsynced to the AOF of its Redis node (and of its replicas that keep ` +
    `one) within ${waitedMs} ms; it stays in Redis and a later flush writes it.`,
  unreadableDump: (reason: string) =>
    `A claimed counter batch could not be read from its DUMP (${reason}); flushes read batches with HGETALL ` +
    `instead, which costs the application more CPU per row.`,
  dumpRefused: () => `Redis refused DUMP in the claim script: allow DUMP to the module's Redis user (ACL)`,
  overlayFailed: () => `Could not read live counters from Redis; the response carries the database values.`,
  valueTypesUnknown: (reason: string) =>
    `Could not ask the database which type its driver gives counted columns (${reason}); live counts are ` +
    `written into entities as numbers, which may differ from what TypeORM loads (a bigint as text), until it ` +
    `answers. It is asked again a minute later: check that the database is reachable.`,
  missingPeer: (name: string, usedBy: string) =>
    `${usedBy} needs the package ${name}, which is not installed: install it (npm install ${name}), or do ` +
    `without the feature.`,
  intervalAndCron: () =>
    `CounterModule options "flushIntervalMs" and "flushCron" were both given; the flush runs on one schedule: ` +
    `keep one of them.`,
  badCron: (expression: string, reason: string) =>
    `CounterModule option "flushCron" must be a cron expression (e.g. "*/5 * * * * *"); "${expression}" is ` +
    `not one (${reason}).`,
  badHealthOption: (name: string, value: unknown, expected: string) =>
    `CounterHealthIndicator.isHealthy() option "${name}" must be ${expected}; got ${String(value)}.`,
  healthRedisDown: () => `Redis is unreachable: counter changes fail and reads come from the database.`,
  healthFlushesFailing: (failures: number) =>
    `The last ${failures} counter flush(es) failed: changes pile up in Redis instead of reaching the database.`,
  healthFlushFailed: (failures: number) =>
    `The last ${failures} counter flush(es) failed; the next one is retried after a backoff.`,
  healthBacklogOld: (ageMs: number, thresholdMs: number) =>
    `The oldest counter change not yet in the database is ${ageMs} ms old, more than ${thresholdMs} ms.`,
  healthStatusFailed: (reason: string) => `Could not read the counters' status (${reason}).`,
  ledgerPruneFailed: (reason: string) => `Pruning the counter ledger failed (${reason}); a later flush tries again.`,
};
