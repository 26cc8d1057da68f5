import { Injectable, UnauthorizedException } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { CounterRowNotFoundError, CounterService } from 'nestjs-counter';
import type { Repository } from 'typeorm';
import { Comment } from '../comments/comment.entity.js';
import { Solution } from '../solutions/solution.entity.js';
import { notSignedIn } from '../users/signed-in-user.decorator.js';
import { User } from '../users/user.entity.js';
import { Like, type LikeTarget } from './like.entity.js';
import { isUniqueViolation } from './unique-violation.js';

/** What a like or an unlike answers: `changed` is false when the user had already (not) liked it. */
export interface LikeResult {
  id: number;
  userId: number;
  liked: boolean;
  changed: boolean;
  like_count: number;
}

const COUNTED = { solution: Solution, comment: Comment } as const;

/**
 * How long after a like its retry still sends its change again: well within the module's
 * idempotencyTtlSeconds (a day), so that the change's key is still remembered.
 */
const RETRY_WINDOW_MS = 60 * 60 * 1000;

interface LikeKey {
  userId: number;
  targetType: LikeTarget;
  targetId: number;
}

const answerOf = (key: LikeKey, liked: boolean, changed: boolean, count: number): LikeResult => ({
  id: key.targetId,
  userId: key.userId,
  liked,
  changed,
  like_count: count,
});

/**
 * Per-user likes: a row in `likes` per (user, target), and the target's `like_count` counter moved only
 * by the call that created or deleted that row, so repeated or concurrent likes count once.
 */
@Injectable()
export class LikesService {
  constructor(
    @InjectRepository(Like) private readonly likes: Repository<Like>,
    @InjectRepository(User) private readonly users: Repository<User>,
    private readonly counters: CounterService,
  ) {}

  /**
   * 401 for an unknown user; 404 (from the counter) for a missing target, whose row is then removed. The
   * count changes with a key made from the like's row: a like retried after its count failed or timed out
   * finds its row and sends the same change again, which counts once; like → unlike → like counts every
   * step (each like is a row of its own). A duplicate of an older like changes nothing.
   */
  async like(userId: number, targetType: LikeTarget, targetId: number): Promise<LikeResult> {
    await this.requireUser(userId);
    const key: LikeKey = { userId, targetType, targetId };
    let likeId: number;
    try {
      const { identifiers } = await this.likes.insert({ ...key }); // a copy: insert() writes into its argument
      likeId = (identifiers[0] as { id: number }).id;
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      const existing = await this.likes.findOneBy(key);
      if (!existing || Date.now() - existing.createdAt.getTime() > RETRY_WINDOW_MS) {
        return answerOf(key, true, false, await this.counters.get(COUNTED[targetType], targetId, 'like_count'));
      }
      likeId = existing.id;
    }
    try {
      const { value, applied } = await this.counters.change(COUNTED[targetType], targetId, 'like_count', 1, {
        idempotencyKey: `like:${likeId}`,
      });
      return answerOf(key, true, applied, value);
    } catch (error) {
      // No such target: the like goes too. Any other failure keeps it, for the retry to count it.
      if (error instanceof CounterRowNotFoundError) await this.likes.delete({ id: likeId });
      throw error;
    }
  }

  /**
   * 401 for an unknown user; 404 for a missing target. Unliking what the user never liked changes
   * nothing. The count changes (with a key made from the like's row) before the row goes, so a retry
   * after a failure finds the row and sends the same change again.
   */
  async unlike(userId: number, targetType: LikeTarget, targetId: number): Promise<LikeResult> {
    await this.requireUser(userId);
    const key: LikeKey = { userId, targetType, targetId };
    const existing = await this.likes.findOneBy(key);
    if (!existing) {
      return answerOf(key, false, false, await this.counters.get(COUNTED[targetType], targetId, 'like_count'));
    }
    const { value, applied } = await this.counters.change(COUNTED[targetType], targetId, 'like_count', -1, {
      idempotencyKey: `unlike:${existing.id}`,
    });
    await this.likes.delete({ id: existing.id });
    return answerOf(key, false, applied, value);
  }

  /** The ids of what the user likes, for the page's buttons. */
  async likedBy(userId: number): Promise<Record<LikeTarget, number[]>> {
    await this.requireUser(userId);
    const rows = await this.likes.find({ where: { userId }, order: { targetId: 'ASC' } });
    const ids = (type: LikeTarget) => rows.filter((row) => row.targetType === type).map((row) => row.targetId);
    return { solution: ids('solution'), comment: ids('comment') };
  }

  private async requireUser(userId: number): Promise<void> {
    if (!(await this.users.existsBy({ id: userId }))) throw new UnauthorizedException(notSignedIn());
  }
}
