import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RedisServer } from '../redis-server.js';

const SOURCE = join(dirname(fileURLToPath(import.meta.url)), 'fixed-clock.c');

/**
 * A redis-server whose wall clock the test sets (fixed-clock.c, preloaded): stopped at a time
 * (`setTime`), to the microsecond, or running ahead of the real one (`shiftTime`: its keys then expire
 * as time goes), until `realTime()` gives it the real clock back. For tests of what
 * depends on Redis's clock, such as the bucket a change lands in.
 */
export class FixedClockRedis {
  private constructor(
    readonly server: RedisServer,
    private readonly clockFile: string,
  ) {}

  get url(): string {
    return this.server.url;
  }

  /** Starts the server on the real clock; compiles the shim on first use (with `cc`). */
  static async start(): Promise<FixedClockRedis> {
    const library = compiledShim();
    const clockFile = join(tmpdir(), `nestjs-counter-clock-${process.pid}-${Date.now()}`);
    writeFileSync(clockFile, '');
    const server = await RedisServer.start({ env: { LD_PRELOAD: library, FIXED_CLOCK_FILE: clockFile } });
    return new FixedClockRedis(server, clockFile);
  }

  /** Redis's clock reads `time` (a Date or ms since the epoch), and stays there. */
  setTime(time: Date | number): void {
    const ms = time instanceof Date ? time.getTime() : time;
    this.write(String(Math.round(ms * 1_000)));
  }

  /** Redis's clock runs again, `offsetMs` ahead of the real one (behind, if negative). */
  shiftTime(offsetMs: number): void {
    const microseconds = Math.round(offsetMs * 1_000);
    this.write(microseconds < 0 ? String(microseconds) : `+${microseconds}`);
  }

  realTime(): void {
    this.write('');
  }

  /**
   * Replaces the clock file at once (a rename): written in place, it is empty for a moment, and a server
   * reading it then takes the real clock, which may expire keys the test's clock keeps.
   */
  private write(text: string): void {
    const next = `${this.clockFile}.next`;
    writeFileSync(next, text);
    renameSync(next, this.clockFile);
  }

  async stop(): Promise<void> {
    await this.server.stop();
    rmSync(this.clockFile, { force: true });
  }
}

/** The shim as a shared library, built once per version of its source into the user's cache. */
function compiledShim(): string {
  const source = readFileSync(SOURCE);
  const hash = createHash('sha256').update(source).digest('hex').slice(0, 12);
  const directory = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'nestjs-counter', 'fixed-clock');
  const library = join(directory, `fixed-clock-${hash}.so`);
  if (!existsSync(library)) {
    mkdirSync(directory, { recursive: true });
    const building = `${library}.${process.pid}`;
    execFileSync('cc', ['-shared', '-fPIC', '-O2', '-o', building, SOURCE, '-ldl']);
    // A rename is atomic: two test files building at once never load a half-written library.
    renameSync(building, library);
  }
  return library;
}
