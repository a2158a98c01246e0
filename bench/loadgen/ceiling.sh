#!/usr/bin/env bash
# bench/loadgen/ceiling.sh — the ceiling of bench/run.sh: loadgen straight to mockllm, both
# pinned to one core as run.sh pins them, with each process's CPU per request.
#
#   bench/loadgen/ceiling.sh                      # the work tree's loadgen and mockllm
#   bench/loadgen/ceiling.sh /tmp/old             # alternating with loadgen and mockllm in /tmp/old
#   ROUNDS=6 D=5s CONNS=64 SCEN="chat stream" bench/loadgen/ceiling.sh /tmp/old
#
# Build an older pair with, e.g.:
#   git worktree add /tmp/w 06f2341 && (cd /tmp/w && go build -o /tmp/old/ ./cmd/mockllm ./bench/loadgen)
#
# Prints one Markdown row per cell. The machine's speed varies, so compare cells of the same
# round; CPU µs/req is the process's user+system time over the cell divided by the requests.
set -euo pipefail
cd "$(dirname "$0")/../.."

ROUNDS=${ROUNDS:-3}
D=${D:-5s}
CONNS=${CONNS:-64}
SCEN=${SCEN:-"chat stream"}
LOAD_CPU=${LOAD_CPU:-1}

new=$(mktemp -d)
trap 'rm -rf "$new"' EXIT
go build -o "$new/" ./cmd/mockllm ./bench/loadgen
dirs=("$new" "$@")

hz=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
field() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p"; }

# cell DIR SCENARIO: one row.
cell() {
  local dir=$1 s=$2 port mp m0 m1 out json n lg l0
  port=$((19600 + RANDOM % 300))
  taskset -c "$LOAD_CPU" "$dir/mockllm" --listen "127.0.0.1:$port" >/dev/null 2>&1 &
  mp=$!
  for _ in $(seq 1 50); do (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
  l0=$(cut -d' ' -f1 /proc/loadavg)
  m0=$(ticks "$mp")
  out=$({ /usr/bin/time -f "TIME %U %S" taskset -c "$LOAD_CPU" "$dir/loadgen" -url "http://127.0.0.1:$port" \
    -model mock-gpt -scenario "$s" -c "$CONNS" -d "$D" -warmup 0s; } 2>&1)
  m1=$(ticks "$mp")
  kill "$mp"
  wait "$mp" 2>/dev/null || true
  json=$(grep '^{' <<<"$out") || { echo "ceiling: $out" >&2; return 1; }
  n=$(field requests <<<"$json")
  lg=$(awk '/^TIME/ {print $2 + $3}' <<<"$out")
  awk -v t="$(date -u +%T)" -v s="$s" -v d="${dir/#$new/work tree}" -v rps="$(field rps <<<"$json")" -v p50="$(field p50_ms <<<"$json")" \
    -v p99="$(field p99_ms <<<"$json")" -v e="$(field errors <<<"$json")" -v n="$n" -v lg="$lg" -v md=$((m1 - m0)) \
    -v hz="$hz" -v l0="$l0" -v l1="$(cut -d' ' -f1 /proc/loadavg)" \
    'BEGIN { printf "| %s | %s | %s | %.0f | %.2f | %.2f | %s | %.1f | %.1f | %s → %s |\n", t, s, d, rps, p50, p99, e, lg * 1e6 / n, md / hz * 1e6 / n, l0, l1 }'
}

printf '| UTC | scenario | binaries | req/s | p50 ms | p99 ms | errors | loadgen CPU µs/req | mockllm CPU µs/req | load |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
for _ in $(seq 1 "$ROUNDS"); do
  for s in $SCEN; do
    for d in "${dirs[@]}"; do cell "$d" "$s"; done
  done
done
