#!/bin/sh
# A push never waits for a consumer (docs/storage.md, I3 and the lock
# order): waking an idle ready row touches only rows idle in the push's
# snapshot, and no consumer locks an idle row while a push can run beside
# it. Two sessions:
#   A. an ack in flight holds the LIVE row of the partition (the lock ack
#      takes, L4) for 3 s: a push to the partition answers at once and
#      leaves the lease alone; the message is delivered after the ack.
#   B. a late ack of an already consumed message, in a transaction held
#      for 3 s, on a DRAINED pair (its row idle): a push answers at once
#      and wakes the row; the message is delivered.
#   C. a push holding the partition lock for 3 s: a pop of the drained
#      pair answers empty at once (nothing due; pop never waits), and the
#      message is delivered once the push commits.
set -e
run=$(date +%s%N)
q="pidle_$run"
L1=11111111-1111-4111-8111-111111111111
L2=22222222-2222-4222-8222-222222222222
L3=33333333-3333-4333-8333-333333333333
sql () { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
fail () { echo "FAIL: $*" >&2; exit 1; }
push () {   # push ONE message "$1" to partition p
  echo "SELECT count(*) FROM queen.push('', ARRAY['$q'], ARRAY['p'], ARRAY[NULL], ARRAY['\"$1\"']::bytea[],
        ARRAY[NULL]::uuid[], ARRAY[NULL], ARRAY[false], false);"
}
pop () {    # pop up to 10 with lease $1: "seq pid" lines
  echo "SET statement_timeout = 1500;
        SELECT seq || ' ' || partition_id FROM queen.pop('', '$q', NULL, NULL, NULL, NULL, 10, 1, '$1', false)
         WHERE seq IS NOT NULL;"
}
ack () {    # ack seq $1 of partition $2 under lease $3 (NULL: none)
  echo "SELECT success::text FROM queen.ack('', ARRAY[NULL], ARRAY[$2]::bigint[],
          ARRAY[NULL], ARRAY[$1]::bigint[], ARRAY['completed'], ARRAY[$3]::uuid[], ARRAY[NULL]);"
}
row () {    # the queue mode ready row of the partition: "idle|live lease"
  sql "$@" -c "SELECT CASE WHEN r.avail_at = 'infinity' THEN 'idle' ELSE 'live' END || ' ' || COALESCE(r.lease_id::text, '-')
                 FROM queen.ready r JOIN queen.partitions p ON p.id = r.partition_id
                 JOIN queen.queues qq ON qq.id = p.queue_id WHERE qq.name = '$q'"
}
timed () {  # label SQL connection-args: run SQL with a 1.5 s statement timeout
  label=$1; stmt=$2; shift 2
  t0=$(date +%s%N)
  out=$(sql "$@" -c "SET statement_timeout = 1500; $stmt") || fail "$label: waited (statement timeout)"
  echo "$label: answered in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
}

# A. ack in flight on the live row
sql "$@" -c "$(push a1)" >/dev/null
got=$(sql "$@" -c "$(pop $L1)")
[ "$(echo "$got" | grep -c .)" = 1 ] || fail "A: one message delivered, got '$got'"
seq=${got% *}; pid=${got#* }
sql "$@" -c "BEGIN; SELECT 1 FROM queen.ready WHERE partition_id = $pid FOR UPDATE; SELECT pg_sleep(3); COMMIT;" >/dev/null &
held=$!
sleep 0.8
timed "A: push beside a held live row" "$(push a2)" "$@"
wait $held
[ "$(row "$@")" = "live $L1" ] || fail "A: the push left the lease alone, got '$(row "$@")'"
[ "$(sql "$@" -c "$(ack "$seq" "$pid" "'$L1'")")" = true ] || fail "A: ack"
got=$(sql "$@" -c "$(pop $L2)")
[ "$(echo "$got" | grep -c .)" = 1 ] || fail "A: the pushed message is delivered, got '$got'"
seq2=${got% *}
[ "$(sql "$@" -c "$(ack "$seq2" "$pid" "'$L2'")")" = true ] || fail "A: second ack"
[ "$(row "$@")" = "idle -" ] || fail "A: drained to idle, got '$(row "$@")'"

# B. a late ack on the idle pair, held open
sql "$@" -c "BEGIN; $(ack "$seq" "$pid" NULL) SELECT pg_sleep(3); COMMIT;" >/dev/null &
held=$!
sleep 0.8
timed "B: push beside a late ack of a drained pair" "$(push b1)" "$@"
[ "$(row "$@")" = "live -" ] || fail "B: the push woke the row, got '$(row "$@")'"
wait $held
got=$(sql "$@" -c "$(pop $L3)")
[ "$(echo "$got" | grep -c .)" = 1 ] || fail "B: the pushed message is delivered, got '$got'"
seq3=${got% *}
[ "$(sql "$@" -c "$(ack "$seq3" "$pid" "'$L3'")")" = true ] || fail "B: ack"
[ "$(row "$@")" = "idle -" ] || fail "B: drained to idle, got '$(row "$@")'"

# C. a push in flight; a pop of the drained pair does not wait
sql "$@" -c "BEGIN; $(push c1) SELECT pg_sleep(3); COMMIT;" >/dev/null &
held=$!
sleep 0.8
timed "C: pop beside a push in flight" "SELECT count(seq) FROM queen.pop('', '$q', NULL, NULL, NULL, NULL, 10, 1, NULL, true)" "$@"
[ "$out" = 0 ] || fail "C: nothing delivered before the push commits, got '$out'"
wait $held
got=$(sql "$@" -c "$(pop $L1)")
[ "$(echo "$got" | grep -c .)" = 1 ] || fail "C: the pushed message is delivered after the commit, got '$got'"
echo ok
