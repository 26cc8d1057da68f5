import { createParamDecorator, UnauthorizedException, type ExecutionContext } from '@nestjs/common';

/** The header naming the demo user a request acts for; a real app would read its session instead. */
export const USER_HEADER = 'x-user-id';

/** The id in the `X-User-Id` header, a positive integer; 401 otherwise. Whether the user exists is the service's check. */
export const SignedInUser = createParamDecorator((_: unknown, context: ExecutionContext): number => {
  const { headers } = context.switchToHttp().getRequest<{ headers: Record<string, string | string[] | undefined> }>();
  const raw = headers[USER_HEADER];
  const id = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(id) || id < 1) throw new UnauthorizedException(notSignedIn());
  return id;
});

/** Says how to sign in: the same sentence for a missing header and for an unknown user. */
export const notSignedIn = () => 'Sign in as a demo user: send "X-User-Id: <id>" with an id from GET /users.';
