#!/bin/sh
# scripts/run.sh - what `make run` does after building.
#
# With PG_HOST set: exec build/queen against that PostgreSQL.
# Without: create (first time) and start a private cluster in .queen/pg on a
# free local port, run build/queen in the foreground on PORT (default 6632),
# and on Ctrl-C / SIGTERM stop the broker first, then the cluster.
# A second Ctrl-C kills the broker instead of waiting for it to drain.
#
# Environment: PORT, PG_* (passed to the broker), QUEEN_PG_DIR (cluster
# directory, default .queen/pg in the repo). Arguments go to the broker.
set -eu
#  runuser and useradd live in sbin, which a non-login root PATH may lack
PATH="$PATH:/usr/sbin:/sbin"
export PATH

ROOT=$(cd "$(dirname "$0")/.." && pwd -P)
PG="$ROOT/scripts/pg.sh"
BIN="$ROOT/build/queen"

[ -x "$BIN" ] || { echo "run: $BIN not built (run: make)" >&2; exit 1; }
export PORT="${PORT:-6632}"

if [ -n "${PG_HOST:-}" ]; then
    echo "run: PostgreSQL at $PG_HOST:${PG_PORT:-5432} (from PG_HOST); broker on :$PORT"
    exec "$BIN" "$@"
fi

PGDIR="${QUEEN_PG_DIR:-$ROOT/.queen/pg}"
#  As root the server runs as an unprivileged user, who may not be able to
#  reach a repo under e.g. /root; keep the cluster under /var/tmp then.
if [ -z "${QUEEN_PG_DIR:-}" ] && [ "$(id -u)" = 0 ] \
        && ! runuser -u "$(sh "$PG" user)" -- test -x "$ROOT"; then
    PGDIR="/var/tmp/queen-pg-$(printf '%s' "$ROOT" | cksum | cut -d ' ' -f 1)"
fi
mkdir -p "$ROOT/.queen"
#  Keep runtime state out of git without touching .gitignore
[ -f "$ROOT/.queen/.gitignore" ] || echo '*' > "$ROOT/.queen/.gitignore"

sh "$PG" init "$PGDIR" >/dev/null
if sh "$PG" status "$PGDIR" >/dev/null 2>&1; then
    #  Left running by a run that was killed hard: reuse it
    PG_PORT=$(cat "$PGDIR/port")
else
    PG_PORT=$(sh "$PG" freeport)
fi
sh "$PG" start "$PGDIR" "$PG_PORT"
export PG_HOST=127.0.0.1 PG_PORT
export PG_USER="${PG_USER:-postgres}" PG_PASSWORD="${PG_PASSWORD:-postgres}"
export PG_DB="${PG_DB:-postgres}"
echo "run: PostgreSQL at 127.0.0.1:$PG_PORT (private cluster in $PGDIR, log $PGDIR/log/postgresql.log); broker on :$PORT"

QPID=""
STOPPING=0
cleanup () {
    trap "" INT TERM HUP     #  A second signal must not cut the cleanup short
    trap - EXIT
    if [ -n "$QPID" ] && kill -0 "$QPID" 2>/dev/null; then
        kill -TERM "$QPID" 2>/dev/null || true
        wait "$QPID" 2>/dev/null || true
    fi
    sh "$PG" stop "$PGDIR" && echo "run: PostgreSQL stopped"
}
on_signal () {
    if [ "$STOPPING" = 1 ]; then
        echo "run: killing the broker" >&2
        kill -KILL "$QPID" 2>/dev/null || true
    else
        STOPPING=1
        echo "run: stopping the broker" >&2
        kill -TERM "$QPID" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap on_signal INT TERM HUP

"$BIN" "$@" &
QPID=$!
#  `wait` returns early whenever a trapped signal arrives; wait again until
#  the broker has really exited.
rc=0
while :; do
    if wait "$QPID"; then rc=0; else rc=$?; fi
    kill -0 "$QPID" 2>/dev/null || break
done
#  If the last wait was cut short by a signal, this one has the real status
if wait "$QPID" 2>/dev/null; then rc=0; else r=$?; [ "$r" = 127 ] || rc=$r; fi
QPID=""
echo "run: broker exited with status $rc"
cleanup
exit "$rc"
