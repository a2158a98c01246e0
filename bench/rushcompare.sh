#!/usr/bin/env bash
# bench/rushcompare.sh — the rush (issue 20) as an A/B: two revisions of the gateway, each
# started fresh for every slot (the rush's cost includes accepting and dialling its connections,
# and its peak RSS is that of a new process), in alternating order (A,B then B,A), so that the
# machine's drift hits both sides alike.
#
#   BASE=main bench/rushcompare.sh                      # this tree (B) against main (A)
#   BASE=main REV=abc123 bench/rushcompare.sh           # two revisions
#   A_BIN=/path/tollgate B_BIN=/path/tollgate bench/rushcompare.sh   # two binaries
#   RATE=2000 SLOTS=4 RUSH_D=15s RUSH_CONNS=5000 RUSH_LATENCY=1s PORT_OFFSET=900
#   PERF=1                                              # also count the gateway's system calls
#   PROF=DIR                                            # CPU profiles of the slots: DIR/cpu-SIDE-PAIR.pprof
#   A_BIN=bin/tollgate ENV_B=GODEBUG=gcshrinkstackoff=1   # one binary, two environments
#
# RATE (requests/s over all connections; 0: unpaced, as bench/run.sh's rush) fixes the load, so
# that CPU per request compares at the same rate (it falls as the rate rises). Per slot and side:
# req/s, p50, p99, errors, the gateway's CPU µs per request (user + system over the slot), its
# peak RSS; then the median per side and of the per-pair B/A ratios of CPU per request. With
# PERF=1, the system calls per request of each side (perf stat over the slot, top ten).
#
# The gateway is pinned to core GW_CPU; the mock and the load generator share LOAD_CPU. Ports:
# 17801-17859 + PORT_OFFSET (apart from bench/run.sh's and bench/compare.sh's).
set -euo pipefail
cd "$(dirname "$0")/.."

RATE=${RATE:-2000}
SLOTS=${SLOTS:-4}
RUSH_D=${RUSH_D:-15s}
RUSH_CONNS=${RUSH_CONNS:-5000}
RUSH_LATENCY=${RUSH_LATENCY:-1s}
GW_CPU=${GW_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
P=${PORT_OFFSET:-0}
ENV_A=${ENV_A:-} ENV_B=${ENV_B:-}

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ ! -f "$tmp/gw.pid" ] || kill "$(cat "$tmp/gw.pid")" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

go build -o bin/ ./cmd/tollgate ./cmd/mockllm ./bench/loadgen
# build REV DIR: the gateway of revision REV, built from `git archive` into DIR.
build() {
  mkdir -p "$2/src"
  git archive "$1" | tar -x -C "$2/src"
  (cd "$2/src" && go build -o "$2/" ./cmd/tollgate)
}
abin=${A_BIN:-}
if [ -z "$abin" ]; then
  build "${BASE:?set BASE to a git revision, or A_BIN to a binary}" "$tmp/a"
  abin=$tmp/a/tollgate
fi
bbin=${B_BIN:-bin/tollgate}
if [ -z "${B_BIN:-}" ] && [ -n "${REV:-}" ]; then
  build "$REV" "$tmp/b"
  bbin=$tmp/b/tollgate
fi
cp "$bbin" "$tmp/b.bin" # both copied: a binary fresh from the linker maps more of its file
cp "$abin" "$tmp/a.bin"

