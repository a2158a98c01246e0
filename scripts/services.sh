#!/usr/bin/env bash
# Provides throw-away PostgreSQL and Redis servers on free loopback ports for the tests.
#   scripts/services.sh start DIR   installs missing Debian packages, starts both servers with data
#                                   under DIR, and prints the environment for the tests (KEY=VALUE lines)
#   scripts/services.sh stop DIR    stops them and removes DIR
# Nothing here touches a system-wide server or data directory.
set -euo pipefail

cmd=${1:?usage: services.sh start|stop DIR}
dir=${2:?usage: services.sh start|stop DIR}

log() { printf 'services: %s\n' "$*" >&2; }

free_port() {
  local p
  for _ in $(seq 1 200); do
    p=$(( (RANDOM % 20000) + 20000 ))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
  done
  log "no free port found"; return 1
}

pg_bindir() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

install_missing() {
  local need=()
  [ -n "$(pg_bindir)" ] && [ -x "$(pg_bindir)/initdb" ] || need+=(postgresql)
  command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
  # The proofs and the model of formal/ (make test checks them): coqc, spin and the C compiler spin's verifier needs.
  command -v coqc >/dev/null 2>&1 || need+=(coq)
  command -v spin >/dev/null 2>&1 || need+=(spin)
  command -v cc >/dev/null 2>&1 || need+=(gcc)
  # The console's browser tests (e2e/console.mjs) drive Debian's Chromium headless.
  [ -x /usr/bin/chromium ] || need+=(chromium)
  [ ${#need[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then log "missing ${need[*]} and not root: install them with apt-get"; return 1; fi
  log "installing ${need[*]} from Debian packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2 || true
  apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
  # The packages start system services we do not use; stop them so they hold no ports.
  (service postgresql stop || true; service redis-server stop || true) >/dev/null 2>&1
}

# pgvector (the semantic cache's index, cache/pgvector.go) for the PostgreSQL
# found: Debian's postgresql-NN-pgvector when this release has it; else
# Debian's own pgvector source package (from the next release's deb-src,
# through a temporary apt list, no system-wide change) built against this
# server's headers.
install_pgvector() {
  local bin ver
  bin=$(pg_bindir); ver=$(basename "$(dirname "$bin")")
  [ -f "/usr/share/postgresql/$ver/extension/vector.control" ] && return 0
  if [ "$(id -u)" -ne 0 ]; then log "pgvector missing for PostgreSQL $ver and not root"; return 1; fi
  export DEBIAN_FRONTEND=noninteractive
  if apt-get install -y -qq --no-install-recommends "postgresql-$ver-pgvector" >&2 2>/dev/null; then return 0; fi
  log "building pgvector for PostgreSQL $ver from Debian's source package"
  apt-get install -y -qq --no-install-recommends "postgresql-server-dev-$ver" make gcc dpkg-dev >&2
  local tmp uri
  tmp=$(mktemp -d /tmp/pgvector-src.XXXXXX)
  uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  [ -n "$uri" ] || uri=$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list)
  mkdir -p "$tmp/lists/partial"
  echo "deb-src $uri trixie main" >"$tmp/sources.list"
  local apt=(-o Dir::Etc::sourcelist="$tmp/sources.list" -o Dir::Etc::sourceparts=- -o Dir::State::lists="$tmp/lists")
  apt-get "${apt[@]}" update -qq >&2
  (cd "$tmp" && apt-get "${apt[@]}" source --download-only pgvector >&2 2>/dev/null)
  tar -xzf "$tmp"/pgvector_*.orig.tar.gz -C "$tmp"
  (cd "$tmp"/pgvector-*/ && make -s PG_CONFIG="$bin/pg_config" OPTFLAGS="" >&2 && make -s PG_CONFIG="$bin/pg_config" install >&2)
  rm -rf "$tmp"
}

start() {
  install_missing
  install_pgvector
  mkdir -p "$dir"
  local bin pgport rport run=()
  bin=$(pg_bindir)
  pgport=$(free_port); rport=$(free_port)
  while [ "$rport" = "$pgport" ]; do rport=$(free_port); done

  mkdir -p "$dir/pg"
  if [ "$(id -u)" -eq 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
    chown -R postgres "$dir"
    chmod 755 "$dir"
    run=(runuser -u postgres --)
  fi
  "${run[@]}" "$bin/initdb" -D "$dir/pg" -U postgres -A trust --no-sync -E UTF8 >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; return 1; }
  "${run[@]}" "$bin/pg_ctl" -D "$dir/pg" -l "$dir/pg.log" -w -t 60 \
    -o "-h 127.0.0.1 -p $pgport -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" \
    start >&2 || { cat "$dir/pg.log" >&2; return 1; }

  redis-server --bind 127.0.0.1 --port "$rport" --dir "$dir" --save '' --appendonly no \
    --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" >&2
  # A loaded machine can take seconds to start it: wait up to 30 s.
  for _ in $(seq 1 300); do
    redis-cli -h 127.0.0.1 -p "$rport" ping >/dev/null 2>&1 && break
    sleep 0.1
  done
  redis-cli -h 127.0.0.1 -p "$rport" ping >/dev/null || { cat "$dir/redis.log" >&2; return 1; }

  echo "TOLLGATE_TEST_POSTGRES=postgres://postgres@127.0.0.1:$pgport/postgres?sslmode=disable"
  echo "TOLLGATE_TEST_REDIS=redis://127.0.0.1:$rport/0"
  echo "TOLLGATE_TEST_PG_BIN=$bin"
  echo "TOLLGATE_TEST_SERVICES_DIR=$dir"
  log "postgres on 127.0.0.1:$pgport, redis on 127.0.0.1:$rport (data in $dir)"
}

stop() {
  [ -d "$dir" ] || return 0
  local bin run=()
  bin=$(pg_bindir)
  [ "$(id -u)" -eq 0 ] && run=(runuser -u postgres --)
  if [ -f "$dir/pg/postmaster.pid" ]; then "${run[@]}" "$bin/pg_ctl" -D "$dir/pg" -m immediate -w stop >/dev/null 2>&1 || true; fi
  if [ -f "$dir/redis.pid" ]; then kill "$(cat "$dir/redis.pid")" 2>/dev/null || true; fi
  rm -rf "$dir"
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  *) log "unknown command $cmd"; exit 2 ;;
esac
