#!/bin/sh
# An ack never waits for a push holding the partition lock (docs/storage.md,
# queen.ack step 5): it answers at once, keeps the ready row (no drain while
# the push is in flight), and the pushed message is delivered once the push
# commits; when the push rolls back, the row left behind is cleaned by a claim.
set -e
run=$(date +%s%N)
q="nowait_$run"
L1=11111111-1111-4111-8111-111111111111
L2=22222222-2222-4222-8222-222222222222
sql () { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
sql "$@" -c "SELECT queen.configure('', '$q', NULL, NULL, NULL)" >/dev/null
push () {   # push ONE message "$1" to partition p
  echo "SELECT count(*) FROM queen.push('', ARRAY['$q'], ARRAY['p'], ARRAY[NULL], ARRAY['\"$1\"']::bytea[],
        ARRAY[NULL]::uuid[], ARRAY[NULL], ARRAY[false], false);"
}
pop () {    # pop up to 10 with lease $1: "seq pid" lines (or an empty-answer row)
  echo "SELECT seq || ' ' || partition_id FROM queen.pop('', '$q', 'p', NULL, NULL, NULL, 10, 1, '$1', false) WHERE seq IS NOT NULL;"
}
ack () {    # ack seq $1 of partition $2 under lease $3, must not wait 1.5 s
  echo "SET statement_timeout = 1500;
        SELECT success::text || ' ' || lease_released::text FROM queen.ack('', ARRAY[NULL], ARRAY[$2]::bigint[],
          ARRAY[NULL], ARRAY[$1]::bigint[], ARRAY['completed'], ARRAY['$3']::uuid[], ARRAY[NULL]);"
}
ready () {  # ready rows of the partition
  sql "$@" -c "SELECT count(*) FROM queen.ready r JOIN queen.partitions p ON p.id = r.partition_id
                JOIN queen.queues qq ON qq.id = p.queue_id WHERE qq.name = '$q'"
}
fail () { echo "FAIL: $*" >&2; exit 1; }

for outcome in COMMIT ROLLBACK; do
  sql "$@" -c "$(push first-$outcome)" >/dev/null
  got=$(sql "$@" -c "$(pop $L1)")
  [ "$(echo "$got" | grep -c .)" = 1 ] || fail "$outcome: one message delivered, got '$got'"
  seq=${got% *}; pid=${got#* }
  # a push holds the partition lock for 3 s
  sql "$@" -c "BEGIN; $(push second-$outcome) SELECT pg_sleep(3); $outcome;" >/dev/null &
  held=$!
  sleep 0.8
  t0=$(date +%s%N)
  res=$(sql "$@" -c "$(ack "$seq" "$pid" $L1)") || fail "$outcome: the ack waited for the push"
  t1=$(date +%s%N)
  [ "$res" = "true true" ] || fail "$outcome: ack answered '$res'"
  [ "$(ready "$@")" = 1 ] || fail "$outcome: the ack drained the row while a push was in flight"
  echo "$outcome: ack answered in $(( (t1 - t0) / 1000000 )) ms while the push held the partition"
  wait $held
  got=$(sql "$@" -c "$(pop $L2)")
  if [ "$outcome" = COMMIT ]; then
    [ "$(echo "$got" | grep -c .)" = 1 ] || fail "COMMIT: the pushed message is delivered, got '$got'"
    seq=${got% *}
    sql "$@" -c "$(ack "$seq" "$pid" $L2)" >/dev/null
  else
    [ -z "$got" ] || fail "ROLLBACK: nothing to deliver, got '$got'"
  fi
  [ "$(ready "$@")" = 0 ] || fail "$outcome: the partition ends drained"
done
echo ok
