#!/usr/bin/env bash
# CI: a pgbouncer in transaction pooling in front of the test PostgreSQL, so the PostgreSQL +
# Redis suite can run through it (TEST_DATABASE_URL at pgbouncer, TEST_DATABASE_ADMIN_URL at the
# server, TEST_DATABASE_POOLING=transaction). Its own process, configuration and log in
# $PGBOUNCER_DIR; never the system service.
#
#   .ci/pgbouncer.sh start   install it if missing (Debian), start it, wait until it answers
#   .ci/pgbouncer.sh stop    stop it and remove its directory
#
# PGBOUNCER_PORT (6432) is where it listens on 127.0.0.1; PGBOUNCER_SERVER (127.0.0.1:5432) is
# the PostgreSQL server every database name is forwarded to (the tests create databases there).
set -euo pipefail

PORT="${PGBOUNCER_PORT:-6432}"
SERVER="${PGBOUNCER_SERVER:-127.0.0.1:5432}"
DIR="${PGBOUNCER_DIR:-${TMPDIR:-/tmp}/idp-ci-pgbouncer-$PORT}"

start() {
  if [ -f "$DIR/pgbouncer.pid" ] && kill -0 "$(cat "$DIR/pgbouncer.pid")" 2>/dev/null; then
    echo "pgbouncer already runs on 127.0.0.1:$PORT (pid $(cat "$DIR/pgbouncer.pid"))"
    return 0
  fi
  if [ ! -x /usr/sbin/pgbouncer ]; then
    echo "== apt-get install pgbouncer"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends pgbouncer >/dev/null
  fi
  mkdir -p "$DIR"
  chmod 755 "$DIR"
  echo '"postgres" ""' >"$DIR/userlist.txt"
  cat >"$DIR/pgbouncer.ini" <<EOF
[databases]
; any database name, so the databases the tests create on the server are reachable at once
* = host=${SERVER%:*} port=${SERVER##*:}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PORT
unix_socket_dir =
auth_type = trust
auth_file = $DIR/userlist.txt
admin_users = postgres
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 10
; the server is shared: at most this many connections to it, idle ones let go soon
max_user_connections = 40
server_idle_timeout = 10
ignore_startup_parameters = extra_float_digits
EOF
  chmod 644 "$DIR/userlist.txt" "$DIR/pgbouncer.ini"
  # pgbouncer refuses to run as root.
  local as=()
  [ "$(id -u)" = 0 ] && as=(-u postgres)
  nohup /usr/sbin/pgbouncer "${as[@]}" "$DIR/pgbouncer.ini" >"$DIR/pgbouncer.log" 2>&1 &
  echo $! >"$DIR/pgbouncer.pid"
  for _ in $(seq 1 30); do
    if psql -h 127.0.0.1 -p "$PORT" -U postgres -d pgbouncer -Atqc 'SHOW VERSION' >/dev/null 2>&1; then
      echo "pgbouncer (transaction pooling) on 127.0.0.1:$PORT -> $SERVER, pid $(cat "$DIR/pgbouncer.pid")"
      return 0
    fi
    kill -0 "$(cat "$DIR/pgbouncer.pid")" 2>/dev/null || break
    sleep 1
  done
  echo "pgbouncer did not start:" >&2
  cat "$DIR/pgbouncer.log" >&2
  return 1
}

stop() {
  if [ -f "$DIR/pgbouncer.pid" ]; then
    local pid
    pid="$(cat "$DIR/pgbouncer.pid")"
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid"
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    fi
  fi
  rm -rf "$DIR"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
