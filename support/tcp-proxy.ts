import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * - `pass`: forward both ways (after `latencyMs`, if set).
 * - `blackhole`: accept and hold connections, forward nothing, drop what arrives. A connection caught by a
 *   blackhole stays dead for good (as behind a firewall that lost its connection state): the bytes it lost
 *   cannot be replayed, so forwarding it again would corrupt its stream. Only new connections recover.
 * - `reset`: reset every open connection, and every new one as soon as it is accepted.
 */
export type ProxyMode = 'pass' | 'blackhole' | 'reset';

export interface TcpProxyOptions {
  mode?: ProxyMode;
  /** Added to every chunk forwarded in `pass` mode, in milliseconds; order is kept. */
  latencyMs?: number;
}

interface Link {
  client: Socket;
  upstream?: Socket;
  held: boolean;
}

/** A TCP proxy on a free loopback port that can pass, blackhole or reset the traffic to one target. */
export class TcpProxy {
  private readonly links = new Set<Link>();
  private currentMode: ProxyMode;

  /** Added delay of forwarded chunks, in milliseconds. May be changed at any time. */
  latencyMs: number;

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly target: { host: string; port: number },
    options: TcpProxyOptions,
  ) {
    this.currentMode = options.mode ?? 'pass';
    this.latencyMs = options.latencyMs ?? 0;
    server.on('connection', (client) => this.accept(client));
  }

  static async start(target: { host: string; port: number }, options: TcpProxyOptions = {}): Promise<TcpProxy> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const { port } = server.address() as { port: number };
    return new TcpProxy(server, port, target, options);
  }

  get mode(): ProxyMode {
    return this.currentMode;
  }

  get host(): string {
    return '127.0.0.1';
  }

  /** `redis://` URL of the proxy, for a Redis target. */
  get url(): string {
    return `redis://${this.host}:${this.port}`;
  }

  setMode(mode: ProxyMode): void {
    this.currentMode = mode;
    for (const link of this.links) {
      if (mode === 'reset') this.drop(link, true);
      else if (mode === 'blackhole') link.held = true;
    }
  }

  /** Stops listening and closes every connection. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const link of this.links) this.drop(link, false);
    await closed;
  }

  private accept(client: Socket): void {
    client.on('error', () => undefined);
    if (this.currentMode === 'reset') {
      client.resetAndDestroy();
      return;
    }
    const link: Link = { client, held: this.currentMode === 'blackhole' };
    this.links.add(link);
    client.once('close', () => this.drop(link, false));
    if (!link.held) {
      const upstream = connect(this.target.port, this.target.host);
      upstream.on('error', () => undefined);
      upstream.once('close', () => this.drop(link, false));
      link.upstream = upstream;
      this.forward(link, client, upstream);
      this.forward(link, upstream, client);
    }
    // A held connection reads and discards, so its peer's writes never block.
    client.on('data', () => undefined);
  }

  /** Forwards `from` to `to` in order, each chunk `latencyMs` late, while the link is not held. */
  private forward(link: Link, from: Socket, to: Socket): void {
    let tail = Promise.resolve();
    let queued = 0;
    from.on('data', (chunk: Buffer) => {
      if (link.held) return;
      if (this.latencyMs === 0 && queued === 0) {
        to.write(chunk);
        return;
      }
      const due = Date.now() + this.latencyMs;
      queued++;
      tail = tail
        .then(() => new Promise((resolve) => setTimeout(resolve, Math.max(0, due - Date.now()))))
        .then(() => {
          queued--;
          if (!link.held && !to.destroyed) to.write(chunk);
        });
    });
  }

  private drop(link: Link, reset: boolean): void {
    if (!this.links.delete(link)) return;
    link.held = true;
    if (reset) link.client.resetAndDestroy();
    else link.client.destroy();
    link.upstream?.destroy();
  }
}
