import type { LoggerService } from '@nestjs/common';

export type Level = 'log' | 'error' | 'warn' | 'debug' | 'verbose' | 'fatal';

export interface LogLine {
  level: Level;
  context?: string;
  message: string;
  /** What an error line prints below its message. */
  stack?: string;
}

/** Everything the application logs, as a LoggerService given to Nest receives it. */
export class RecordingLogger implements LoggerService {
  readonly lines: LogLine[] = [];

  error(message: unknown, stack?: string, context?: string): void {
    this.lines.push({ level: 'error', context, message: String(message), stack });
  }
  log(message: unknown, context?: string): void {
    this.lines.push({ level: 'log', context, message: String(message) });
  }
  warn(message: unknown, context?: string): void {
    this.lines.push({ level: 'warn', context, message: String(message) });
  }
  debug(message: unknown, context?: string): void {
    this.lines.push({ level: 'debug', context, message: String(message) });
  }
  verbose(message: unknown, context?: string): void {
    this.lines.push({ level: 'verbose', context, message: String(message) });
  }
  fatal(message: unknown, stack?: string, context?: string): void {
    this.lines.push({ level: 'fatal', context, message: String(message), stack });
  }

  /** The lines an operator sees at Nest's default levels (debug and verbose left out). */
  shown(): LogLine[] {
    return this.lines.filter(({ level }) => level !== 'debug' && level !== 'verbose');
  }

  debugLines(): string[] {
    return this.lines.filter(({ level }) => level === 'debug').map(({ message }) => message);
  }
}
