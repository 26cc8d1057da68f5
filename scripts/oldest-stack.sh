#!/usr/bin/env bash
# Runs the type check and the integration suite on the oldest stack the peer ranges accept (Nest 11,
# @nestjs/schedule 6, @nestjs/typeorm 11, TypeORM 0.3, ioredis 5), in a copy of the working tree, so the
# checkout's own node_modules stay on the newest stack.
# Usage: scripts/oldest-stack.sh [vitest arguments…]   (default: the unit and integration projects)
set -euo pipefail
cd "$(dirname "$0")/.."

# Each the lowest version its peer range accepts; the tools that test them follow the same major.
STACK=(
  @nestjs/common@11.0.0
  @nestjs/core@11.0.0
  @nestjs/testing@11.0.0
  @nestjs/platform-express@11.0.0
  @nestjs/config@4.0.0
  @nestjs/schedule@6.0.0
  @nestjs/typeorm@11.0.0
  typeorm@0.3.20
  ioredis@5.4.1 # 5.4.0 prints a debug line on every reply when socketTimeout is set
  @nestjs/terminus@11.0.0
  prom-client@15.0.0
  better-sqlite3@9.6.0 # the newest TypeORM 0.3.20 accepts
)

copy=${OLDEST_STACK_DIR:-${TMPDIR:-/tmp}/nestjs-counter-oldest-stack}
rm -rf "$copy"
mkdir -p "$copy"
# The files git knows of, as they are in the working tree (uncommitted changes included).
git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' file; do [[ -e $file ]] && printf '%s\0' "$file"; done |
  xargs -0 cp --parents -t "$copy"
cd "$copy"
rm -f package-lock.json

for package in "${STACK[@]}"; do
  npm pkg set "devDependencies.${package%@*}=${package##*@}"
done
echo "oldest stack: ${STACK[*]}"
npm install --no-audit --no-fund
npm ls --depth=0 @nestjs/common @nestjs/core @nestjs/schedule @nestjs/typeorm typeorm ioredis

npm run typecheck
(($# > 0)) || set -- --project=unit --project=integration
npx vitest run "$@"
