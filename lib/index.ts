export { CounterModule } from './counter.module.js';
export { CounterService } from './counter.service.js';
export { CounterInterceptor } from './interceptors/counter.interceptor.js';
export {
  COUNTER_RETRY_AFTER_SECONDS,
  CounterExceptionFilter,
  type CounterErrorResponseBody,
} from './filters/counter-exception.filter.js';
export { Counted } from './decorators/counted.decorator.js';
export { LiveCounts } from './decorators/live-counts.decorator.js';
export { RollingCount } from './decorators/rolling-count.decorator.js';
export { CounterLedgerEntry } from './sql/counter-ledger.entity.js';
export { CounterBucket } from './sql/counter-bucket.entity.js';
export { CounterRollingWindow } from './sql/counter-rolling-window.entity.js';
export { CounterRollingSum } from './sql/counter-rolling-sum.entity.js';
export * from './exceptions/index.js';
export * from './interfaces/index.js';
export { CounterHealthIndicator } from './health/counter.health-indicator.js';
