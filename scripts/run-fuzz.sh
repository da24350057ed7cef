#!/bin/sh
# Runs each libFuzzer harness for SECONDS on a copy of its seed corpus (new
# inputs it finds are kept in build-fuzz/corpus-NAME for the next run).
# A crash leaves build-fuzz/crash-* (turn it into a regression test) and
# fails the run. Prints executions per harness and a closing line.
# Usage: run-fuzz.sh SECONDS NAME...
set -u
secs=$1; shift
pass=0; fail=0
for name in "$@"; do
    work="build-fuzz/corpus-$name"
    mkdir -p "$work"
    log="build-fuzz/fuzz_$name.log"
    if "./build-fuzz/fuzz_$name" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
         -artifact_prefix=build-fuzz/ -print_final_stats=1 \
         "$work" "test/fuzz/corpus/$name" > "$log" 2>&1; then
        runs=$(awk '/stat::number_of_executed_units/ { print $NF }' "$log")
        echo "fuzz $name: ${runs:-?} executions in ${secs}s, no findings"
        pass=$((pass + 1))
    else
        echo "fuzz $name: FAILED (see $log)"
        grep -E "ERROR|SUMMARY|crash-|Test unit written" "$log" | head -5
        fail=$((fail + 1))
    fi
done
echo "fuzz: $pass passed, $fail failed"
[ "$fail" = 0 ]
