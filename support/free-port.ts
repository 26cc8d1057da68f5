import { createServer } from 'node:net';

/** A loopback port nothing listens on right now, for a server a test starts itself. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** A cluster node's bus listens 10,000 ports above it, so the node's own port must leave room for it. */
const HIGHEST_CLUSTER_PORT = 55_535;

/** `count` distinct free loopback ports that Redis Cluster nodes can take. */
export async function freeClusterPorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < count) {
    const port = await freePort();
    if (port <= HIGHEST_CLUSTER_PORT && !ports.includes(port)) ports.push(port);
  }
  return ports;
}
