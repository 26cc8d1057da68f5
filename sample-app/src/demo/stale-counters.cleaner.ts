import { Injectable, Logger } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { Redis } from 'ioredis';
import { counterKeyPrefix, redisUrl } from '../config/counter-options.factory.js';

/**
 * Deletes the counter keys of this app's prefix. Run only on a fresh, empty database: keys left by an
 * earlier database (an SQLite file that was deleted) would otherwise serve its counts for new rows
 * with the same ids, and flush its pending changes into them.
 */
@Injectable()
export class StaleCountersCleaner {
  private readonly logger = new Logger('DemoData');

  constructor(private readonly config: ConfigService) {}

  async clear(): Promise<void> {
    const prefix = counterKeyPrefix(this.config);
    const redis = new Redis(redisUrl(this.config), { maxRetriesPerRequest: 1 });
    try {
      let cursor = '0';
      let deleted = 0;
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${escapeGlob(prefix)}:*`, 'COUNT', 1000);
        cursor = next;
        if (keys.length > 0) deleted += await redis.del(...keys);
      } while (cursor !== '0');
      if (deleted > 0)
        this.logger.warn(`Deleted ${deleted} stale counter key(s) under "${prefix}" (the database was empty).`);
    } finally {
      redis.disconnect();
    }
  }
}

function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}
