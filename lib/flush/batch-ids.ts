import { randomUUID } from 'node:crypto';

/**
 * Makes batch ids: UUIDs whose first 8 hex digits name the deployment (FNV-1a of its key prefix), so
 * that the ledger tells which shards of this deployment ever flushed (see ShardsLostWhileDown), even
 * where deployments with other key prefixes write to the same tables.
 */
export class BatchIds {
  /** The 8 hex digits every batch id of the deployment starts with. */
  readonly deploymentTag: string;

  constructor(keyPrefix: string) {
    let hash = 0x811c9dc5;
    for (let i = 0; i < keyPrefix.length; i++) {
      hash ^= keyPrefix.charCodeAt(i);
      hash = Math.imul(hash, 0x01000193);
    }
    this.deploymentTag = (hash >>> 0).toString(16).padStart(8, '0');
  }

  next(): string {
    return `${this.deploymentTag}${randomUUID().slice(8)}`;
  }
}
