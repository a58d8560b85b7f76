#!/usr/bin/env bash
# Runs a command against a throw-away PostgreSQL server, torn down when it ends:
#   tests/postgres/with_postgres.sh COMMAND [ARGS...]
# The server lives in a mktemp directory, listens on a Unix socket only (no TCP), and asks
# for passwords (scram-sha-256). The command sees:
#   VFSYNTH_PG_HOST           the socket directory (libpq's host)
#   VFSYNTH_PG_CONNINFO       "host=... port=... dbname=postgres user=vfsynth_admin" (a superuser)
#   VFSYNTH_PG_PASSWORD_FILE  that user's password file (mode 600)
#   VFSYNTH_PG_BIN            the server's bin directory (psql, pg_ctl)
# initdb refuses root: as root the server runs as the `postgres` system user.
set -euo pipefail
[ "$#" -ge 1 ] || { echo "usage: $0 COMMAND [ARGS...]" >&2; exit 2; }

bin="$(pg_config --bindir 2>/dev/null || true)"
[ -x "$bin/initdb" ] || bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
[ -x "$bin/initdb" ] || { echo "with_postgres: no PostgreSQL server binaries (Debian package postgresql)" >&2; exit 1; }

dir="$(mktemp -d -t vfsynth-pg.XXXXXX)"
as_server=()
if [ "$(id -u)" -eq 0 ]; then
  as_server=(runuser -u postgres --)
  chown postgres "$dir"
fi
run_server() { "${as_server[@]}" "$@"; }

stop() {
  local rc=$?
  if [ -f "$dir/data/postmaster.pid" ]; then
    run_server "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
  exit "$rc"
}
trap stop EXIT
trap 'exit 130' INT TERM

password="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
mkdir -m 700 "$dir/client"
(umask 077; printf '%s\n' "$password" > "$dir/client/admin.password")
run_server bash -c "umask 077; printf '%s\n' '$password' > '$dir/initdb.password'"
run_server "$bin/initdb" -D "$dir/data" -U vfsynth_admin --pwfile="$dir/initdb.password" \
  --auth-local=scram-sha-256 --auth-host=reject -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
  || { cat "$dir/initdb.log" >&2; exit 1; }
run_server mkdir "$dir/socket"
run_server "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-c listen_addresses='' -c unix_socket_directories='$dir/socket' -c port=5432 -c fsync=off" \
  start >/dev/null || { cat "$dir/server.log" >&2; exit 1; }

export VFSYNTH_PG_HOST="$dir/socket"
export VFSYNTH_PG_CONNINFO="host=$dir/socket port=5432 dbname=postgres user=vfsynth_admin"
export VFSYNTH_PG_PASSWORD_FILE="$dir/client/admin.password"
export VFSYNTH_PG_BIN="$bin"
# Nothing from the caller's environment picks another server or password.
unset PGHOST PGPORT PGUSER PGDATABASE PGPASSWORD PGPASSFILE PGSERVICE
"$@"
