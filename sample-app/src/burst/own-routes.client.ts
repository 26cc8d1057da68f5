import { Injectable, ServiceUnavailableException } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { AddressInfo } from 'node:net';

/** What one request of a visitor changed: a view, a like (+1), an unlike (-1), or nothing (refused). */
export type VisitorChange =
  { kind: 'view' } | { kind: 'like'; delta: 1 | -1 | 0 } | { kind: 'refused'; reason: string };

/**
 * The app's own HTTP routes, called as a client would call them (no Origin: a server, like curl), so that a
 * burst goes through everything a real visitor's request does: routing, guards, services, the library.
 */
@Injectable()
export class OwnRoutesClient {
  constructor(private readonly host: HttpAdapterHost) {}

  /** GET /solutions/:id: counts a view. */
  async view(base: string, userId: number, solutionId: number): Promise<VisitorChange> {
    const response = await fetch(`${base}/solutions/${solutionId}`, { headers: { 'X-User-Id': String(userId) } });
    if (!response.ok) return refused(response);
    await response.arrayBuffer();
    return { kind: 'view' };
  }

  /** POST (like) or DELETE (unlike) /solutions/:id/like. */
  async like(base: string, userId: number, solutionId: number, like: boolean): Promise<VisitorChange> {
    const response = await fetch(`${base}/solutions/${solutionId}/like`, {
      method: like ? 'POST' : 'DELETE',
      headers: { 'X-User-Id': String(userId) },
    });
    if (!response.ok) return refused(response);
    const { changed } = (await response.json()) as { changed: boolean };
    return { kind: 'like', delta: changed ? (like ? 1 : -1) : 0 };
  }

  /** Where the app listens; 503 when it does not listen (a test's `init()`). */
  baseUrl(): string {
    const address = this.host.httpAdapter.getHttpServer().address() as AddressInfo | string | null;
    if (address === null || typeof address === 'string') {
      throw new ServiceUnavailableException('The app does not listen on a TCP port: a burst has no routes to call.');
    }
    // Listening on every interface: the loopback one is among them.
    const any = address.address === '::' || address.address === '0.0.0.0';
    const host = any ? '127.0.0.1' : address.family === 'IPv6' ? `[${address.address}]` : address.address;
    return `http://${host}:${address.port}`;
  }
}

async function refused(response: Response): Promise<VisitorChange> {
  const body = (await response.json().catch(() => ({}))) as { message?: string };
  return { kind: 'refused', reason: body.message ?? `HTTP ${response.status}` };
}
