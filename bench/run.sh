#!/usr/bin/env bash
# bench/run.sh — throughput, latency percentiles, server CPU per request and peak RSS,
# direct to mockllm versus through Tollgate's built-in data plane with full accounting.
#
#   bench/run.sh                 # 10 s per cell, 64 and 1000 connections, chat/stream/embeddings
#   D=5s CONNS="64" SCEN="chat" bench/run.sh
#   REPEAT=5 D=5s CONNS=64 SCEN=chat bench/run.sh   # nginx/tollgate pairs 5 times per cell
#   WARMUP=3s                    # unmeasured chat load on each proxy before the first cell
#   PORT_OFFSET=100              # every port of the run moved by 100
#   SCEN=rush                    # the rush (issue 20): RUSH_CONNS=5000 connections opened at once
#                                # and held, chat back to back for RUSH_D=30s to a mock answering
#                                # after RUSH_LATENCY=1s; direct, nginx and a fresh gateway
#   RUSH_TARGETS="direct nginx floor tollgate"  # which of the four the rush measures; floor is
#                                # loadgen -floor (bench/loadgen/floor.go), the least a Go proxy
#                                # with a goroutine per connection does, pinned as the gateway
#   RUSH_PROF=DIR                # the rush's gateway serves pprof (--debug-addr); DIR gets a CPU
#                                # profile of its cell, and heap and goroutine profiles halfway
#   GUARD=pii                    # also a built-in pre guardrail of this kind (pii or secrets,
#                                # action redact) attached to a second key of the same gateway,
#                                # measured between two cells of the plain key in every repetition,
#                                # with PROMPT_BYTES=4096 prompts for every target unless set: last
#                                # column = with / the mean of the two without (issue 32)
#   PROMPT_BYTES=4096            # every request's prompt (or input) is this many bytes of prose
#   CACHE=exact                  # also a model group `cached` on the same deployment with this
#                                # response cache (match all), measured after the plain cell in every
#                                # repetition: hits (one prompt, stored by its first request), misses
#                                # (loadgen -unique: every prompt new), then the plain cell again;
#                                # last column = hit / off and miss / off, off the mean of the two
#                                # plain cells (issue 33: a miss ≤ 1.05, a hit below a miss). The
#                                # group's name is no longer than the mock's model (mock-gpt), as
#                                # demo's: a longer one makes every reply of the group a copy (its
#                                # model renamed, translate/reply_model.go), cache or not
#   CACHE=semantic               # the same with a semantic cache (in-process index, embedding
#                                # model group demo: the mock's embeddings) and one more cell, the
#                                # semantic hit: chat's prompt sent as content parts (loadgen
#                                # -scenario chat-parts), whose exact key misses and whose prompt
#                                # text is the stored one's; a miss embeds its prompt (an
#                                # embeddings call to the mock and its ledger row), as a semantic
#                                # hit does. The mock's embeddings have SEM_DIMS=64 dimensions (its
#                                # default 8 makes random prompts' vectors near enough to hit at
#                                # 0.95 among the index's 4,096 per namespace); the entry of the hit
#                                # cells is stored again (Cache-Control: no-cache) before them in
#                                # every repetition, the misses having pushed its vector out
#   CACHE_PACE=0.6               # CACHE=exact: the misses are measured again paced at this share
#                                # of the plain cell's rate, between two plain cells at that rate
#                                # (paced miss/off: both sides at one rate, as compare.sh)
#   METRICS_AB=1                 # also a second gateway with metrics and the access log off
#                                # (--metrics-addr= --access-log=false), measured right after
#                                # the first in every repetition: last column = on / off
#
# The gateway is pinned to core 0 (GOMAXPROCS follows the affinity mask); mockllm and the
# load generator share core 1. CPU per request = the gateway's user+system time over the
# run divided by the requests it served. Prints a Markdown table (bench/README.md).
#
# Each cell also runs nginx as a plain reverse proxy to mockllm, pinned the same way
# (installed from Debian's nginx-light when missing and run as root; skipped otherwise):
# the issue's goals were set against nginx's CPU per request on a quiet machine (18 µs),
# and this machine's speed varies by 2x within minutes, so "gateway CPU / nginx CPU" in
# the same run is the number that compares. nginx runs twice per cell: as fast as the
# load generator drives it, and paced (loadgen -rate) at the rate the gateway served,
# since its CPU per request falls as its rate rises.
set -euo pipefail
cd "$(dirname "$0")/.."

