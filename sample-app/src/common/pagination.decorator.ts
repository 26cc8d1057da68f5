import { BadRequestException, createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { PageRequest } from './page.interface.js';

const DEFAULT_SIZE = 10;
const MAX_SIZE = 100;

/** `?page=&size=` as a PageRequest: page ≥ 1 (default 1), size 1…100 (default 10); 400 otherwise. */
export const Pagination = createParamDecorator((_: unknown, context: ExecutionContext): PageRequest => {
  const { query } = context.switchToHttp().getRequest<{ query: Record<string, unknown> }>();
  return {
    page: integer(query.page, 'page', 1, 1, Number.MAX_SAFE_INTEGER),
    size: integer(query.size, 'size', DEFAULT_SIZE, 1, MAX_SIZE),
  };
});

function integer(raw: unknown, name: string, fallback: number, min: number, max: number): number {
  if (raw === undefined || raw === '') return fallback;
  const value = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new BadRequestException(`"${name}" must be an integer between ${min} and ${max}.`);
  }
  return value;
}
