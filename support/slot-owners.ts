import { isCluster, type AnyRedis } from './redis.js';

/**
 * The node (`host:port`) that serves each hash slot, as the server reports it (`CLUSTER SLOTS`), not
 * as a client caches it; a single Redis serves every slot itself.
 */
export async function slotOwners(redis: AnyRedis): Promise<(slot: number) => string> {
  if (!isCluster(redis)) {
    const address = `${redis.options.host}:${redis.options.port}`;
    return () => address;
  }
  // Each range: start, end, then its master and its replicas as [host, port, id, …].
  const ranges = await redis.cluster('SLOTS');
  return (slot) => {
    const range = ranges.find(([start, end]) => slot >= start && slot <= end);
    if (!range) throw new Error(`No node serves slot ${slot}`);
    const [host, port] = range[2];
    return `${host}:${port}`;
  };
}

/** How many replicas the server lists (`CLUSTER SLOTS`) for the master `host:port`; 0 on a single Redis. */
export async function listedReplicas(redis: AnyRedis): Promise<(node: string) => number> {
  if (!isCluster(redis)) return () => 0;
  const ranges = await redis.cluster('SLOTS');
  const counts = new Map(ranges.map(([, , [host, port], ...replicas]) => [`${host}:${port}`, replicas.length]));
  return (node) => counts.get(node) ?? 0;
}