D=${D:-10s}
CONNS=${CONNS:-"64 1000"}
SCEN=${SCEN:-"chat stream embeddings"}
REPEAT=${REPEAT:-1}
GW_CPU=${GW_CPU:-0}
GUARD=${GUARD:-}
CACHE=${CACHE:-}
case "$CACHE" in "" | exact | semantic) ;; *) echo "bench: CACHE=$CACHE: exact or semantic" >&2; exit 2 ;; esac
PROMPT_BYTES=${PROMPT_BYTES:-${GUARD:+4096}}
LOAD_CPU=${LOAD_CPU:-1}

go build -o bin/ ./cmd/tollgate ./cmd/mockllm ./bench/loadgen

if ! command -v nginx >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
  echo "bench: installing nginx-light from Debian packages for the baseline rows" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx-light >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx-light >/dev/null 2>&1; } || true
  (service nginx stop || true) >/dev/null 2>&1
fi

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# PORT_OFFSET moves every port (when another run holds them).
P=${PORT_OFFSET:-0}
mock=127.0.0.1:$((19400 + P))
gw=127.0.0.1:$((18080 + P))
ngx=127.0.0.1:$((18090 + P))
admin=127.0.0.1:$((19090 + P))
# The rush's own mock (answering after RUSH_LATENCY), nginx server and gateway.
slowmock=127.0.0.1:$((19401 + P))
ngxrush=127.0.0.1:$((18092 + P))
gwrush=127.0.0.1:$((18082 + P))
floorrush=127.0.0.1:$((18083 + P))
adminrush=127.0.0.1:$((19092 + P))
RUSH_CONNS=${RUSH_CONNS:-5000}
RUSH_D=${RUSH_D:-30s}
RUSH_LATENCY=${RUSH_LATENCY:-1s}
rush=
case " $SCEN " in *" rush "*) rush=1 ;; esac
export TOLLGATE_ADMIN_KEY=tga-bench-admin-secret-0123456789abcdefghij
export TOLLGATE_ADDR=$admin

mockflags=()
[ "$CACHE" = semantic ] && mockflags=(--embedding-dimensions "${SEM_DIMS:-64}")
taskset -c "$LOAD_CPU" bin/mockllm --listen "$mock" "${mockflags[@]}" >"$tmp/mock.log" 2>&1 &
pids+=($!)
taskset -c "$GW_CPU" bin/tollgate run --db "$tmp/bench.db" --listen "$gw" --admin-addr "$admin" \
  --xds-addr 127.0.0.1:$((19000 + P)) --extproc-addr 127.0.0.1:$((19051 + P)) --metrics-addr 127.0.0.1:$((19464 + P)) \
  --demo-upstream "http://$mock" --log-level error >"$tmp/tollgate.log" 2>&1 &
gwpid=$!
pids+=($gwpid)
# The same gateway without metrics (METRICS_AB=1): its own store and ports.
gw2=127.0.0.1:$((18081 + P))
admin2=127.0.0.1:$((19091 + P))
gw2pid=
if [ "${METRICS_AB:-}" = 1 ]; then
  mkdir -p "$tmp/off"
  taskset -c "$GW_CPU" bin/tollgate run --db "$tmp/off/bench.db" --listen "$gw2" --admin-addr "$admin2" \
    --xds-addr 127.0.0.1:$((19001 + P)) --extproc-addr 127.0.0.1:$((19052 + P)) --metrics-addr= --access-log=false \
    --demo-upstream "http://$mock" --log-level error >"$tmp/off/tollgate.log" 2>&1 &
  gw2pid=$!
  pids+=($gw2pid)
fi

nginx_pid=
if command -v nginx >/dev/null 2>&1; then
  mkdir -p "$tmp/nginx"
  cat >"$tmp/nginx/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
