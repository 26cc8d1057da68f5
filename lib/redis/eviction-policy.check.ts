import { Logger } from '@nestjs/common';
import { MESSAGES } from '../counter.messages.js';
import { CounterConfigurationError } from '../exceptions/counter-configuration.error.js';
import { isCluster, type RedisClient } from './counter-redis.handle.js';
import type { ScriptRunner } from './script.runner.js';

/** Policies that evict only keys with a TTL, or none: the keys that hold changes have no TTL. */
const SAFE_POLICY = /^(noeviction|volatile-\S+)$/;

/** A Redis server and its `maxmemory-policy`. */
export interface ServerPolicy {
  server: string;
  policy: string;
}

/**
 * Whether Redis may evict the keys that hold changes not yet in the database. Only a row's cache and a
 * lease carry a TTL, so `noeviction` and `volatile-*` never evict a change; `allkeys-*` may, unless the
 * app accepts it (`acceptLossOnEviction`). The policy is read from `INFO memory`, which works where an
 * ACL refuses `CONFIG`; on a cluster from every master.
 */
export class EvictionPolicyCheck {
  private readonly logger = new Logger('CounterRedis');
  private stopWatching?: () => void;

  constructor(
    private readonly runner: ScriptRunner,
    private readonly acceptLoss: boolean,
  ) {}

  /** The servers whose policy may evict changes, in a sentence naming the fix; undefined when none may. */
  async problem(): Promise<string | undefined> {
    if (this.acceptLoss) return undefined;
    const unsafe = (await readPolicies(this.runner.client)).filter(({ policy }) => !SAFE_POLICY.test(policy));
    return unsafe.length === 0 ? undefined : MESSAGES.evictionUnsafe(unsafe);
  }

  /**
   * At bootstrap: refuses a Redis whose policy may evict changes (CounterConfigurationError). A Redis
   * not reachable yet is checked when it connects, and one reached again (restarted, failed over) each
   * time; the app runs by then, so a problem is logged as an error.
   */
  async verify(): Promise<void> {
    if (this.acceptLoss) return;
    if (this.runner.sendable) {
      const problem = await this.problem().catch((error: Error) => this.unreadable(error));
      if (problem) throw new CounterConfigurationError(problem);
    }
    const onReady = () =>
      void this.problem().then(
        (problem) => problem && this.logger.error(MESSAGES.evictionUnsafeLate(problem)),
        (error: Error) => this.unreadable(error),
      );
    this.runner.client.on('ready', onReady);
    this.stopWatching = () => this.runner.client.off('ready', onReady);
  }

  stop(): void {
    this.stopWatching?.();
  }

  private unreadable(error: Error): undefined {
    this.logger.warn(MESSAGES.evictionPolicyUnreadable(error.message));
    return undefined;
  }
}

/** Each master's `maxmemory-policy`, from `INFO memory`. */
async function readPolicies(client: RedisClient): Promise<ServerPolicy[]> {
  const servers = isCluster(client) ? client.nodes('master') : [client];
  return Promise.all(
    servers.map(async (server) => {
      const policy = /^maxmemory_policy:(\S+)/m.exec(await server.info('memory'))?.[1];
      if (!policy) throw new Error('INFO memory gives no maxmemory_policy');
      const { host, port, path } = server.options;
      return { server: path ?? `${host}:${port}`, policy };
    }),
  );
}
