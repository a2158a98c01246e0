#!/usr/bin/env bash
# The console's one third-party file: Chart.js (MIT), pinned in e2e/package.json
# and e2e/package-lock.json, copied into admin/ui/vendor/ to be embedded.
#   scripts/ui-vendor.sh          npm ci in e2e/ and copy the file and its licence
#   scripts/ui-vendor.sh --check  fail when the committed copy is not the pinned
#                                 version (and, when e2e/node_modules holds it,
#                                 not byte-for-byte the npm file)
set -euo pipefail
cd "$(dirname "$0")/.."

src=e2e/node_modules/chart.js
dst=admin/ui/vendor
want=$(node -e 'console.log(require("./e2e/package-lock.json").packages["node_modules/chart.js"].version)' 2>/dev/null ||
  sed -n '/"node_modules\/chart.js"/,/version/s/.*"version": "\(.*\)".*/\1/p' e2e/package-lock.json)

if [[ "${1:-}" != "--check" ]]; then
  (cd e2e && npm ci --no-audit --no-fund --loglevel=error)
  mkdir -p "$dst"
  cp "$src/dist/chart.umd.min.js" "$dst/chart.umd.min.js"
  cp "$src/LICENSE.md" "$dst/chart.js.LICENSE.md"
  echo "admin/ui/vendor: Chart.js $want"
  exit 0
fi

have=$(head -c 200 "$dst/chart.umd.min.js" | sed -n 's/.*Chart\.js v\([0-9][0-9.]*\).*/\1/p')
if [[ "$have" != "$want" ]]; then
  echo "stale admin/ui/vendor/chart.umd.min.js: Chart.js ${have:-?}, e2e/package-lock.json pins $want (run make ui-vendor)" >&2
  exit 1
fi
if [[ -f "$src/dist/chart.umd.min.js" ]]; then
  for pair in "dist/chart.umd.min.js chart.umd.min.js" "LICENSE.md chart.js.LICENSE.md"; do
    set -- $pair
    if ! cmp -s "$src/$1" "$dst/$2"; then
      echo "stale admin/ui/vendor/$2: differs from the npm package (run make ui-vendor)" >&2
      exit 1
    fi
  done
fi
