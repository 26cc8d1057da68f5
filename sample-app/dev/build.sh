#!/usr/bin/env bash
# `npm start`'s build, one line per step: the library (dist/), then the sample app and its launcher
# (sample-app/dist/, sample-app/dev/dist/). tsc prints nothing unless a file does not compile.
set -euo pipefail
cd "$(dirname "$0")/../.."
PATH=$PWD/node_modules/.bin:$PATH

echo 'npm start: building the library (tsc)…'
scripts/build.sh
echo 'npm start: building the sample app (tsc)…'
tsc -p sample-app/tsconfig.json
tsc -p sample-app/dev/tsconfig.json
