#!/bin/sh
# A wildcard pop claims partitions until its batch is full (contract 3.7),
# not `partitions` rows up front: while one pop's transaction is open on
# deep partitions, a second consumer is served from the others.
set -e
run=$(date +%s%N)
q="steps_$run"
sql () { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
sql "$@" -c "SELECT queen.configure('', '$q', NULL, NULL, NULL)" >/dev/null
pop="SELECT count(*) FROM queen.pop('', '$q', NULL, NULL, NULL, NULL, 50, 10, gen_random_uuid(), false) WHERE seq IS NOT NULL"
# the queue mode group exists before anything is pushed (creating it takes
# the queue lock, which A's open transaction would hold)
[ "$(sql "$@" -c "$pop")" = 0 ]
# 10 partitions x 50 messages
sql "$@" -c "SELECT count(*) FROM queen.push('', array_fill('$q'::text, ARRAY[500]),
  ARRAY(SELECT 'p' || (g % 10) FROM generate_series(0, 499) g), array_fill(NULL::text, ARRAY[500]),
  array_fill(convert_to('{\"x\":1}', 'UTF8'), ARRAY[500]), array_fill(NULL::uuid, ARRAY[500]),
  array_fill(NULL::text, ARRAY[500]), array_fill(false, ARRAY[500]), false)" >/dev/null
# consumer A keeps its pop's transaction open for 3 s
out=$(mktemp)
sql "$@" -c "BEGIN; $pop; SELECT pg_sleep(3); COMMIT;" >"$out" &
held=$!
sleep 0.8
got=$(sql "$@" -c "SET statement_timeout = 1500; $pop")
wait $held
a=$(head -n 1 "$out")
rm -f "$out"
echo "A got $a, B got $got while A's transaction was open"
[ "$a" = 50 ] || { echo "FAIL: A should get a full batch" >&2; exit 1; }
[ "$got" = 50 ] || { echo "FAIL: B should be served from partitions A did not need" >&2; exit 1; }
echo ok
