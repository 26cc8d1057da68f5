import type { CronJob } from 'cron';

/**
 * The `CronJob` class of the `cron` package, loaded only when `flushCron` is set. `cron` is our own
 * dependency, in the range @nestjs/schedule 6 and 12 both use, so that it resolves under strict layouts
 * (pnpm) without reaching into @nestjs/schedule's dependencies, and npm installs it once.
 */
export async function loadCronJob(): Promise<typeof CronJob> {
  return (await import('cron')).CronJob;
}
