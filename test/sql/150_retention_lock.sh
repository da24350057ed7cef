#!/bin/sh
# retention_run: one run at a time. While another session holds the run lock
# (advisory (2, 3), taken by retention_run itself), a second run returns no
# rows at once instead of waiting on, or deadlocking with, the first.
set -e
psql -X -q -At "$@" -c "BEGIN; SELECT pg_advisory_xact_lock(2, 3); SELECT pg_sleep(3); COMMIT;" >/dev/null &
holder=$!
sleep 1
start=$(date +%s)
rows=$(psql -X -q -At "$@" -c "SELECT count(*) FROM queen.retention_run(100)")
took=$(( $(date +%s) - start ))
wait $holder
[ "$rows" = "0" ] || { echo "busy run returned $rows rows"; exit 1; }
[ "$took" -le 1 ] || { echo "busy run waited ${took}s"; exit 1; }
rows=$(psql -X -q -At "$@" -c "SELECT count(*) FROM queen.retention_run(100)")
[ "$rows" = "6" ] || { echo "free run returned $rows rows"; exit 1; }
echo ok
