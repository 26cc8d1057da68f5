import { createHash, randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { isCluster, masters, type AnyRedis } from '../../support/redis.js';
import { unescapeMonitorArg } from './redis-traffic.js';
import { scriptsBySha } from './script-calls.js';

/** One call of a library script, as the node that ran it reported it. */
export interface AuditedCall {
  script: string;
  /** The keys the call declared (its KEYS). */
  declared: string[];
  /** The commands the script ran inside Redis, each as its arguments (name first). */
  commands: string[][];
}

/**
 * Watches, through MONITOR on every master, the library's script calls and the commands each runs inside
 * Redis: a node reports a script call, then the commands the script runs (source "lua"), before anything
 * else, since a script runs alone. Calls of any client count, since they all run the library's scripts.
 */
export class ScriptKeyAudit {
  private readonly calls: AuditedCall[] = [];
  private readonly monitors: Redis[] = [];
  private readonly scripts = scriptsBySha();
  private readonly markers = new Map<string, () => void>();

  private constructor() {}

  static async start(redis: AnyRedis): Promise<ScriptKeyAudit> {
    const audit = new ScriptKeyAudit();
    const nodes = isCluster(redis) ? await masters(redis) : [redis];
    await Promise.all(nodes.map((node) => audit.watch(node)));
    return audit;
  }

  /** The calls seen so far, once every node has reported what it ran before this call. */
  async seen(redis: AnyRedis): Promise<AuditedCall[]> {
    const nodes = isCluster(redis) ? await masters(redis) : [redis];
    await Promise.all(
      nodes.map(async (node) => {
        const marker = `audit-marker-${randomBytes(4).toString('hex')}`;
        const echoed = new Promise<void>((resolve) => this.markers.set(marker, resolve));
        await node.echo(marker);
        await echoed;
      }),
    );
    return [...this.calls];
  }

  /**
   * The commands of library scripts that touched a key their call did not declare, as
   * `script: command key`; the keys of each command are what Redis says they are (COMMAND GETKEYS).
   */
  async undeclaredKeys(redis: AnyRedis, calls: AuditedCall[] = this.calls): Promise<string[]> {
    const node = isCluster(redis) ? (await masters(redis))[0] : redis;
    const found: string[] = [];
    for (const call of calls) {
      for (const command of call.commands) {
        for (const key of await keysOf(node, command)) {
          if (!call.declared.includes(key)) found.push(`${call.script}: ${command[0]} ${key}`);
        }
      }
    }
    return found;
  }

  stop(): void {
    for (const monitor of this.monitors) monitor.disconnect();
  }

  private async watch(node: Redis): Promise<void> {
    const monitor = node.duplicate({ monitor: true, lazyConnect: true });
    this.monitors.push(monitor);
    monitor.on('error', (error: Error) => {
      if (!error.message.startsWith('Command queue state error')) throw error;
    });
    // The call whose commands this node is reporting: undefined after anything but a library script.
    let current: AuditedCall | undefined;
    monitor.on('monitor', (_time: string, quoted: string[], source: string) => {
      const args = quoted.map(unescapeMonitorArg);
      if (source === 'lua') {
        current?.commands.push(args);
        return;
      }
      if (args[0]?.toLowerCase() === 'echo') this.markers.get(args[1])?.();
      current = this.libraryCall(args);
      if (current) this.calls.push(current);
    });
    const monitoring = new Promise((resolve) => monitor.once('monitoring', resolve));
    await monitor.connect();
    await monitoring;
  }

  /** A call of a library script, from its EVALSHA (or EVAL, the first time a connection sends it). */
  private libraryCall([name, body, count, ...rest]: string[]): AuditedCall | undefined {
    const command = name?.toLowerCase();
    if (command !== 'evalsha' && command !== 'eval') return undefined;
    const sha = command === 'eval' ? createHash('sha1').update(body).digest('hex') : body;
    const script = this.scripts.get(sha);
    return script ? { script, declared: rest.slice(0, Number(count)), commands: [] } : undefined;
  }
}

/** The keys of a command, as Redis finds them; none for a command without keys (TIME). */
async function keysOf(node: Redis, [name, ...args]: string[]): Promise<string[]> {
  try {
    return (await node.call('COMMAND', 'GETKEYS', name, ...args)) as string[];
  } catch (error) {
    // TIME and the like: no keys (Redis says so in one of these words, by version).
    if (/no key arguments|Invalid arguments|wrong number of arguments/i.test((error as Error).message)) return [];
    throw error;
  }
}
