// The load of the scenarios whose counts have a source (12, 13): writers that insert a reply to a topic, as
// an app does, then have an instance count it and a view. What reply_count must end at is the source (the
// replies in the database), whatever Redis lost; view_count has no source, and what it lost is measured.
import type { DataSource } from 'typeorm';
import { Reply, Topic } from '../../test/fixtures/sourced-entities.js';
import type { ChaosWorker } from './chaos-worker.js';
import type { InvariantFigures } from './invariant.js';
import { sleep } from './time.js';

export interface ReplyTally {
  /** Replies inserted: what the reply counts must add up to. */
  replies: number;
  repliesCounted: number;
  viewsAcknowledged: number;
  /** Changes refused or failed (Redis down, its restart). */
  failed: number;
}

/** `writers` loops, each inserting a reply and counting it and a view through the workers in turn, until `stop()`. */
export function startReplyWriters(observer: DataSource, ids: number[], workers: ChaosWorker[], writers: number) {
  let writing = true;
  const tally: ReplyTally = { replies: 0, repliesCounted: 0, viewsAcknowledged: 0, failed: 0 };
  const writer = async (seed: number) => {
    for (let i = seed; writing; i++) {
      const topicId = ids[(i * 7) % ids.length];
      const worker = workers[i % workers.length];
      await observer.getRepository(Reply).insert({ topicId });
      tally.replies++;
      await worker.increment('Topic', topicId, 'reply_count', 1).then(
        () => tally.repliesCounted++,
        () => tally.failed++,
      );
      await worker.increment('Topic', topicId, 'view_count', 1).then(
        () => tally.viewsAcknowledged++,
        () => tally.failed++,
      );
    }
  };
  const running = Array.from({ length: writers }, (_, seed) => writer(seed));
  return {
    tally,
    async stop(): Promise<void> {
      writing = false;
      await Promise.all(running);
    },
  };
}

/** `count` new topics, by id. */
export async function insertTopics(observer: DataSource, count: number): Promise<number[]> {
  const { identifiers } = await observer.getRepository(Topic).insert(Array.from({ length: count }, () => ({})));
  return identifiers.map((row) => (row as { id: number }).id);
}

/** Each topic's replies in the database: the truth its reply_count must hold. */
export function replySources(observer: DataSource, ids: number[]): Promise<number[]> {
  return Promise.all(ids.map((topicId) => observer.getRepository(Reply).countBy({ topicId })));
}

/** Each topic's live reply_count, as an instance serves it (loading rows Redis lacks from the database). */
export async function liveReplyCounts(worker: ChaosWorker, ids: number[]): Promise<Array<number | undefined>> {
  const rows = await worker.request<Array<[number, Record<string, number>]>>({
    op: 'getMany',
    entity: 'Topic',
    ids,
    counters: ['reply_count'],
  });
  const byId = new Map(rows);
  return ids.map((id) => byId.get(id)?.reply_count);
}

/** Flushes until a flush ends without an error (the instance's client back on the restarted Redis). */
export async function flushUntilClean(worker: ChaosWorker): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const report = await worker.flush();
    if (!report.error) return;
    if (attempt === 50) throw new Error(`flushes kept failing: ${report.error.message}`);
    await sleep(100);
  }
}

/** The result line's figures, where the invariant is the source: the replies inserted against the counts. */
export function replyFigures(tally: ReplyTally, counted: number): InvariantFigures {
  return {
    acknowledged: tally.replies,
    inDatabase: counted,
    lost: Math.max(0, tally.replies - counted),
    duplicated: Math.max(0, counted - tally.replies),
    uncertain: 0,
    backwards: 0,
    samples: 0,
    wrong: [],
    backwardSteps: [],
  };
}
