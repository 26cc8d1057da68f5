import type { SchedulerRegistry } from '@nestjs/schedule';
import type { HealthIndicatorResult } from '@nestjs/terminus';
import type { CronJob } from 'cron';

/**
 * What differs between the majors of our peers, decided in one place (as `@nestjs/typeorm` does in its
 * `typeorm-compat.ts`). Everything else the library uses is the same in Nest 11 and 12, @nestjs/schedule
 * 6 and 12, TypeORM 0.3 and 1.x, ioredis 5 and 6.
 */

/**
 * Registers a cron job. Our `cron` and @nestjs/schedule's may be two copies (6.0 pins cron 4.3.0): the
 * registry only stores the job and stops it, which every cron 4.x does alike, so its type is the registry's.
 */
export function addCronJob(registry: SchedulerRegistry, name: string, job: CronJob<null, null>): void {
  registry.addCronJob(name, job as unknown as Parameters<SchedulerRegistry['addCronJob']>[1]);
}

/** Terminus 12's `degraded()` of a health check session; undefined on Terminus 11, which has no such status. */
export function degradedOf<Key extends string>(
  session: object,
): ((data: object) => HealthIndicatorResult<Key>) | undefined {
  const { degraded } = session as unknown as { degraded?: (data: object) => HealthIndicatorResult<Key> };
  return degraded?.bind(session);
}
