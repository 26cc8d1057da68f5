import { existsSync } from 'node:fs';

/** Debian's chromium, which scripts/ensure-chromium.sh installs; CHROMIUM_PATH names another. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

/**
 * Whether the browser tests can run. Without Chromium they fail under CI=true (a skipped stage would
 * pass unseen), and elsewhere are skipped with the reason printed.
 */
export function chromiumAvailable(): boolean {
  if (existsSync(CHROMIUM_PATH)) return true;
  const fix = 'run scripts/ensure-chromium.sh (apt-get install chromium), or set CHROMIUM_PATH';
  if (process.env.CI === 'true') throw new Error(`No Chromium at ${CHROMIUM_PATH}, and CI=true: ${fix}.`);
  console.warn(`Skipping the browser tests: no Chromium at ${CHROMIUM_PATH} (${fix}).`);
  return false;
}
