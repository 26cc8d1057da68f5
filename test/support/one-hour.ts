export const HOUR_MS = 3_600_000;

/** The start of the hour `ms` falls in. */
export const hourOf = (ms: number) => Math.floor(ms / HOUR_MS) * HOUR_MS;

/** Waits for the next hour when it starts within `marginMs`, so that what a test does next falls in one hour. */
export async function insideOneHour(marginMs: number): Promise<void> {
  const untilNextHour = hourOf(Date.now()) + HOUR_MS - Date.now();
  if (untilNextHour < marginMs) await new Promise((resolve) => setTimeout(resolve, untilNextHour + 50));
}
