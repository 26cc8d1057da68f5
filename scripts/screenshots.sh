#!/usr/bin/env bash
# Regenerates docs/screenshots/page-desktop.png (README.md's) and page-mobile.png: runs only the browser
# test's screenshot step, which starts the sample app, runs a burst and takes both (needs Redis and
# Chromium, as `npm run test:browser` does). `npm run test:browser` writes them to test-output/browser/.
set -euo pipefail
cd "$(dirname "$0")/.."
COUNTER_SCREENSHOTS_DIR=docs/screenshots npx vitest run --config vitest.browser.config.ts test/browser/sample-app-flush.spec.ts -t 'writes the screenshots'
echo "screenshots: docs/screenshots/page-desktop.png, docs/screenshots/page-mobile.png"