export TOLLGATE_ADMIN_KEY=tga-bench-admin-secret-0123456789abcdefghij
mock=127.0.0.1:$((17801 + P))
taskset -c "$LOAD_CPU" bin/mockllm --listen "$mock" --latency "$RUSH_LATENCY" >"$tmp/mock.log" 2>&1 &
pids+=($!)

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
sticks() { awk '{print $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
field() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p"; }

# rush SIDE N: a fresh gateway of SIDE (a or b), one rush at RATE, the gateway stopped; prints
# "rps p50 p99 errors cpu_us rss_mib sys_percent" and, with PERF=1, leaves the system calls in $tmp/SIDE.perf.
rush() {
  # Each run on ports of its own (the run number N: 20 * (N % 3) further): the
  # previous gateway's port may not be free yet.
  local side=$1 Q=$((P + 20 * ($2 % 3)))
  local dir=$tmp/$1 admin=127.0.0.1:$((17819 + Q)) url=http://127.0.0.1:$((17816 + Q)) k pid t0 t1 out perfpid= profpid=
  rm -rf "$dir"
  mkdir -p "$dir"
  local envs=$ENV_A
  [ "$side" = a ] || envs=$ENV_B
  # shellcheck disable=SC2086 # ENV_A and ENV_B are lists of assignments
  env $envs taskset -c "$GW_CPU" "$tmp/$side.bin" run --db "$dir/bench.db" --listen 127.0.0.1:$((17816 + Q)) \
    --admin-addr "$admin" --xds-addr 127.0.0.1:$((17804 + Q)) --extproc-addr 127.0.0.1:$((17807 + Q)) \
    --metrics-addr 127.0.0.1:$((17810 + Q)) --demo-upstream "http://$mock" --log-level error \
    ${PROF:+--debug-addr 127.0.0.1:$((17813 + Q))} >"$dir/tollgate.log" 2>&1 &
  pid=$!
  echo "$pid" >"$tmp/gw.pid"
  for _ in $(seq 1 300); do
    [ -f "$dir/.tollgate-demo-key" ] && break
    sleep 0.1
  done
  k=
  for _ in $(seq 1 20); do # the admin API may come up after the demo key is written
    k=$(bin/tollgate key create --addr "$admin" --alias bench -o json 2>"$dir/key.err" | sed -n 's/.*"secret": *"\([^"]*\)".*/\1/p' || true)
    [ -z "$k" ] || break
    sleep 0.5
  done
  [ -n "$k" ] || { cat "$dir/tollgate.log" >&2; cat "$dir/key.err" >&2; echo "rushcompare: gateway $side did not start" >&2; kill "$pid"; return 1; }
  sleep 1
  if [ "${PERF:-}" = 1 ]; then
    perf stat -x, -e 'syscalls:sys_enter_*' -p "$pid" -o "$tmp/$side.perfraw" &
    perfpid=$!
  fi
  if [ -n "${PROF:-}" ]; then
    mkdir -p "$PROF"
    curl -fsS -o "$PROF/cpu-$side-$slotno.pprof" "http://127.0.0.1:$((17813 + Q))/debug/pprof/profile?seconds=$((${RUSH_D%s} - 1))" &
    profpid=$!
  fi
  t0=$(ticks "$pid") s0=$(sticks "$pid")
  out=$(taskset -c "$LOAD_CPU" bin/loadgen -url "$url" -key "$k" -model demo -scenario chat -c "$RUSH_CONNS" -d "$RUSH_D" -warmup 0s -rate "$RATE")
  t1=$(ticks "$pid") s1=$(sticks "$pid")
  [ -z "$profpid" ] || wait "$profpid" || true
  [ "$(field errors <<<"$out")" = 0 ] || echo "rushcompare: $side: $out" >&2
  if [ -n "$perfpid" ]; then
    kill -INT "$perfpid"
    wait "$perfpid" || true
    awk -F, -v n="$(field requests <<<"$out")" '$1 ~ /^[0-9]+$/ && $1 > 0 {sub("syscalls:sys_enter_", "", $3); printf "%s %.2f\n", $3, $1 / n}' \
      "$tmp/$side.perfraw" | sort -k2 -n -r | awk 'NR <= 10 || $1 ~ /^(connect|close|accept4)$/' | tr '\n' ' ' >"$tmp/$side.perf"
  fi
  [ -f "/proc/$pid/status" ] || { tail -20 "$dir/tollgate.log" >&2; echo "rushcompare: gateway $side ended during the rush" >&2; return 1; }
  awk -v d=$((t1 - t0)) -v hz="$hz" -v n="$(field requests <<<"$out")" -v rps="$(field rps <<<"$out")" \
    -v sys=$((s1 - s0)) -v p50="$(field p50_ms <<<"$out")" -v p99="$(field p99_ms <<<"$out")" -v e="$(field errors <<<"$out")" \
    '/VmHWM/ {h = $2} END { printf "%.0f %.0f %.0f %s %.1f %.1f %.0f\n", rps, p50, p99, e, d / hz * 1e6 / n, h / 1024, 100 * sys / d }' "/proc/$pid/status"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
}

median() { sort -n | awk '{v[NR] = $1} END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "rushcompare: A = ${A_BIN:-${BASE:-}}, B = ${B_BIN:-${REV:-this tree}}; $RUSH_CONNS connections at rate $RATE (0: unpaced), mock latency $RUSH_LATENCY, $SLOTS pairs of $RUSH_D; load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| pair | side | req/s | p50 ms | p99 ms | errors | CPU µs/req | system %% | peak RSS MiB | load |\n|---|---|---|---|---|---|---|---|---|---|\n'
run=0 acpu=() bcpu=() ratios=() arss=() brss=() ap99=() bp99=()
for i in $(seq 1 "$SLOTS"); do
  slotno=$i
  order="a b"
  ((i % 2)) || order="b a"
  for side in $order; do
    run=$((run + 1))
    read -r rps p50 p99 errs cpu rss sys < <(rush "$side" "$run") || true
    [ -n "${cpu:-}" ] || { echo "rushcompare: no result for $side" >&2; exit 1; }
    printf '| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$i" "${side^^}" "$rps" "$p50" "$p99" "$errs" "$cpu" "$sys" "$rss" "$(cut -d' ' -f1 /proc/loadavg)"
    [ "${PERF:-}" != 1 ] || echo "  system calls per request, ${side^^}: $(cat "$tmp/$side.perf")"
    if [ "$side" = a ]; then acpu+=("$cpu") arss+=("$rss") ap99+=("$p99"); else bcpu+=("$cpu") brss+=("$rss") bp99+=("$p99"); fi
  done
  ratios+=("$(awk -v a="${acpu[-1]}" -v b="${bcpu[-1]}" 'BEGIN { printf "%.3f", b / a }')")
done
echo
echo "median CPU µs/req A $(printf '%s\n' "${acpu[@]}" | median), B $(printf '%s\n' "${bcpu[@]}" | median); B/A per pair ${ratios[*]}, median **$(printf '%s\n' "${ratios[@]}" | median)**"
echo "median p99 ms A $(printf '%s\n' "${ap99[@]}" | median), B $(printf '%s\n' "${bp99[@]}" | median); median peak RSS MiB A $(printf '%s\n' "${arss[@]}" | median), B $(printf '%s\n' "${brss[@]}" | median)"
