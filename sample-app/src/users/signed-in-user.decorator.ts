import { createParamDecorator, UnauthorizedException, type ExecutionContext } from '@nestjs/common';

/** The header naming the demo user a request acts for; a real app would read its session instead. */
export const USER_HEADER = 'x-user-id';

type Headers = Record<string, string | string[] | undefined>;

function userIdOf(context: ExecutionContext): number | undefined {
  const { headers } = context.switchToHttp().getRequest<{ headers: Headers }>();
  const raw = headers[USER_HEADER];
  if (raw === undefined) return undefined;
  const id = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(id) || id < 1) throw new UnauthorizedException(notSignedIn());
  return id;
}

/** The id in the `X-User-Id` header, a positive integer; 401 otherwise. Whether the user exists is the service's check. */
export const SignedInUser = createParamDecorator((_: unknown, context: ExecutionContext): number => {
  const id = userIdOf(context);
  if (id === undefined) throw new UnauthorizedException(notSignedIn());
  return id;
});

/** As SignedInUser, but undefined without the header: for what anyone may do, credited when signed in. */
export const OptionalSignedInUser = createParamDecorator((_: unknown, context: ExecutionContext): number | undefined =>
  userIdOf(context),
);

/** Says how to sign in: the same sentence for a missing header and for an unknown user. */
export const notSignedIn = () => 'Sign in as a demo user: send "X-User-Id: <id>" with an id from GET /users.';
