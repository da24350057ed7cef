#!/bin/sh
# Runs each cmocka unit-test binary given; fails if any fails.
# Prints one closing line "unit: N passed, M failed".
pass=0; fail=0
for t in "$@"; do
    if "$t"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAILED: $t"; fi
done
echo "unit: $pass passed, $fail failed"
[ "$fail" = 0 ]
