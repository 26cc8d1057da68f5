import type { HealthIndicatorService } from '@nestjs/terminus';
import { missingPeer } from '../optional-peer.js';

let service: Promise<HealthIndicatorService> | undefined;

/**
 * Terminus's `HealthIndicatorService`, loaded on the first health check: the results it builds are
 * the ones the installed Terminus reads, whichever major it is.
 */
export function terminusHealthIndicators(): Promise<HealthIndicatorService> {
  service ??= import('@nestjs/terminus').then(
    ({ HealthIndicatorService }) => new HealthIndicatorService(),
    missingPeer('@nestjs/terminus', 'CounterHealthIndicator'),
  );
  return service;
}
