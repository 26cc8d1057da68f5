// What a loss of Redis data is allowed to cost (DESIGN.md G1): only the deltas that were not yet in the
// database when Redis lost them. Two bounds, per target and in total:
// - unflushed at the kill: acknowledged before the old server was gone, minus what the database held
//   once no flush of the old server's data could still commit. Exact, whatever the flushes did.
// - acknowledged since the last complete flush: the deltas acknowledged after the start of the last
//   flush that ended before the kill having written everything it found (RELIABILITY.md: "at most one
//   flush interval plus one flush").
// An increment sent after the old server was gone can only have reached the new one, and is never lost.
import { targetKey, type CounterTarget } from './counter-targets.js';
import { TimedDeltas } from './timed-deltas.js';

export interface LossBoundsInput {
  targets: CounterTarget[];
  start: Map<string, number>;
  /** Database values once the flushes of the old server's data were over, before any of the new one's. */
  atRestart: Map<string, number>;
  /** Database values after the final flush. */
  end: Map<string, number>;
  tally: TimedDeltas;
  /** When the old redis-server was seen gone. */
  goneAt: number;
  /** When the last complete flush before the kill started; undefined if there was none. */
  lastCompleteFlushStartedAt: number | undefined;
}

export interface LossBounds {
  unflushedAtKill: number;
  acknowledgedSinceLastCompleteFlush: number;
  /** Targets that lost more than was unflushed at the kill, as `target: lost > unflushed`. */
  exceeded: string[];
}

export function lossBounds(input: LossBoundsInput): LossBounds {
  const { targets, start, atRestart, end, tally, goneAt, lastCompleteFlushStartedAt = -Infinity } = input;
  const acknowledged = tally.select(({ outcome, sentAt }) => outcome === 'acknowledged' && sentAt < goneAt);
  const beforeKill = TimedDeltas.byTarget(acknowledged);
  let unflushedAtKill = 0;
  const exceeded: string[] = [];
  for (const target of targets) {
    const key = targetKey(target);
    const unflushed = Math.max(0, (beforeKill.get(key) ?? 0) - (atRestart.get(key)! - start.get(key)!));
    const lost = Math.max(0, tally.acknowledged(target) - (end.get(key)! - start.get(key)!));
    unflushedAtKill += unflushed;
    if (lost > unflushed) exceeded.push(`${key}: lost ${lost} > unflushed ${unflushed}`);
  }
  const sinceLastFlush = acknowledged.filter(({ settledAt }) => settledAt >= lastCompleteFlushStartedAt);
  return {
    unflushedAtKill,
    acknowledgedSinceLastCompleteFlush: sinceLastFlush.reduce((sum, { by }) => sum + by, 0),
    exceeded,
  };
}
