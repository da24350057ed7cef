#!/bin/sh
# bench/stmts.sh - scenario "stmts": what PostgreSQL spends per consumed
# message in the push + pop + ack cycle, per statement.
#   Runs on a cluster of its own (in QN_TMP; the shared bench cluster has no
#   pg_stat_statements), started with shared_preload_libraries =
#   pg_stat_statements, pg_stat_statements.track = all (statements inside
#   the queen.* functions are counted on their own) and track_functions =
#   all; otherwise scripts/pg.sh's settings (fsync and synchronous_commit on).
#   The broker under test (QN_BIN) boots once against a fresh database to
#   install the schema it embeds, then stops: the load is pgbench calling the
#   broker's SQL directly, in the peers cycle's shape: 4 clients pushing
#   batches of 100 (queen.push) beside 4 clients each doing queen.pop (batch
#   100, up to 100 partitions) + queen.ack of what it got, 1,000 partitions.
#   Two shapes, QN_STMTS_SECONDS each (after a 3-s warm-up, then a stats
#   reset):
#     spread: each message of a push batch to a random partition;
#     keyed:  each push batch to one random partition.
#   For each shape: consumed msg/s; PostgreSQL backend CPU per consumed
#   message (the postmaster's reaped-children CPU, cutime + cstime, before
#   and after: every backend of the run, autovacuum included); and the
#   statements by total execution time, as calls and microseconds per
#   consumed message (top-level function calls include their statements).
#   Then the CPU per message of push, pop and ack run one after the other in
#   one session (the backend's own on-CPU time, /proc/PID/schedstat, around
#   each call: little affected by other load on the machine).
# Writes QN_BENCH_OUT/stmts.txt. Run by bench/run.sh; QN_STMTS_SECONDS (15),
# QN_STMTS_TOP (24 statements per shape).
set -eu

HERE=$(cd "$(dirname "$0")" && pwd -P)
if [ -z "${QN_TMP:-}" ]; then
    exec sh "$HERE/run.sh" "${1:-build}" stmts
fi

