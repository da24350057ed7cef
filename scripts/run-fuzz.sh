#!/bin/sh
# Runs each libFuzzer harness for SECONDS on a copy of its seed corpus (new
# inputs it finds are kept in build-fuzz/corpus-NAME for the next run),
# FUZZ_JOBS harnesses at a time (default 1). A crash leaves
# build-fuzz/crash-* (turn it into a regression test) and fails the run.
# Prints executions per harness and a closing line.
# Usage: run-fuzz.sh SECONDS NAME...
set -u
secs=$1; shift
jobs="${FUZZ_JOBS:-1}"
one () {
    name=$1
    work="build-fuzz/corpus-$name"
    mkdir -p "$work"
    log="build-fuzz/fuzz_$name.log"
    if "./build-fuzz/fuzz_$name" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
         -artifact_prefix=build-fuzz/ -print_final_stats=1 \
         "$work" "test/fuzz/corpus/$name" > "$log" 2>&1; then
        runs=$(awk '/stat::number_of_executed_units/ { print $NF }' "$log")
        echo "fuzz $name: ${runs:-?} executions in ${secs}s, no findings"
    else
        echo "fuzz $name: FAILED (see $log)"
        grep -E "ERROR|SUMMARY|crash-|Test unit written" "$log" | head -5
        return 1
    fi
}
res=$(mktemp /tmp/queen-fuzz.XXXXXX)
running=0
for name in "$@"; do
    ( if one "$name"; then echo pass >> "$res"; else echo fail >> "$res"; fi ) &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait
        running=0
    fi
done
wait
pass=$(grep -c pass "$res")
fail=$(grep -c fail "$res")
rm -f "$res"
echo "fuzz: $pass passed, $fail failed"
[ "$fail" = 0 ] && [ "$pass" = "$#" ]
