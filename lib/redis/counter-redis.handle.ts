import { Logger } from '@nestjs/common';
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { MESSAGES } from '../counter.messages.js';
import type {
  CounterClusterConnection,
  CounterRedisConnection,
} from '../interfaces/counter-module-options.interface.js';

export type RedisClient = Redis | Cluster;

/** How often a module-made cluster client reloads the slot map (masters and their replicas). */
const SLOTS_REFRESH_INTERVAL_MS = 5_000;

/** Longest wait for Redis at bootstrap; past it the app starts degraded (reads from the database). */
const BOOTSTRAP_WAIT_MS = 5_000;

/** How much longer than the socket timeout a module-made client waits before it reconnects (see `from`). */
const RECONNECT_AFTER_SOCKET_TIMEOUT_MS = 50;

/** The Redis client the module works with, and whether the module made it (and so must close it). */
export class CounterRedisHandle {
  private readonly logger = new Logger('CounterRedis');
  /** Set once the module closes its client: the close that follows is no outage. */
  private closing = false;

  constructor(
    readonly client: RedisClient,
    readonly owned: boolean,
  ) {}

  static from(connection: CounterRedisConnection, commandTimeoutMs: number): CounterRedisHandle {
    if (isRedisClient(connection)) {
      const handle = new CounterRedisHandle(connection, false);
      if (replaysCommands(connection)) handle.logger.warn(MESSAGES.clientReplaysCommands());
      return handle;
    }
    // A counter change must either be applied and acknowledged, or fail and never be applied later:
    // no offline queue, no resending of commands that were in flight when a connection broke, and a
    // socket that stops answering is destroyed (then reconnected) instead of timing out forever.
    const failFast: RedisOptions = {
      commandTimeout: commandTimeoutMs,
      socketTimeout: commandTimeoutMs,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
    };
    // ioredis 5 never clears the socket timeout of a socket that closed with a command unanswered: it fires
    // later on whichever socket the client has then, a healthy new one included (redis/ioredis#2147, fixed
    // in 6.0.0). Reconnecting only after it fired keeps a Redis restart to one outage. A cluster is spared:
    // it replaces a lost node's client instead of reconnecting it.
    const reconnectAfter = commandTimeoutMs + RECONNECT_AFTER_SOCKET_TIMEOUT_MS;
    const client = isClusterConnection(connection)
      ? new Cluster(connection.clusterNodes, failFastCluster(connection.clusterOptions, failFast))
      : typeof connection === 'string'
        ? new Redis(connection, { ...failFast, retryStrategy: notBefore(reconnectAfter) })
        : new Redis({ ...connection, ...failFast, retryStrategy: notBefore(reconnectAfter, connection.retryStrategy) });
    const handle = new CounterRedisHandle(client, true);
    handle.reportOutages();
    return handle;
  }

  /** Waits (bounded) for the first connection, so the first requests do not fail while it is made. */
  async waitUntilReady(): Promise<void> {
    if (this.client.status === 'ready' || this.client.status === 'wait') return;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.client.off('ready', done).off('error', done);
        resolve();
      };
      const timer = setTimeout(done, BOOTSTRAP_WAIT_MS);
      this.client.once('ready', done).once('error', done);
    });
  }

  async close(): Promise<void> {
    if (!this.owned || this.client.status === 'end') return;
    this.closing = true;
    await this.client.quit().catch(() => this.client.disconnect());
  }

  /**
   * Logs a lost connection once per outage (ioredis emits an error on every reconnect attempt, and
   * prints it itself when nobody listens; a server that closes the connection cleanly emits none), and
   * its recovery.
   */
  private reportOutages(): void {
    let down = false;
    const lost = (reason: string) => {
      if (down || this.closing) return;
      down = true;
      this.logger.warn(MESSAGES.redisConnectionLost(reason));
    };
    this.client.on('error', (error: Error) => lost(error.message));
    this.client.on('close', () => lost('connection closed'));
    this.client.on('ready', () => {
      if (!down) return;
      down = false;
      this.logger.log(MESSAGES.redisConnectionRestored());
    });
  }
}

export function isRedisClient(value: unknown): value is RedisClient {
  return (
    value instanceof Redis ||
    value instanceof Cluster ||
    (typeof value === 'object' &&
      value !== null &&
      typeof (value as RedisClient).evalsha === 'function' &&
      typeof (value as RedisClient).pipeline === 'function')
  );
}

function isClusterConnection(value: CounterRedisConnection): value is CounterClusterConnection {
  return typeof value === 'object' && Array.isArray((value as CounterClusterConnection).clusterNodes);
}

/**
 * A cluster retries on its own a command whose connection closed before the reply ("failover"), which
 * could apply it twice. Redirections (MOVED, ASK, TRYAGAIN, CLUSTERDOWN) stay on: Redis refused those
 * commands without running them.
 */
function failFastCluster(options: ClusterOptions = {}, failFast: RedisOptions): ClusterOptions {
  const { enableOfflineQueue: _queue, ...nodeFailFast } = failFast;
  return {
    // ioredis documents a 5 s slot-map refresh but runs none unless asked: without it, a replica the
    // servers list later (a first sync, a replaced node) stays unknown, and claims would not WAIT for it.
    slotsRefreshInterval: SLOTS_REFRESH_INTERVAL_MS,
    ...options,
    enableOfflineQueue: false,
    retryDelayOnFailover: 0,
    redisOptions: { ...options.redisOptions, ...nodeFailFast },
  };
}

/** `strategy`'s reconnect delays (ioredis's own where none is given), none shorter than `minDelayMs`. */
function notBefore(minDelayMs: number, strategy?: RedisOptions['retryStrategy']): RedisOptions['retryStrategy'] {
  return (times) => {
    const delay = strategy ? strategy(times) : minDelayMs;
    return typeof delay === 'number' ? Math.max(delay, minDelayMs) : delay;
  };
}

export function isCluster(client: RedisClient): client is Cluster {
  return client instanceof Cluster || (client as { isCluster?: boolean }).isCluster === true;
}

/** Whether a client may send a command after its caller was told it failed. */
function replaysCommands(client: RedisClient): boolean {
  if (isCluster(client)) {
    const { enableOfflineQueue, retryDelayOnFailover, redisOptions = {} } = client.options;
    return (
      enableOfflineQueue !== false || retryDelayOnFailover !== 0 || redisOptions.autoResendUnfulfilledCommands !== false
    );
  }
  return client.options.autoResendUnfulfilledCommands !== false || client.options.enableOfflineQueue !== false;
}