SECS="${QN_STMTS_SECONDS:-15}"
TOP="${QN_STMTS_TOP:-24}"
PG="$QN_ROOT/scripts/pg.sh"
PGBENCH=$(ls /usr/lib/postgresql/*/bin/pgbench 2>/dev/null | tail -n 1)
[ -n "$PGBENCH" ] || { echo "stmts: pgbench not found"; exit 1; }
OUT="$QN_BENCH_OUT/stmts.txt"
T="$QN_TMP"

#  Our own cluster with pg_stat_statements
PGD="$T/pgs"
sh "$PG" init "$PGD" >/dev/null
cat >> "$PGD/data/queen.conf" <<EOF
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = all
pg_stat_statements.max = 2000
track_functions = all
EOF
QN_PG_PORT=$(sh "$PG" freeport)
export QN_PG_PORT
sh "$PG" start "$PGD" "$QN_PG_PORT" >/dev/null
stop_pg () {
    sh "$PG" stop "$PGD" >/dev/null 2>&1 || true
}
# shellcheck shell=sh source=bench/lib.sh
. "$HERE/lib.sh"
trap 'bench_cleanup; stop_pg' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

bench_start stmts                  #  installs the broker's schema
trap 'bench_cleanup; stop_pg' EXIT   #  bench_start set its own
for q in bstmts bstmtsk; do
    curl -sf -X POST "$URL/api/v1/configure" -H 'Content-Type: application/json' \
         -d "{\"queue\":\"$q\",\"options\":{\"leaseTime\":60}}" >/dev/null
done
kill -TERM "$QPID" 2>/dev/null && wait "$QPID" 2>/dev/null || true
QPID=""
$PSQL -d "$DB" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null

#  Reaped-children CPU of the postmaster, in clock ticks
PM=$(head -n 1 "$PGD/data/postmaster.pid")
HZ=$(getconf CLK_TCK)
child_ticks () {
    #  fields 16 and 17 of /proc/PID/stat (after the parenthesised name)
    sed 's/^.*) //' "/proc/$PM/stat" | awk '{ print $14 + $15 }'
}

{
    echo "== stmts: PostgreSQL work per consumed message, push + pop + ack via pgbench (4 + 4 clients, batch 100,"
    echo "   1,000 partitions), ${SECS}s per shape; broker $QN_BIN; $(nproc) cores, load avg $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$OUT"

run_shape () {          #  shape queue
    shape=$1
    qn=$2
    if [ "$shape" = keyed ]; then
        parts="array_fill (('p' || :p)::text, ARRAY[100])"
        setp='\set p random(0, 999)'
    else
        parts="ARRAY (SELECT 'p' || floor (random () * 1000)::int FROM generate_series (1, 100))"
        setp=''
    fi
    cat > "$T/produce.sql" <<EOF
$setp
SELECT count(*) FROM queen.push ('', array_fill ('$qn'::text, ARRAY[100]), $parts,
  array_fill (NULL::text, ARRAY[100]),
  ARRAY (SELECT convert_to ('{"s":' || g || ',"t":1764500000000,"f":"' || repeat ('x', 216) || '"}', 'UTF8')
         FROM generate_series (1, 100) g),
  array_fill (NULL::uuid, ARRAY[100]), array_fill (NULL::text, ARRAY[100]),
  array_fill (false, ARRAY[100]), false);
EOF
    cat > "$T/consume.sql" <<EOF
SELECT coalesce (array_agg (partition_id), '{}') AS pids, coalesce (array_agg (seq), '{}') AS seqs,
       count (seq) AS n
  FROM queen.pop ('', '$qn', NULL, '__QUEUE_MODE__', NULL, NULL, 100, 100, gen_random_uuid (), false)
 WHERE seq IS NOT NULL \gset
SELECT count(*) FROM queen.ack ('', array_fill ('__QUEUE_MODE__'::text, ARRAY[:n]), ':pids'::bigint[],
  array_fill (NULL::text, ARRAY[:n]), ':seqs'::bigint[], array_fill ('completed'::text, ARRAY[:n]),
  array_fill (NULL::uuid, ARRAY[:n]), array_fill (NULL::text, ARRAY[:n]));
EOF
    pgb () {        #  clients seconds script log
        PGOPTIONS="-c jit=off" "$PGBENCH" -n -h 127.0.0.1 -p "$QN_PG_PORT" -U postgres -c "$1" -j 1 -T "$2" \
            -f "$3" "$DB" > "$4" 2>&1
    }
    #  warm-up: the group, the first plans, a backlog in place
    pgb 2 3 "$T/produce.sql" "$T/warm_p.txt" & wp=$!
    pgb 2 3 "$T/consume.sql" "$T/warm_c.txt" || true
    wait "$wp" || true
    $PSQL -d "$DB" -c "SELECT pg_stat_statements_reset ()" -c "SELECT pg_stat_reset ()" >/dev/null
    c0=$(bench_consumed "$qn")
    k0=$(child_ticks)
    echo "stmts: $shape cycle (${SECS}s)"
    pgb 4 "$SECS" "$T/produce.sql" "$T/produce.txt" & pp=$!
    pgb 4 "$SECS" "$T/consume.sql" "$T/consume.txt" || true
    wait "$pp" || true
    sleep 0.5                       #  let the postmaster reap the backends
    k1=$(child_ticks)
    c1=$(bench_consumed "$qn")
    grep -q '^tps' "$T/produce.txt" && grep -q '^tps' "$T/consume.txt" || {
        echo "stmts: pgbench failed:"; tail -n 5 "$T/produce.txt" "$T/consume.txt"; exit 1; }
    n=$((c1 - c0))
    [ "$n" -gt 0 ] || { echo "stmts: nothing consumed in the $shape cycle"; exit 1; }
    {
        echo
        echo "-- $shape: consumed $n in ${SECS}s = $((n / SECS)) msg/s;" \
             "backend CPU $(awk -v t=$((k1 - k0)) -v hz="$HZ" -v n="$n" 'BEGIN { printf "%.1f", t / hz * 1e6 / n }') us/msg;" \
             "statement time (top-level) $($PSQL -d "$DB" -c "SELECT round ((sum (total_exec_time) * 1000 / $n)::numeric, 1)
                 FROM pg_stat_statements WHERE toplevel AND query ~ 'queen\\.(push|pop|ack) '") us/msg"
        printf "%10s %10s %9s  %s\n" "calls/msg" "us/msg" "us/call" "statement (top-level: the pgbench call)"
        $PSQL -d "$DB" -F '|' -c "
            SELECT round ((calls::numeric / $n), 4), round ((total_exec_time * 1000 / $n)::numeric, 2),
                   round ((total_exec_time * 1000 / greatest (calls, 1))::numeric, 1),
                   CASE WHEN toplevel THEN 'TOP ' ELSE '' END
                   || left (regexp_replace (query, '\\s+', ' ', 'g'), 110)
              FROM pg_stat_statements
             WHERE query !~* 'pg_stat_statements|pg_stat_reset|^(BEGIN|COMMIT)'
             ORDER BY total_exec_time DESC LIMIT $TOP" |
            awk -F'|' '{ printf "%10s %10s %9s  %s\n", $1, $2, $3, $4 }'
    } >> "$OUT"
}

#  CPU per call, no contention: one session runs push (100) + pop (100) +
#  ack of what came back, 40 times after 5 warm-up rounds, and reads its own
#  backend's on-CPU time (/proc/PID/schedstat, ns) around each call. Less
#  sensitive to a loaded machine than the wall-clock figures above.
cpu_seq () {          #  shape queue
    if [ "$1" = keyed ]; then
        parts="array_fill (:'kp'::text, ARRAY[100])"
    else
        parts="ARRAY (SELECT 's' || floor (random () * 200)::int FROM generate_series (1, 100))"
    fi
    ns="split_part (pg_read_file ('/proc/' || pg_backend_pid () || '/schedstat'), ' ', 1)::bigint"
    cat > "$T/cpu_body.sql" <<EOF
SELECT 'k' || floor (random () * 200)::int AS kp \gset
SELECT $ns AS t0 \gset
SELECT count(*) FROM queen.push ('', array_fill ('$2'::text, ARRAY[100]), $parts,
  array_fill (NULL::text, ARRAY[100]),
  ARRAY (SELECT convert_to ('{"s":' || g || ',"t":1764500000000,"f":"' || repeat ('x', 216) || '"}', 'UTF8')
         FROM generate_series (1, 100) g),
  array_fill (NULL::uuid, ARRAY[100]), array_fill (NULL::text, ARRAY[100]), array_fill (false, ARRAY[100]), false);
SELECT $ns AS t1 \gset
SELECT coalesce (array_agg (partition_id), '{}') AS pids, coalesce (array_agg (seq), '{}') AS seqs, count (seq) AS n
  FROM queen.pop ('', '$2', NULL, '__QUEUE_MODE__', NULL, NULL, 100, 100, gen_random_uuid (), false)
 WHERE seq IS NOT NULL \gset
SELECT $ns AS t2 \gset
SELECT count(*) FROM queen.ack ('', array_fill ('__QUEUE_MODE__'::text, ARRAY[:n]), :'pids'::bigint[],
  array_fill (NULL::text, ARRAY[:n]), :'seqs'::bigint[], array_fill ('completed'::text, ARRAY[:n]),
  array_fill (NULL::uuid, ARRAY[:n]), array_fill (NULL::text, ARRAY[:n]));
SELECT $ns AS t3 \gset
INSERT INTO cpu VALUES (:n, :t1 - :t0, :t2 - :t1, :t3 - :t2);
EOF
    {
        echo "CREATE TEMP TABLE cpu (n int, push bigint, pop bigint, ack bigint);"
        r=1
        while [ $r -le 45 ]; do
            cat "$T/cpu_body.sql"
            [ $r = 5 ] && echo "TRUNCATE cpu;"
            r=$((r + 1))
        done
        #  push per pushed message (100 a round), pop and ack per consumed one
        echo "SELECT sum (n), round (sum (push) / 1e3 / (100 * count (*)), 1), round (sum (pop) / 1e3 / sum (n), 1),
                     round (sum (ack) / 1e3 / sum (n), 1),
                     round (sum (push) / 1e3 / (100 * count (*)) + sum (pop + ack) / 1e3 / sum (n), 1) FROM cpu;"
    } > "$T/cpu.sql"
    $PSQL -d "$DB" -v ON_ERROR_STOP=1 -F ' ' -f "$T/cpu.sql" | tail -n 1 |
        awk -v s="$1" '{ printf "%-8s %8s %10s %10s %10s %10s\n", s, $1, $2, $3, $4, $5 }'
}

run_shape spread bstmts
run_shape keyed bstmtsk
{
    echo
    echo "-- CPU per message, one session, no concurrency (backend on-CPU time around each call; 40 rounds of"
    echo "   push 100 + pop 100 + ack; spread = 100 random partitions of 200 per push, keyed = one per push;"
    echo "   push per pushed message, pop and ack per consumed one)"
    printf "%-8s %8s %10s %10s %10s %10s\n" shape consumed "push us" "pop us" "ack us" "sum us"
    cpu_seq spread bcpus
    cpu_seq keyed bcpuk
} >> "$OUT"
cat "$OUT"
