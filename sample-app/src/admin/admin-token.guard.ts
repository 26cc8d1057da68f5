import { createHash, timingSafeEqual } from 'node:crypto';
import {
  Injectable,
  NotFoundException,
  UnauthorizedException,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { ConfigService } from '@nestjs/config';

interface AdminRequest {
  method: string;
  url: string;
  headers: { authorization?: string };
}

/**
 * Lets through the requests that carry the operator's token, `Authorization: Bearer <ADMIN_TOKEN>` (401
 * otherwise). With no ADMIN_TOKEN set, the routes answer 404 as if they did not exist: an app nobody gave
 * a token offers no administration to anyone.
 */
@Injectable()
export class AdminTokenGuard implements CanActivate {
  constructor(private readonly config: ConfigService) {}

  canActivate(context: ExecutionContext): boolean {
    const { method, url, headers } = context.switchToHttp().getRequest<AdminRequest>();
    const token = this.config.get<string>('ADMIN_TOKEN');
    // Nest's own answer to a route it does not have.
    if (!token) throw new NotFoundException(`Cannot ${method} ${url}`);
    const given = /^Bearer (.+)$/.exec(headers.authorization ?? '')?.[1];
    if (given === undefined || !sameSecret(given, token)) {
      throw new UnauthorizedException('Admin routes need "Authorization: Bearer <ADMIN_TOKEN>".');
    }
    return true;
  }
}

/** Compares digests, so that the time a comparison takes tells nothing of the token, whatever the lengths. */
function sameSecret(given: string, expected: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(given), digest(expected));
}
