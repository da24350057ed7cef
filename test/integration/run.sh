#!/bin/sh
# test/integration/run.sh BUILD_DIR [TEST_FILE...]
#
# Starts one throwaway PostgreSQL on a free port in a fresh temp directory,
# runs the SQL tests (test/sql/run.sh, when present) against a fresh database
# `sqltest`, then the node:test integration tests (test/integration/*.test.mjs,
# or the files given), then stops PostgreSQL and removes the directory, also
# when a test fails, the run is interrupted or the time limit hits.
#
# Exports for the tests: QN_PG_DIR (cluster dir for scripts/pg.sh), QN_PG_PORT,
# QN_BIN (BUILD_DIR/queen), QN_ROOT (repo root), QN_TMP (scratch, removed).
# The whole run has a hard time limit (a watchdog); a single test has one too.
# Environment: QN_IT_TIMEOUT (whole run, s; default 2700),
# QN_TEST_TIMEOUT_MS (one test; default 600000), QN_IT_SQL=0 (leave the SQL
# tests to another lane: test/integration/lanes.sh).
# Each file runs in a node --test of its own; its time and counts follow it
# ("integration-file: F N s, P passed, F failed"), and the run closes with
# "integration: P passed, F failed".
set -eu

ROOT=$(cd "$(dirname "$0")/../.." && pwd -P)
LIMIT="${QN_IT_TIMEOUT:-2700}"

