#!/usr/bin/env bash
# Builds the package twice from lib/: dist/esm for `import`, dist/cjs for `require` (see package.json's
# exports). Node reads dist/cjs as CommonJS because of the package.json written next to it.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf dist
tsc -p tsconfig.build.json
tsc -p tsconfig.build-cjs.json
echo '{ "type": "commonjs" }' > dist/cjs/package.json
