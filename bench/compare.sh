#!/usr/bin/env bash
# bench/compare.sh — the performance guard as one number per scenario: the gateway's CPU per
# request in this tree (B) over another revision's (A), both driven at the same fixed rate, in
# alternating slots of the same run, so that the machine's drift hits both sides alike.
#
#   BASE=cbb17ff bench/compare.sh                       # this tree against cbb17ff
#   BASE=HEAD FLAGS_A="--metrics-addr= --access-log=false" bench/compare.sh   # metrics on / off
#   SCEN="chat embeddings" RATE=1500 SLOTS=8 D=4s CONNS=64 bench/compare.sh
#   BASE=cbb17ff REV=e70c555 bench/compare.sh            # two revisions (B = REV, not this tree)
#
# Both gateways run `tollgate run` on their own SQLite store with the demo model served by one
# mockllm, pinned to core GW_CPU (the load generator and the mock share LOAD_CPU), as
# bench/run.sh does. Per scenario it runs SLOTS pairs A,B (B,A every other pair), each slot D of
# load paced at RATE requests/s (a rate both sides serve: CPU per request falls as the rate rises,
# so an unpaced comparison favours the faster side), and prints each pair's B/A and the median.
# FLAGS_A / FLAGS_B are extra `tollgate run` flags of each side (B gets --metrics-addr on its
# own port unless FLAGS_B sets it; A gets it only when its revision has the flag).
set -euo pipefail
cd "$(dirname "$0")/.."

BASE=${BASE:?set BASE to a git revision, e.g. BASE=cbb17ff}
SCEN=${SCEN:-"chat stream embeddings"}
RATE=${RATE:-1500}
SLOTS=${SLOTS:-6}
D=${D:-4s}
CONNS=${CONNS:-64}
GW_CPU=${GW_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
P=${PORT_OFFSET:-0}

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  git worktree remove --force "$tmp/base" >/dev/null 2>&1 || true
  git worktree remove --force "$tmp/rev" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

go build -o bin/ ./cmd/tollgate ./cmd/mockllm ./bench/loadgen
git worktree add --detach -q "$tmp/base" "$BASE"
(cd "$tmp/base" && go build -o "$tmp/a/" ./cmd/tollgate)
bbin=bin/tollgate
if [ -n "${REV:-}" ]; then
  git worktree add --detach -q "$tmp/rev" "$REV"
  (cd "$tmp/rev" && go build -o "$tmp/b/" ./cmd/tollgate)
  bbin=$tmp/b/tollgate
fi

export TOLLGATE_ADMIN_KEY=tga-bench-admin-secret-0123456789abcdefghij
mock=127.0.0.1:$((19600 + P))
taskset -c "$LOAD_CPU" bin/mockllm --listen "$mock" >"$tmp/mock.log" 2>&1 &
pids+=($!)

# start SIDE BIN N FLAGS: a gateway on ports offset by N; sets gwpid, gwurl, gwkey.
start() {
  local side=$1 bin=$2 n=$3 flags=$4 admin k
  admin=127.0.0.1:$((19690 + P + n))
  mkdir -p "$tmp/$side"
  if [[ " $flags " != *" --metrics-addr"* ]] && "$bin" run --help 2>&1 | grep -q -- '-metrics-addr'; then
    flags="$flags --metrics-addr 127.0.0.1:$((19664 + P + n))"
  fi
  # shellcheck disable=SC2086 # flags are words
  taskset -c "$GW_CPU" "$bin" run --db "$tmp/$side/bench.db" --listen 127.0.0.1:$((19680 + P + n)) \
    --admin-addr "$admin" --xds-addr 127.0.0.1:$((19610 + P + n)) --extproc-addr 127.0.0.1:$((19620 + P + n)) \
    --demo-upstream "http://$mock" --log-level error $flags >"$tmp/$side/tollgate.log" 2>&1 &
  gwpid=$!
  pids+=("$gwpid")
  for _ in $(seq 1 300); do
    [ -f "$tmp/$side/.tollgate-demo-key" ] && break
    sleep 0.1
  done
  k=$("$bin" key create --addr "$admin" --alias bench -o json | sed -n 's/.*"secret": *"\([^"]*\)".*/\1/p')
  [ -n "$k" ] || { cat "$tmp/$side/tollgate.log" >&2; echo "compare: gateway $side did not start" >&2; exit 1; }
  gwurl=http://127.0.0.1:$((19680 + P + n)) gwkey=$k
}
start a "$tmp/a/tollgate" 0 "${FLAGS_A:-}"
apid=$gwpid aurl=$gwurl akey=$gwkey
start b "$bbin" 1 "${FLAGS_B:-}"
bpid=$gwpid burl=$gwurl bkey=$gwkey

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
field() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p"; }
# slot PID URL KEY: one slot of load at RATE; prints the CPU µs per request.
slot() {
  local t0 t1 out
  t0=$(ticks "$1")
  out=$(taskset -c "$LOAD_CPU" bin/loadgen -url "$2" -key "$3" -model demo -scenario "$s" -c "$CONNS" -d "$D" -warmup 0s -rate "$RATE")
  t1=$(ticks "$1")
  [ "$(field errors <<<"$out")" = 0 ] || { echo "compare: errors in a slot: $out" >&2; exit 1; }
  awk -v d=$((t1 - t0)) -v hz="$hz" -v n="$(field requests <<<"$out")" 'BEGIN { printf "%.1f", d / hz * 1e6 / n }'
}

echo "compare: A = $BASE ${FLAGS_A:-}, B = ${REV:-this tree} ${FLAGS_B:-}; $CONNS connections at $RATE req/s, $SLOTS pairs of $D; load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| scenario | A CPU µs/req | B CPU µs/req | B/A per pair | median B/A |\n|---|---|---|---|---|\n'
for s in $SCEN; do
  # Warm-up of both sides on this scenario (not measured).
  slot "$apid" "$aurl" "$akey" >/dev/null
  slot "$bpid" "$burl" "$bkey" >/dev/null
  as=() bs=() rs=()
  for i in $(seq 1 "$SLOTS"); do
    if ((i % 2)); then
      a=$(slot "$apid" "$aurl" "$akey")
      b=$(slot "$bpid" "$burl" "$bkey")
    else
      b=$(slot "$bpid" "$burl" "$bkey")
      a=$(slot "$apid" "$aurl" "$akey")
    fi
    as+=("$a") bs+=("$b") rs+=("$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b / a }')")
  done
  med=$(printf '%s\n' "${rs[@]}" | sort -n | awk '{v[NR] = $1} END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
  printf '| %s | %s | %s | %s | **%s** |\n' "$s" "${as[*]}" "${bs[*]}" "${rs[*]}" "$med"
done
