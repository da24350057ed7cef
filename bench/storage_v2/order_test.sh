#!/bin/sh
# bench/storage_v2/order_test.sh [SCHEMA:K ...] - the two-session ordering
# test (order_test.sql) against storage v2 prototypes, on a PostgreSQL
# cluster of its own (scripts/pg.sh). Default: the prototypes of
# run.sh that let two pushes of one partition overlap (qv2b:8 qv2c:0; qv2a,
# one head row per partition, makes the second push wait for the first, so
# the interleavings of cases 1-3 cannot happen there). Exits non-zero when an
# expectation fails.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd -P)
ROOT=$(cd "$HERE/../.." && pwd -P)
PG="$ROOT/scripts/pg.sh"
T=$(mktemp -d /tmp/qv2-order.XXXXXX)
chmod 755 "$T"
sh "$PG" init "$T/pg" >/dev/null
PGPORT=$(sh "$PG" freeport)
sh "$PG" start "$T/pg" "$PGPORT" >/dev/null
trap 'sh "$PG" stop "$T/pg" >/dev/null 2>&1 || true; rm -rf "$T"' EXIT
PGHOST=127.0.0.1 PGUSER=postgres PGDATABASE=postgres
export PGHOST PGPORT PGUSER PGDATABASE
[ $# -gt 0 ] || set -- qv2b:8 qv2c:0
fail=0
for s in "$@"; do
    name=${s%%:*}
    psql -X -q -c "DROP DATABASE IF EXISTS ot_$name" -c "CREATE DATABASE ot_$name" >/dev/null
    sed -e "s/@S@/$name/g" -e "s/@K@/${s##*:}/g" "$HERE/v2.sql" |
        PGDATABASE=ot_$name psql -X -q -v ON_ERROR_STOP=1 >/dev/null
    if sed -e "s/@S@/$name/g" "$HERE/order_test.sql" | PGDATABASE=ot_$name psql -X -q -v ON_ERROR_STOP=1 -o /dev/null; then
        echo "order_test: $name passed"
    else
        echo "order_test: $name FAILED"
        fail=1
    fi
done
exit $fail
