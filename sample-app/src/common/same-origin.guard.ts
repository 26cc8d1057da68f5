import { ForbiddenException, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';

type Headers = Record<string, string | string[] | undefined>;

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Refuses state-changing requests another site's page sends (a cross-site form post): those whose
 * `Sec-Fetch-Site` is not same-origin, or whose `Origin` names another host. Requests with neither
 * header (curl, servers) pass, since only browsers send them and only browsers carry a victim's rights.
 */
@Injectable()
export class SameOriginGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const { method, headers } = context.switchToHttp().getRequest<{ method: string; headers: Headers }>();
    if (SAFE_METHODS.has(method)) return true;
    const site = headers['sec-fetch-site'];
    // 'none' is a request the user started themselves (the address bar), not another page's.
    if (site !== undefined && site !== 'same-origin' && site !== 'none') throw refused(`Sec-Fetch-Site: ${site}`);
    const origin = headers.origin;
    if (origin !== undefined && !isSameHost(String(origin), headers.host)) throw refused(`Origin: ${origin}`);
    return true;
  }
}

/** Compares hosts, not schemes, so that the app behind a TLS-terminating proxy accepts its own pages. */
function isSameHost(origin: string, host: string | string[] | undefined): boolean {
  try {
    return typeof host === 'string' && new URL(origin).host === host.toLowerCase();
  } catch {
    return false; // `Origin: null` (a sandboxed frame, a redirect chain) names no site to trust
  }
}

function refused(header: string): ForbiddenException {
  return new ForbiddenException(
    `Cross-site request refused (${header}): state-changing routes accept only the app's own pages, ` +
      'or clients that send no Origin, such as curl.',
  );
}
