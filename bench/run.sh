#!/bin/sh
# bench/run.sh BUILD_DIR [SCENARIO...] - the `make bench` entry point.
#
# Starts one throwaway PostgreSQL, then runs every bench/*.sh scenario except
# this file and those with a line "# bench: explicit" (or only the named
# ones, e.g. `health`), one after the other,
# each in its own process group with a time limit. Whatever a scenario
# leaves running is killed when it ends; PostgreSQL is stopped and the
# scratch directory removed at the end, also on failure or Ctrl-C.
#
# A scenario is `sh bench/NAME.sh`, run from the repo root with:
#   QN_BIN        the broker binary (BUILD_DIR/queen)
#   QN_PG_DIR     the cluster directory (for scripts/pg.sh)
#   QN_PG_PORT    its port on 127.0.0.1 (user postgres, password postgres);
#                 create your own database in it
#   QN_ROOT       the repo root
#   QN_TMP        a scratch directory for this scenario, removed afterwards
#   QN_BENCH_OUT  where to write results (BUILD_DIR/bench/NAME.txt)
# It prints its results and exits non-zero when it failed.
#
# Environment: QN_BENCH_TIMEOUT (whole run, s; default 3600),
# QN_BENCH_SCENARIO_TIMEOUT (one scenario, s; default 1800: cardinality
# takes 9–12 minutes here).
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd -P)
PG="$ROOT/scripts/pg.sh"
LIMIT="${QN_BENCH_TIMEOUT:-3600}"
SCENARIO_LIMIT="${QN_BENCH_SCENARIO_TIMEOUT:-1800}"

BUILD="${1:-build}"
[ $# -gt 0 ] && shift
case "$BUILD" in
    /*) ;;
    *)  BUILD="$(pwd -P)/$BUILD" ;;
esac

TMP=$(mktemp -d /tmp/queen-bench.XXXXXX)
chmod 755 "$TMP"
QN_PG_DIR="$TMP/pg"
QN_BIN="$BUILD/queen"
QN_ROOT="$ROOT"
QN_BENCH_OUT="$BUILD/bench"
export QN_PG_DIR QN_BIN QN_ROOT QN_BENCH_OUT

CHILD=""            #  Process group of the running scenario
WATCHDOG=""
MAIN=$$
cleanup () {
    rc=$?
    trap "" INT TERM HUP     #  A second signal must not cut the cleanup short
    trap - EXIT
    kill_group
    sh "$PG" stop "$QN_PG_DIR" || echo "bench: could not stop PostgreSQL in $QN_PG_DIR" >&2
    rm -rf "$TMP"
    if [ -n "$WATCHDOG" ]; then
        kill -TERM "$WATCHDOG" 2>/dev/null || true
    fi
    exit "$rc"
}
#  TERM, then KILL after 5 s, whatever is left in the scenario's group.
kill_group () {
    if [ -n "$CHILD" ] && kill -s 0 -- "-$CHILD" 2>/dev/null; then
        kill -s TERM -- "-$CHILD" 2>/dev/null || true
        n=0
        while [ $n -lt 50 ] && kill -s 0 -- "-$CHILD" 2>/dev/null; do
            sleep 0.1
            n=$((n + 1))
        done
        kill -s KILL -- "-$CHILD" 2>/dev/null || true
    fi
    CHILD=""
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

(
    trap 'kill "$sp" 2>/dev/null; exit 0' TERM
    sleep "$LIMIT" & sp=$!
    wait "$sp"
    echo "bench: time limit of $LIMIT s reached" >&2
    kill -TERM "$MAIN" 2>/dev/null || exit 0
    sleep 60 & sp=$!
    wait "$sp"
    kill -KILL "$MAIN" 2>/dev/null || true
) &
WATCHDOG=$!

cd "$ROOT"
if [ $# -gt 0 ]; then
    scenarios=""
    for name in "$@"; do
        name=${name%.sh}
        [ -f "bench/$name.sh" ] || { echo "bench: no scenario bench/$name.sh" >&2; exit 2; }
        scenarios="$scenarios bench/$name.sh"
    done
else
    scenarios=""
    for f in bench/*.sh; do
        #  "# bench: explicit" (bench/verify.sh: hours): only when named
        [ "$f" = bench/run.sh ] || [ ! -f "$f" ] || grep -q '^# bench: explicit' "$f" \
            || scenarios="$scenarios $f"
    done
fi
[ -n "$scenarios" ] || { echo "bench: no scenarios in bench/" >&2; exit 1; }

mkdir -p "$QN_BENCH_OUT"
QN_PG_PORT=$(sh "$PG" freeport)
export QN_PG_PORT
sh "$PG" init "$QN_PG_DIR" >/dev/null
sh "$PG" start "$QN_PG_DIR" "$QN_PG_PORT"
echo "bench: PostgreSQL on 127.0.0.1:$QN_PG_PORT; broker $QN_BIN; results in $QN_BENCH_OUT"

failed=""
for scenario in $scenarios; do
    name=$(basename "$scenario" .sh)
    QN_TMP="$TMP/$name"
    mkdir -p "$QN_TMP"
    chmod 755 "$QN_TMP"
    export QN_TMP
    echo "bench: == $name =="
    rc=0
    setsid timeout -k 10 "$SCENARIO_LIMIT" sh "$scenario" &
    CHILD=$!
    wait "$CHILD" || rc=$?
    kill_group
    if [ "$rc" = 124 ]; then
        echo "bench: $name: time limit of $SCENARIO_LIMIT s reached" >&2
    fi
    if [ "$rc" != 0 ]; then
        echo "bench: $name FAILED (status $rc)" >&2
        failed="$failed $name"
    fi
    rm -rf "$QN_TMP"
done

if [ -n "$failed" ]; then
    echo "bench: FAILED:$failed" >&2
    exit 1
fi
echo "bench: done"
