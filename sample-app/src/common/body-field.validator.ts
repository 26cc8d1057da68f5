import { BadRequestException } from '@nestjs/common';

type Body = Record<string, unknown> | undefined;

/** A required, non-blank string field of a JSON body, at most `maxLength` characters; 400 otherwise. */
export function stringField(body: Body, name: string, maxLength: number): string {
  const value = body?.[name];
  if (typeof value !== 'string' || value.trim() === '' || value.length > maxLength) {
    throw new BadRequestException(`"${name}" must be a non-empty string of at most ${maxLength} characters.`);
  }
  return value;
}

/** A required boolean field of a JSON body; 400 otherwise. */
export function booleanField(body: Body, name: string): boolean {
  const value = body?.[name];
  if (typeof value !== 'boolean') throw new BadRequestException(`"${name}" must be true or false.`);
  return value;
}

/** An optional positive integer field of a JSON body (an id, a sample size; absent or null → undefined); 400 otherwise. */
export function optionalPositiveIntegerField(body: Body, name: string): number | undefined {
  const value = body?.[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new BadRequestException(`"${name}" must be a positive integer.`);
  }
  return value;
}
