#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests, on a loopback port.
#
#   scripts/test-postgres.sh start   # prints the admin URL for EVOFLUX_TEST_POSTGRES_URL
#   scripts/test-postgres.sh stop
#
# Uses Debian's `postgresql` package (15 on bookworm): initdb into
# $EVOFLUX_TEST_PG_DIR (default /tmp/evoflux-test-pg), trust authentication,
# listening on 127.0.0.1:$EVOFLUX_TEST_PG_PORT (default 54329) only. fsync
# is off: the data is thrown away after the run. As root it runs the server
# as the `postgres` user, which PostgreSQL requires.
set -euo pipefail
dir="${EVOFLUX_TEST_PG_DIR:-/tmp/evoflux-test-pg}"
port="${EVOFLUX_TEST_PG_PORT:-54329}"
bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
if [ -z "$bin" ]; then
  echo "PostgreSQL is not installed (Debian package postgresql)" >&2
  exit 1
fi
as_server() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
case "${1:-}" in
start)
  if [ -f "$dir/data/postmaster.pid" ]; then
    as_server "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
  mkdir -p "$dir"
  if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi
  as_server "$bin/initdb" -D "$dir/data" -U evoflux --auth=trust -E UTF8 --no-instructions >/dev/null
  as_server "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400" \
    start >/dev/null
  echo "postgres://evoflux@127.0.0.1:$port/postgres"
  ;;
stop)
  as_server "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
  ;;
*)
  echo "usage: $0 start|stop" >&2
  exit 2
  ;;
esac