BUILD="${1:-build}"
[ $# -gt 0 ] && shift
case "$BUILD" in
    /*) ;;
    *)  BUILD="$(pwd -P)/$BUILD" ;;
esac
PG="$ROOT/scripts/pg.sh"

QN_TMP=$(mktemp -d /tmp/queen-it.XXXXXX)
chmod 755 "$QN_TMP"
QN_PG_DIR="$QN_TMP/pg"
QN_BIN="$BUILD/queen"
QN_ROOT="$ROOT"
export QN_TMP QN_PG_DIR QN_BIN QN_ROOT

CHILD=""            #  Process group of the running test command
WATCHDOG=""         #  Pid of the time-limit watchdog
MAIN=$$
cleanup () {
    rc=$?
    trap "" INT TERM HUP     #  A second signal must not cut the cleanup short
    trap - EXIT
    if [ -n "$CHILD" ] && kill -s 0 -- "-$CHILD" 2>/dev/null; then
        echo "integration: stopping tests (pgid $CHILD)" >&2
        kill -s TERM -- "-$CHILD" 2>/dev/null || true
        n=0
        while [ $n -lt 50 ] && kill -s 0 -- "-$CHILD" 2>/dev/null; do
            sleep 0.1
            n=$((n + 1))
        done
        kill -s KILL -- "-$CHILD" 2>/dev/null || true
    fi
    sh "$PG" stop "$QN_PG_DIR" || echo "integration: could not stop PostgreSQL in $QN_PG_DIR" >&2
    rm -rf "$QN_TMP"
    if [ -n "$WATCHDOG" ]; then
        kill -TERM "$WATCHDOG" 2>/dev/null || true
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
QN_PG_PORT=$(sh "$PG" freeport)
export QN_PG_PORT

#  Run a command in its own process group, in the background, so a signal
#  interrupts our `wait` at once and cleanup can end the whole group.
run_group () {
    setsid "$@" &
    CHILD=$!
    rc=0
    wait "$CHILD" || rc=$?
    CHILD=""
    return "$rc"
}

#  Hard time limit so CI can never hang: after LIMIT s the watchdog sends us
#  SIGTERM (the traps clean up), and SIGKILL 60 s later if cleanup hangs.
(
    trap 'kill "$sp" 2>/dev/null; exit 0' TERM
    sleep "$LIMIT" & sp=$!
    wait "$sp"
    echo "integration: time limit of $LIMIT s reached" >&2
    kill -TERM "$MAIN" 2>/dev/null || exit 0
    sleep 60 & sp=$!
    wait "$sp"
    kill -KILL "$MAIN" 2>/dev/null || true
) &
WATCHDOG=$!

sh "$PG" init "$QN_PG_DIR" >/dev/null
sh "$PG" start "$QN_PG_DIR" "$QN_PG_PORT"
echo "integration: PostgreSQL on 127.0.0.1:$QN_PG_PORT in $QN_PG_DIR; broker $QN_BIN"
if [ ! -x "$QN_BIN" ]; then
    echo "integration: $QN_BIN not found (build it first: make)" >&2
    exit 1
fi

failed=""
npass=0; nfail=0
cd "$ROOT"

if [ "${QN_IT_SQL:-1}" = 0 ]; then
    echo "integration: SQL tests run in another lane (QN_IT_SQL=0)"
elif [ ! -f test/sql/run.sh ]; then
    echo "integration: test/sql/run.sh missing: the SQL tests cannot run" >&2
    failed="$failed sql-missing"
else
    psql -q -X -h 127.0.0.1 -p "$QN_PG_PORT" -U postgres -d postgres \
         -v ON_ERROR_STOP=1 -c 'CREATE DATABASE sqltest' >/dev/null
    sqlargs="-h 127.0.0.1 -p $QN_PG_PORT -U postgres -d sqltest"
    echo "integration: SQL tests (test/sql) against database sqltest"
    # shellcheck disable=SC2086  # sqlargs is split on purpose
    if [ ! -f test/sql/apply.sh ]; then
        echo "integration: test/sql/apply.sh missing: cannot apply the schema for the SQL tests" >&2
        failed="$failed sql-apply"
    elif ! run_group sh test/sql/apply.sh $sqlargs; then
        echo "integration: test/sql/apply.sh failed" >&2
        failed="$failed sql-apply"
    elif ! run_group sh test/sql/run.sh $sqlargs; then
        failed="$failed sql"
    fi
fi

if [ $# -gt 0 ]; then
    files="$*"
else
    files=$(ls test/integration/*.test.mjs 2>/dev/null || true)
fi
if [ -n "$files" ]; then
    echo "integration: node tests"
    #  One node --test per file, so each file's time and counts are known
    #  (test/integration/lanes.sh balances lanes by them).
    for f in $files; do
        t0=$(date +%s)
        log="$QN_TMP/node.log"
        # shellcheck disable=SC2086
        if run_group node --test --test-concurrency=1 --test-reporter=spec \
                --test-force-exit --test-timeout="${QN_TEST_TIMEOUT_MS:-600000}" "$f" > "$log" 2>&1; then
            frc=0
        else
            frc=1
        fi
        cat "$log"
        #  The spec reporter's closing lines: "ℹ pass N", "ℹ fail N"
        fp=$(awk '$2 == "pass" && $3 ~ /^[0-9]+$/ { n = $3 } END { print n + 0 }' "$log")
        ff=$(awk '$2 == "fail" && $3 ~ /^[0-9]+$/ { n = $3 } END { print n + 0 }' "$log")
        #  A file that crashed or failed without a failing test still fails
        [ "$frc" = 0 ] || [ "$ff" -gt 0 ] || ff=1
        #  A file in which no test ran fails too
        if [ $((fp + ff)) = 0 ]; then
            echo "integration: $f ran no test" >&2
            ff=1; frc=1
        fi
        npass=$((npass + fp)); nfail=$((nfail + ff))
        echo "integration-file: $f $(( $(date +%s) - t0 )) s, $fp passed, $ff failed"
        [ "$frc" = 0 ] || failed="$failed $(basename "$f")"
    done
else
    echo "integration: no test/integration/*.test.mjs files" >&2
    failed="$failed node-missing"
fi

echo "integration: $npass passed, $nfail failed"
if [ -n "$failed" ]; then
    echo "integration: FAILED:$failed" >&2
    exit 1
fi
