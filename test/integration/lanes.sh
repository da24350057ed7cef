#!/bin/sh
# test/integration/lanes.sh - the integration tests of `make test`, in
# parallel lanes.
#
# Usage: lanes.sh NORMAL_BUILD ASAN_BUILD LANES ASAN_FILES...
#
# ASAN_FILES (a named subset, the Makefile's IT_ASAN) drive the sanitizer
# build of the broker; every other test/integration/*.test.mjs drives the
# normal build. LANES lanes run at once, each a test/integration/run.sh of
# its own: its own PostgreSQL cluster on its own port, its own scratch
# directory, its files one after the other. Files that stop or freeze
# PostgreSQL therefore only touch their own lane. Every broker a test starts
# takes free ports (lib.mjs), so lanes never clash. The SQL tests run once,
# in the first lane.
#
# Files go to lanes longest first (greedy, by test/integration/durations.txt:
# "seconds file" lines measured by a run of this script; unknown files count
# 30 s), the sanitizer files to lanes of their own build. Each lane's output
# is printed whole when the lane ends; then every file's time, and the
# closing line "integration: P passed, F failed" over all lanes (SQL tests
# included).
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd -P)
cd "$ROOT"
NORMAL=$1; ASAN=$2; LANES=$3; shift 3
ASAN_FILES=" $* "
WORK=$(mktemp -d /tmp/queen-lanes.XXXXXX)
PIDS=""
cleanup () {
    rc=$?
    trap - EXIT
    for p in $PIDS; do kill -TERM "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for f in $ASAN_FILES; do
    [ -f "$f" ] || { echo "lanes: $f (a sanitizer file) does not exist" >&2; exit 1; }
done
#  "seconds build file" for every file, longest first
for f in test/integration/*.test.mjs; do
    secs=$(awk -v f="$f" '$2 == f { print $1 }' test/integration/durations.txt 2>/dev/null || true)
    case "$ASAN_FILES" in *" $f "*) b=asan ;; *) b=normal ;; esac
    echo "${secs:-30} $b $f"
done | sort -k1,1nr > "$WORK/files"
n=$(wc -l < "$WORK/files")
[ "$n" -gt 0 ] || { echo "lanes: no test/integration/*.test.mjs files" >&2; exit 1; }
#  Lanes by build: the sanitizer files get lanes in proportion to their
#  share of the time (at least one), the normal ones the rest.
total=$(awk '{ t += $1 } END { print t + 0 }' "$WORK/files")
asan_t=$(awk '$2 == "asan" { t += $1 } END { print t + 0 }' "$WORK/files")
if [ "$asan_t" = 0 ]; then
    asan_lanes=0
else
    asan_lanes=$(( (asan_t * LANES + total / 2) / total ))
    [ "$asan_lanes" -ge 1 ] || asan_lanes=1
    [ "$asan_lanes" -lt "$LANES" ] || asan_lanes=$((LANES - 1))
fi
normal_lanes=$((LANES - asan_lanes))
#  Greedy: each file to the lane of its build with the least time so far
awk -v al="$asan_lanes" -v nl="$normal_lanes" '
    {
        if ($2 == "asan") { lo = 1; hi = al } else { lo = al + 1; hi = al + nl }
        best = lo
        for (i = lo; i <= hi; i++) if (load[i] < load[best]) best = i
        load[best] += $1
        print best, $2, $3
    }' "$WORK/files" > "$WORK/plan"

echo "lanes: $LANES lanes ($asan_lanes on $ASAN, $normal_lanes on $NORMAL); test/integration/durations.txt orders the files"
i=1
while [ "$i" -le "$LANES" ]; do
    files=$(awk -v i="$i" '$1 == i { print $3 }' "$WORK/plan" | tr '\n' ' ')
    b=$(awk -v i="$i" '$1 == i { print $2; exit }' "$WORK/plan")
    if [ -n "$files" ]; then
        [ "$b" = asan ] && build=$ASAN || build=$NORMAL
        sql=0; [ "$i" = 1 ] && sql=1
        # shellcheck disable=SC2086
        QN_IT_SQL=$sql sh test/integration/run.sh "$build" $files > "$WORK/lane$i.log" 2>&1 &
        PIDS="$PIDS $!"
        echo "$!" > "$WORK/lane$i.pid"
        echo "lanes: lane $i ($build): $files"
    fi
    i=$((i + 1))
done
failed=""
i=1
while [ "$i" -le "$LANES" ]; do
    if [ -f "$WORK/lane$i.pid" ]; then
        if wait "$(cat "$WORK/lane$i.pid")"; then rc=0; else rc=$?; fi
        echo "======== lane $i (exit $rc) ========"
        cat "$WORK/lane$i.log"
        [ "$rc" = 0 ] || failed="$failed $i"
    fi
    i=$((i + 1))
done
PIDS=""
echo "======== integration files by time ========"
cat "$WORK"/lane*.log | awk '/^integration-file: / { print $3, $2 }' | sort -k1,1nr
ran=$(cat "$WORK"/lane*.log | grep -c '^integration-file: ' || true)
cat "$WORK"/lane*.log | awk '
    /^(sql|integration): [0-9]+ passed, [0-9]+ failed$/ { p += $2; f += $4 }
    END { printf "integration: %d passed, %d failed\n", p, f }'
[ -z "$failed" ] || { echo "lanes: lane(s)$failed failed" >&2; exit 1; }
[ "$ran" = "$n" ] || { echo "lanes: $ran of $n files ran" >&2; exit 1; }
