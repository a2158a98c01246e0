#!/usr/bin/env bash
# bench/run.sh — throughput, latency percentiles, server CPU per request and peak RSS,
# direct to mockllm versus through Tollgate's built-in data plane with full accounting.
#
#   bench/run.sh                 # 10 s per cell, 64 and 1000 connections, chat/stream/embeddings
#   D=5s CONNS="64" SCEN="chat" bench/run.sh
#
# The gateway is pinned to core 0 (GOMAXPROCS follows the affinity mask); mockllm and the
# load generator share core 1. CPU per request = the gateway's user+system time over the
# run divided by the requests it served. Prints a Markdown table (bench/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."

D=${D:-10s}
CONNS=${CONNS:-"64 1000"}
SCEN=${SCEN:-"chat stream embeddings"}
GW_CPU=${GW_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}

go build -o bin/ ./cmd/tollgate ./cmd/mockllm ./bench/loadgen

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

mock=127.0.0.1:19400
gw=127.0.0.1:18080
admin=127.0.0.1:19090
export TOLLGATE_ADMIN_KEY=tga-bench-admin-secret-0123456789abcdefghij
export TOLLGATE_ADDR=$admin

taskset -c "$LOAD_CPU" bin/mockllm --listen "$mock" >"$tmp/mock.log" 2>&1 &
pids+=($!)
taskset -c "$GW_CPU" bin/tollgate run --db "$tmp/bench.db" --listen "$gw" --admin-addr "$admin" \
  --xds-addr 127.0.0.1:19000 --extproc-addr 127.0.0.1:19051 --demo-upstream "http://$mock" \
  --log-level error >"$tmp/tollgate.log" 2>&1 &
gwpid=$!
pids+=($gwpid)

for _ in $(seq 1 300); do
  [ -f "$tmp/.tollgate-demo-key" ] && break
  sleep 0.1
done
[ -f "$tmp/.tollgate-demo-key" ] || { cat "$tmp/tollgate.log"; echo "bench: tollgate did not start" >&2; exit 1; }
# A key without a budget, so the benchmark measures the gateway, not the demo budget.
key=$(bin/tollgate key create --alias bench -o json | sed -n 's/.*"secret": *"\([^"]*\)".*/\1/p')
[ -n "$key" ] || { echo "bench: could not create the bench key" >&2; exit 1; }
sleep 1

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
field() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p"; }

printf '| scenario | conns | target | req/s | p50 ms | p99 ms | errors | gateway CPU µs/req | gateway peak RSS MiB |\n'
printf '|---|---|---|---|---|---|---|---|---|\n'
for s in $SCEN; do
  for c in $CONNS; do
    out=$(taskset -c "$LOAD_CPU" bin/loadgen -url "http://$mock" -model mock-gpt -scenario "$s" -c "$c" -d "$D")
    printf '| %s | %s | direct to mockllm | %.0f | %.2f | %.2f | %s | - | - |\n' "$s" "$c" \
      "$(field rps <<<"$out")" "$(field p50_ms <<<"$out")" "$(field p99_ms <<<"$out")" "$(field errors <<<"$out")"

    t0=$(ticks "$gwpid")
    out=$(taskset -c "$LOAD_CPU" bin/loadgen -url "http://$gw" -key "$key" -model demo -scenario "$s" -c "$c" -d "$D" -warmup 0s)
    t1=$(ticks "$gwpid")
    reqs=$(field requests <<<"$out")
    cpu=$(awk -v d=$((t1 - t0)) -v hz="$hz" -v n="$reqs" 'BEGIN { if (n > 0) printf "%.1f", d / hz * 1e6 / n; else print "-" }')
    rss=$(awk '/VmHWM/ {printf "%.1f", $2/1024}' "/proc/$gwpid/status")
    printf '| %s | %s | tollgate (built-in) | %.0f | %.2f | %.2f | %s | %s | %s |\n' "$s" "$c" \
      "$(field rps <<<"$out")" "$(field p50_ms <<<"$out")" "$(field p99_ms <<<"$out")" "$(field errors <<<"$out")" "$cpu" "$rss"
  done
done
