#!/bin/sh
# Run every SQL test against a database where the schema is already applied.
#   test/sql/run.sh <psql connection args>
# *.sql files are psql scripts (ON_ERROR_STOP) that raise on a failed
# assertion; *.sh files (other than run.sh and apply.sh) are shell-level tests
# (concurrency) called with the same connection args. Files starting with '_'
# are helpers. Files run in name order (three-digit prefixes: 010_, 020_,
# ...), .sql and .sh alike. Prints one closing line: "sql: N passed, M failed".
here=$(cd "$(dirname "$0")" && pwd)
pass=0
fail=0
failed=""
log=$(mktemp)
for f in "$here"/[0-9]*; do
  name=$(basename "$f")
  case "$name" in
    *.sql) ( cd "$here" && psql -X -q -v ON_ERROR_STOP=1 "$@" -f "$name" ) >"$log" 2>&1 ;;
    *.sh)  sh "$f" "$@" >"$log" 2>&1 ;;
    *)     continue ;;
  esac
  if [ $? -eq 0 ]; then
    pass=$((pass + 1))
    echo "ok   $name"
  else
    fail=$((fail + 1))
    failed="$failed $name"
    echo "FAIL $name"
    sed 's/^/     | /' "$log" | tail -n 20
  fi
done
rm -f "$log"
echo "sql: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
