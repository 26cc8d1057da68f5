export const HOUR_MS = 3_600_000;

/** The start of the hour `ms` falls in. */
export const hourOf = (ms: number) => Math.floor(ms / HOUR_MS) * HOUR_MS;

/** Waits for the next hour when it starts within `marginMs`, so that what a test does next falls in one hour. */
export function insideOneHour(marginMs: number): Promise<void> {
  return insideOnePeriod(HOUR_MS, marginMs);
}

/** Waits for the next UTC day when it starts within `marginMs`, so that what a test does next falls in one day. */
export function insideOneDay(marginMs: number): Promise<void> {
  return insideOnePeriod(24 * HOUR_MS, marginMs);
}

async function insideOnePeriod(lengthMs: number, marginMs: number): Promise<void> {
  const left = lengthMs - (Date.now() % lengthMs);
  if (left < marginMs) await new Promise((resolve) => setTimeout(resolve, left + 50));
}
