import { Injectable, UnauthorizedException } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { CounterService } from 'nestjs-counter';
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

  /** 401 for an unknown user; 404 (from the counter) for a missing target, whose row is then removed. */
  async like(userId: number, targetType: LikeTarget, targetId: number): Promise<LikeResult> {
    await this.requireUser(userId);
    const key: LikeKey = { userId, targetType, targetId };
    try {
      await this.likes.insert({ ...key }); // a copy: insert() writes the generated columns into its argument
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      return answerOf(key, true, false, await this.counters.get(COUNTED[targetType], targetId, 'like_count'));
    }
    try {
      return answerOf(key, true, true, await this.counters.increment(COUNTED[targetType], targetId, 'like_count'));
    } catch (error) {
      // Not counted (missing target, Redis down): the row goes too, so that a retry counts it.
      await this.likes.delete(key);
      throw error;
    }
  }

  /** 401 for an unknown user; 404 for a missing target. Unliking what the user never liked changes nothing. */
  async unlike(userId: number, targetType: LikeTarget, targetId: number): Promise<LikeResult> {
    await this.requireUser(userId);
    const key: LikeKey = { userId, targetType, targetId };
    const { affected } = await this.likes.delete(key);
    if (!affected)
      return answerOf(key, false, false, await this.counters.get(COUNTED[targetType], targetId, 'like_count'));
    try {
      return answerOf(key, false, true, await this.counters.decrement(COUNTED[targetType], targetId, 'like_count'));
    } catch (error) {
      // Not counted: the like stays, so that a retry can remove it.
      await this.likes.insert({ ...key }).catch(() => undefined);
      throw error;
    }
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
