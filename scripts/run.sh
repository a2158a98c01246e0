#!/usr/bin/env bash
# make run: the mock provider plus `tollgate run` with the demo model and key.
# State lives in .tollgate/ (delete it to start over). Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."

mkdir -p .tollgate
MOCK_ADDR=${MOCK_ADDR:-127.0.0.1:9400}
LISTEN=${LISTEN:-127.0.0.1:8080}

bin/mockllm --listen "$MOCK_ADDR" &
mock=$!
trap 'kill "$mock" 2>/dev/null || true; wait "$mock" 2>/dev/null || true' EXIT

# Wait for the mock provider to answer (bounded).
for _ in $(seq 1 50); do
  if (exec 3<>"/dev/tcp/${MOCK_ADDR%:*}/${MOCK_ADDR##*:}") 2>/dev/null; then break; fi
  sleep 0.1
done

bin/tollgate run --db .tollgate/tollgate.db --listen "$LISTEN" --demo-upstream "http://$MOCK_ADDR" "$@"