worker_rlimit_nofile 40000;
error_log $tmp/nginx/error.log error;
pid $tmp/nginx/nginx.pid;
events { worker_connections 20000; }
http {
  access_log off;
  client_body_temp_path $tmp/nginx/body;
  proxy_temp_path $tmp/nginx/proxy;
  fastcgi_temp_path $tmp/nginx/fastcgi;
  uwsgi_temp_path $tmp/nginx/uwsgi;
  scgi_temp_path $tmp/nginx/scgi;
  upstream mock { server $mock; keepalive 1024; }
  server {
    listen $ngx;
    location / {
      proxy_pass http://mock;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
  upstream slowmock { server $slowmock; keepalive 8192; }
  server {
    listen $ngxrush backlog=8192;
    location / {
      proxy_pass http://slowmock;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
}
EOF
  taskset -c "$GW_CPU" nginx -c "$tmp/nginx/nginx.conf" -p "$tmp/nginx" 2>/dev/null &
  nginx_pid=$!
  pids+=("$nginx_pid")
fi

for _ in $(seq 1 300); do
  [ -f "$tmp/.tollgate-demo-key" ] && break
  sleep 0.1
done
[ -f "$tmp/.tollgate-demo-key" ] || { cat "$tmp/tollgate.log"; echo "bench: tollgate did not start" >&2; exit 1; }
# A key without a budget, so the benchmark measures the gateway, not the demo budget.
key=$(bin/tollgate key create --alias bench -o json | sed -n 's/.*"secret": *"\([^"]*\)".*/\1/p')
[ -n "$key" ] || { echo "bench: could not create the bench key" >&2; exit 1; }
# gwkey DIR ADMIN: waits for the gateway whose --db is in DIR to serve, then
# prints a new key of it without a budget (or fails with the gateway's log).
gwkey() {
  local k
  for _ in $(seq 1 300); do
    [ -f "$1/.tollgate-demo-key" ] && break
    sleep 0.1
  done
  k=$(bin/tollgate key create --addr "$2" --alias bench -o json | sed -n 's/.*"secret": *"\([^"]*\)".*/\1/p')
  [ -n "$k" ] || { cat "$1/tollgate.log" >&2; echo "bench: could not create a key on the gateway at $2" >&2; return 1; }
  echo "$k"
}
# GUARD: a second key whose requests go through a pre guardrail; one
# request first, to see the gateway apply it (x-tollgate-guardrails).
keyg=
if [ -n "$GUARD" ]; then
  bin/tollgate guardrail create "bench-$GUARD" --kind "$GUARD" --action redact --on pre >/dev/null
  keyg=$(bin/tollgate key create --id bench-guard --alias bench-guard --guardrails "bench-$GUARD" -o json | sed -n 's/.*"secret": *"\([^"]*\)".*/\1/p')
  [ -n "$keyg" ] || { echo "bench: could not create the guardrail's key" >&2; exit 1; }
  for _ in $(seq 1 50); do
    hdr=$(curl -sS -D - -o /dev/null -H "Authorization: Bearer $keyg" -H 'Content-Type: application/json' \
      -d '{"model":"demo","messages":[{"role":"user","content":"hi"}]}' "http://$gw/v1/chat/completions" | tr -d '\r' | grep -i '^x-tollgate-guardrails:' || true)
    [ -n "$hdr" ] && break
    sleep 0.1
  done
  [ -n "$hdr" ] || { echo "bench: the gateway did not apply guardrail bench-$GUARD" >&2; exit 1; }
fi
# CACHE: a second group on the demo deployment, cached, priced as demo; one
# request twice first, to see the gateway answer the second from the cache
# (semantic: then the stored prompt as content parts, a semantic hit). The
# hit cells' prompt is stored by a request of chat's body first.
if [ -n "$CACHE" ]; then
  bin/tollgate price set cached --input 1 --output 2 >/dev/null
  semflags=()
  [ "$CACHE" = semantic ] && semflags=(--cache-embedding-model demo)
  bin/tollgate model create cached --deployments demo-mock --default-max-tokens 256 \
    --cache "$CACHE" --cache-match all "${semflags[@]}" >/dev/null
  # cachecheck BODY WANT: sends BODY until the reply's x-tollgate-cache starts with WANT.
  cachecheck() {
    for _ in $(seq 1 50); do
      hdr=$(curl -sS -D - -o /dev/null -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
        -d "$1" "http://$gw/v1/chat/completions" | tr -d '\r' | grep -i "^x-tollgate-cache: $2" || true)
      [ -n "$hdr" ] && return 0
      sleep 0.1
    done
    echo "bench: the gateway did not answer cached from its cache ($2)" >&2
    exit 1
  }
  cachecheck '{"model":"cached","messages":[{"role":"user","content":"bench cache check"}]}' hit
  if [ "$CACHE" = semantic ]; then
    cachecheck '{"model":"cached","messages":[{"role":"user","content":[{"type":"text","text":"bench cache check"}]}]}' 'hit; semantic'
  fi
  # The hit cells' entry: loadgen's chat body (store it again: restore).
  hitbody='{"model":"cached","messages":[{"role":"user","content":"Say hello to the benchmark"}],"max_tokens":16}'
  restore() {
    curl -fsS -o /dev/null -H "Authorization: Bearer $key" -H 'Content-Type: application/json' -H 'Cache-Control: no-cache' \
      -d "$hitbody" "http://$gw/v1/chat/completions"
  }
  cachecheck "$hitbody" hit
fi
key2=
if [ -n "$gw2pid" ]; then
  key2=$(gwkey "$tmp/off" "$admin2")
fi
sleep 1

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
field() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p"; }

# cell TARGET URL PID KEY MODEL [RATE]: sets row (one table row without its
# last two columns), cpu (µs/req) and rps; RATE paces the load generator,
# LGFLAGS are more of its flags (-unique).
split= # the rush's rows of its latency split (cell)
cell() {
  local target=$1 url=$2 pid=$3 key=$4 model=$5 rate=${6:-0} t0 t1 out reqs rss=-
  cpu=-
  [ -n "$pid" ] && t0=$(ticks "$pid")
  out=$(taskset -c "$LOAD_CPU" bin/loadgen -url "$url" ${key:+-key "$key"} -model "$model" -scenario "${s/rush/chat}" -c "$c" -d "$D" -warmup 0s -rate "$rate" ${PROMPT_BYTES:+-prompt-bytes "$PROMPT_BYTES"} ${LGFLAGS:-})
  if [ -n "$pid" ]; then
    t1=$(ticks "$pid")
    reqs=$(field requests <<<"$out")
    cpu=$(awk -v d=$((t1 - t0)) -v hz="$hz" -v n="$reqs" 'BEGIN { if (n > 0) printf "%.1f", d / hz * 1e6 / n; else print "-" }')
    # The peak, then what it is made of at the end of the cell: anonymous
    # memory (heap, stacks, SQLite's cache) and pages of the binary's file.
    rss=$(awk '/VmHWM/ {h = $2} /RssAnon/ {a = $2} /RssFile/ {f = $2}
      END {printf "%.1f (%.1f + %.1f)", h/1024, a/1024, f/1024}' "/proc/$pid/status")
  fi
  rps=$(field rps <<<"$out")
  if [ "$s" = rush ]; then
    split+=$(printf '| %s | %.0f | %.0f | %.0f | %.0f |\n' "$target" "$(field first_p50_ms <<<"$out")" \
      "$(field first_p99_ms <<<"$out")" "$(field later_p50_ms <<<"$out")" "$(field later_p99_ms <<<"$out")")$'\n'
  fi
  row=$(printf '| %s | %s | %s | %.0f | %.2f | %.2f | %s | %s | %s |' "$s" "$c" "$target" \
    "$rps" "$(field p50_ms <<<"$out")" "$(field p99_ms <<<"$out")" "$(field errors <<<"$out")" "$cpu" "$rss")
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "-" && b != "-" && b > 0) printf "%.2f", a / b; else print "-" }'; }

# Warm-up, not measured: each proxy serves a few seconds of chat first, so
# that the first cell does not carry its start (first connections, pools,
# the ledger file, the heap growing to its working size).
WARMUP=${WARMUP:-3s}
taskset -c "$LOAD_CPU" bin/loadgen -url "http://$gw" -key "$key" -model demo -scenario chat -c 64 -d "$WARMUP" -warmup 0s >/dev/null
if [ -n "$gw2pid" ]; then
  taskset -c "$LOAD_CPU" bin/loadgen -url "http://$gw2" -key "$key2" -model demo -scenario chat -c 64 -d "$WARMUP" -warmup 0s >/dev/null
fi
if [ -n "$nginx_pid" ]; then
  taskset -c "$LOAD_CPU" bin/loadgen -url "http://$ngx" -model mock-gpt -scenario chat -c 64 -d "$WARMUP" -warmup 0s >/dev/null
fi

printf '| scenario | conns | target | req/s | p50 ms | p99 ms | errors | CPU µs/req | peak RSS MiB (anon + file) | CPU vs nginx | CPU vs nginx at the same rate |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|\n'
# All scenarios at one connection count before the next: a cell that follows
# 1,000 connections runs on a process that grew for them (more memory, pools,
# idle upstream connections), which made the 64-connection cells after it
# cost up to 1.6 x more.
for c in $CONNS; do
  for s in $SCEN; do
    [ "$s" = rush ] && continue
    cell "direct to mockllm" "http://$mock" "" "" mock-gpt
    printf '%s - | - |\n' "$row"
    # Each repetition measures nginx right before the gateway, then nginx
    # again paced at the rate the gateway served: nginx spends less per
    # request the more requests each wake-up finds, so the last column
    # compares the two at the same rate.
    for _ in $(seq 1 "$REPEAT"); do
      ngx_cpu=- ngx_row=
      if [ -n "$nginx_pid" ]; then
        cell "nginx (plain proxy)" "http://$ngx" "$nginx_pid" "" mock-gpt
        ngx_cpu=$cpu ngx_row=$row
      fi
      cell "tollgate (built-in)" "http://$gw" "$gwpid" "$key" demo
      gw_cpu=$cpu gw_row=$row gw_rps=$rps
      if [ -n "$nginx_pid" ]; then
        printf '%s 1.00 | - |\n' "$ngx_row"
        cell "nginx at the gateway's rate" "http://$ngx" "$nginx_pid" "" mock-gpt "$gw_rps"
        printf '%s - | 1.00 |\n' "$row"
        paced_cpu=$cpu
      else
        paced_cpu=-
      fi
      printf '%s %s | %s |\n' "$gw_row" "$(ratio "$gw_cpu" "$ngx_cpu")" "$(ratio "$gw_cpu" "$paced_cpu")"
      if [ -n "$keyg" ]; then
        # Bracketed: the plain key again after the guarded one, and the
        # ratio against the mean of the two plain cells (the machine's drift
        # over the three cells cancels to first order).
        cell "tollgate + guardrail $GUARD" "http://$gw" "$gwpid" "$keyg" demo
        g_cpu=$cpu g_row=$row
        cell "tollgate (built-in), again" "http://$gw" "$gwpid" "$key" demo
        printf '%s %s | - |\n' "$row" "$(ratio "$cpu" "$ngx_cpu")"
        plain=$(awk -v a="$gw_cpu" -v b="$cpu" 'BEGIN { if (a != "-" && b != "-") printf "%.1f", (a + b) / 2; else print "-" }')
        printf '%s %s | guardrail/none %s |\n' "$g_row" "$(ratio "$g_cpu" "$ngx_cpu")" "$(ratio "$g_cpu" "$plain")"
      fi
      if [ -n "$CACHE" ]; then
        # Bracketed as the guardrail: hits (semantic: and semantic hits),
        # misses, then the plain key again; each against the mean of the two
        # plain cells.
        restore
        cell "tollgate, cache $CACHE hit" "http://$gw" "$gwpid" "$key" cached
        h_cpu=$cpu h_row=$row
        if [ "$CACHE" = semantic ]; then
          LGFLAGS="-scenario chat-parts" cell "tollgate, cache semantic hit (chat-parts)" "http://$gw" "$gwpid" "$key" cached
          sh_cpu=$cpu sh_row=$row
        fi
        LGFLAGS=-unique cell "tollgate, cache $CACHE miss (-unique)" "http://$gw" "$gwpid" "$key" cached
        m_cpu=$cpu m_row=$row
        cell "tollgate (built-in), again" "http://$gw" "$gwpid" "$key" demo
        printf '%s %s | - |\n' "$row" "$(ratio "$cpu" "$ngx_cpu")"
        off=$(awk -v a="$gw_cpu" -v b="$cpu" 'BEGIN { if (a != "-" && b != "-") printf "%.1f", (a + b) / 2; else print "-" }')
        printf '%s %s | hit/off %s |\n' "$h_row" "$(ratio "$h_cpu" "$ngx_cpu")" "$(ratio "$h_cpu" "$off")"
        if [ "$CACHE" = semantic ]; then
          printf '%s %s | semantic hit/off %s |\n' "$sh_row" "$(ratio "$sh_cpu" "$ngx_cpu")" "$(ratio "$sh_cpu" "$off")"
        fi
        printf '%s %s | miss/off %s |\n' "$m_row" "$(ratio "$m_cpu" "$ngx_cpu")" "$(ratio "$m_cpu" "$off")"
        if [ "$CACHE" = exact ]; then
          # The miss again at one rate with the plain cells around it
          # (CACHE_PACE of the first plain cell's, 0.6): CPU per request
          # falls as the rate rises, and the misses ran slower than the
          # plain cells (compare.sh paces both sides for the same reason).
          pace=$(awk -v r="$gw_rps" -v f="${CACHE_PACE:-0.6}" 'BEGIN { printf "%.0f", r * f }')
          cell "tollgate (built-in) at $pace/s" "http://$gw" "$gwpid" "$key" demo "$pace"
          p1_cpu=$cpu
          printf '%s %s | - |\n' "$row" "$(ratio "$cpu" "$ngx_cpu")"
          LGFLAGS=-unique cell "tollgate, cache exact miss at $pace/s" "http://$gw" "$gwpid" "$key" cached "$pace"
          pm_cpu=$cpu pm_row=$row
          cell "tollgate (built-in) at $pace/s, again" "http://$gw" "$gwpid" "$key" demo "$pace"
          printf '%s %s | - |\n' "$row" "$(ratio "$cpu" "$ngx_cpu")"
          poff=$(awk -v a="$p1_cpu" -v b="$cpu" 'BEGIN { if (a != "-" && b != "-") printf "%.1f", (a + b) / 2; else print "-" }')
          printf '%s %s | paced miss/off %s |\n' "$pm_row" "$(ratio "$pm_cpu" "$ngx_cpu")" "$(ratio "$pm_cpu" "$poff")"
        fi
      fi
      if [ -n "$gw2pid" ]; then
        cell "tollgate, metrics off" "http://$gw2" "$gw2pid" "$key2" demo
        printf '%s %s | metrics on/off %s |\n' "$row" "$(ratio "$cpu" "$ngx_cpu")" "$(ratio "$gw_cpu" "$cpu")"
      fi
    done
  done
done

# The rush: RUSH_CONNS connections opened at once and held, chat back to back
# to a mock that answers after RUSH_LATENCY, measured from the first dial (no
# warm-up): direct to the mock, nginx, then a gateway started for the rush
# alone (its peak RSS is the rush's). The gateway's extra flags: RUSH_FLAGS.
RUSH_TARGETS=${RUSH_TARGETS:-"direct nginx floor tollgate"}
want() { case " $RUSH_TARGETS " in *" $1 "*) return 0 ;; esac; return 1; }
# rush_profile: during the gateway's rush cell, a CPU profile of all of it,
# the heap (heap.pprof, heap.txt with the runtime's MemStats) and the
# goroutines (goroutine.txt) halfway, and every second a line of
# timeline.txt: seconds, RSS and its peak so far in MiB (RUSH_PROF).
rush_profile() {
  local d=${RUSH_D%s} base=http://127.0.0.1:$((16060 + P))/debug/pprof i
  curl -fsS -o "$RUSH_PROF/cpu.pprof" "$base/profile?seconds=$d" &
  (
    sleep $((d / 2))
    curl -fsS -o "$RUSH_PROF/heap.pprof" "$base/heap"
    curl -fsS -o "$RUSH_PROF/heap.txt" "$base/heap?debug=1"
    curl -fsS -o "$RUSH_PROF/goroutine.txt" "$base/goroutine?debug=1"
  ) &
  printf 's rss_mib peak_mib\n' >"$RUSH_PROF/timeline.txt"
  for i in $(seq 1 "$d"); do
    sleep 1
    awk -v s="$i" '/VmRSS/ {r = $2} /VmHWM/ {h = $2} END {printf "%d %.1f %.1f\n", s, r/1024, h/1024}' \
      "/proc/$rushpid/status" >>"$RUSH_PROF/timeline.txt"
  done
  wait
}
if [ -n "$rush" ]; then
  taskset -c "$LOAD_CPU" bin/mockllm --listen "$slowmock" --latency "$RUSH_LATENCY" >"$tmp/slowmock.log" 2>&1 &
  pids+=($!)
  mkdir -p "$tmp/rush"
  debug=
  if [ -n "${RUSH_PROF:-}" ]; then
    mkdir -p "$RUSH_PROF"
    debug="--debug-addr 127.0.0.1:$((16060 + P))"
  fi
  # shellcheck disable=SC2086 # RUSH_FLAGS and debug are lists of flags
  taskset -c "$GW_CPU" bin/tollgate run --db "$tmp/rush/bench.db" --listen "$gwrush" --admin-addr "$adminrush" \
    --xds-addr 127.0.0.1:$((19002 + P)) --extproc-addr 127.0.0.1:$((19053 + P)) --metrics-addr 127.0.0.1:$((19465 + P)) \
    --demo-upstream "http://$slowmock" --log-level error $debug ${RUSH_FLAGS:-} >"$tmp/rush/tollgate.log" 2>&1 &
  rushpid=$!
  pids+=($rushpid)
  keyrush=$(gwkey "$tmp/rush" "$adminrush")
  sleep 1
  s=rush c=$RUSH_CONNS D=$RUSH_D
  if want direct; then
    cell "direct to mockllm" "http://$slowmock" "" "" mock-gpt
    printf '%s - | - |\n' "$row"
  fi
  ngx_cpu=-
  if [ -n "$nginx_pid" ] && want nginx; then
    cell "nginx (plain proxy)" "http://$ngxrush" "$nginx_pid" "" mock-gpt
    ngx_cpu=$cpu
    printf '%s 1.00 | - |\n' "$row"
  fi
  if want floor; then
    taskset -c "$GW_CPU" bin/loadgen -floor "$floorrush" -url "http://$slowmock" >"$tmp/floor.log" 2>&1 &
    floorpid=$!
    pids+=($floorpid)
    sleep 0.5
    cell "floor (Go, no processing)" "http://$floorrush" "$floorpid" "" mock-gpt
    printf '%s %s | - |\n' "$row" "$(ratio "$cpu" "$ngx_cpu")"
    kill "$floorpid" 2>/dev/null || true
  fi
  if want tollgate; then
    profpid=
    if [ -n "${RUSH_PROF:-}" ]; then
      rush_profile &
      profpid=$!
    fi
    cell "tollgate (built-in)" "http://$gwrush" "$rushpid" "$keyrush" demo
    printf '%s %s | - |\n' "$row" "$(ratio "$cpu" "$ngx_cpu")"
    [ -z "$profpid" ] || wait "$profpid" || true
  fi
  # The rush's latency split: the first request of each connection (it
  # opened the connection, in the first wave of 5,000) and the later ones.
  printf '\n| rush: target | first request p50 ms | first request p99 ms | later requests p50 ms | later requests p99 ms |\n|---|---|---|---|---|\n%s' "$split"
fi
