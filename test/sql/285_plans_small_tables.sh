#!/bin/sh
# Plans made while the tables were small stay point lookups once they are
# not (_285_plans_small_tables.psql), in a database of its own: its tables
# start as small as a new broker's, which the shared test database's are not.
set -e
here=$(cd "$(dirname "$0")" && pwd)
db="plans_$(date +%s%N)"
psql -X -q -v ON_ERROR_STOP=1 "$@" -c "CREATE DATABASE $db" >/dev/null
rc=0
sh "$here/apply.sh" "$@" -d "$db" >/dev/null || rc=$?
[ "$rc" = 0 ] && { psql -X -q -v ON_ERROR_STOP=1 "$@" -d "$db" -f "$here/_285_plans_small_tables.psql" || rc=$?; }
psql -X -q "$@" -c "DROP DATABASE $db" >/dev/null || true
exit "$rc"
