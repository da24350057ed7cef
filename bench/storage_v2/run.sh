#!/bin/sh
# bench/storage_v2/run.sh - storage v2 prototypes (issue 24) side by side
# with the current model and PGMQ, in one run, on a PostgreSQL 15 cluster of
# its own (scripts/pg.sh: fsync and synchronous_commit on; plus
# pg_stat_statements, track = all, as bench/stmts.sh).
#
#   Systems (QN_V2_SYSTEMS, default "cur qv2a qv2b qv2c pgmq"):
#     cur   the current model: queen.push / queen.pop / queen.ack, schema of
#           this tree applied with test/sql/apply.sh (database bench_cur);
#     qv2a  bench/storage_v2/v2.sql with one head row per partition;
#     qv2b  the same with 8 head slots per partition (pushes never wait);
#     qv2c  the same without heads (pops probe the messages index);
#           (the three in database bench_v2, one schema each)
#     pgmq  PGMQ's SQL (QN_PGMQ_SQL, default /work/pgmq/pgmq.sql; never in
#           this repository): send_batch; read 100 + delete in one
#           transaction (database bench_pgmq). Skipped with a line when the
#           file is missing.
#   Scenarios, QN_V2_SECONDS (12) each after a 3-s warm-up, systems
#   interleaved scenario by scenario:
#     push    8 clients x batches of 100 messages of 256 B, each message to a
#             random partition of 1,000;
#     spread  4 clients pushing as above + 4 clients each popping batch 100
#             (up to 100 partitions) and acking what came back;
#     keyed   the same, each push batch to one random partition.
#   (PGMQ has no partitions: its spread and keyed rows are two runs of the
#   same cycle.) Per run: msg/s (push: pushed; cycles: consumed, counted
#   from the cursors), PostgreSQL CPU per message (every process of the
#   cluster: the postmaster's reaped children + the live ones, ticks before
#   and after), pgbench failures, and the top statements.
#   Then the horizon scenario (QN_V2_HORIZON, default qv2c; empty: skipped):
#   a keyed cycle of 24 s in which, from second 6 to 14, another session
#   sits idle in a transaction; consumed msg/s per second for three kinds of
#   session: one holding an xid, one read-only (no xid), one holding an xid
#   with idle_in_transaction_session_timeout = 2s; with the oldest-xid
#   metric (age of the oldest backend_xid in pg_stat_activity).
# Writes QN_V2_OUT (default build/bench/storage_v2.txt) and prints it.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd -P)
ROOT=$(cd "$HERE/../.." && pwd -P)
SECS="${QN_V2_SECONDS:-12}"
SYSTEMS="${QN_V2_SYSTEMS:-cur qv2a qv2b qv2c pgmq}"
SCENARIOS="${QN_V2_SCENARIOS:-push spread keyed}"
HORIZON="${QN_V2_HORIZON-qv2c}"
PGMQ_SQL="${QN_PGMQ_SQL:-/work/pgmq/pgmq.sql}"
OUT="${QN_V2_OUT:-$ROOT/build/bench/storage_v2.txt}"
PG="$ROOT/scripts/pg.sh"
PGBENCH=$(ls /usr/lib/postgresql/15/bin/pgbench 2>/dev/null || ls /usr/lib/postgresql/*/bin/pgbench | tail -n 1)
mkdir -p "$(dirname "$OUT")"

T=$(mktemp -d /tmp/qv2-bench.XXXXXX)
chmod 755 "$T"
PGD="$T/pg"
sh "$PG" init "$PGD" >/dev/null
cat >> "$PGD/data/queen.conf" <<EOF
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = all
pg_stat_statements.max = 2000
track_functions = all
EOF
PORT=$(sh "$PG" freeport)
sh "$PG" start "$PGD" "$PORT" >/dev/null
cleanup () {
    trap "" INT TERM HUP
    trap - EXIT
    sh "$PG" stop "$PGD" >/dev/null 2>&1 || true
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
PSQL="psql -X -q -t -A -h 127.0.0.1 -p $PORT -U postgres"
PM=$(head -n 1 "$PGD/data/postmaster.pid")
HZ=$(getconf CLK_TCK)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

#  ---------------------------------------------------------------- schemas
have () {
    case " $SYSTEMS " in *" $1 "*) return 0 ;; esac
    return 1
}
db_of () {
    case "$1" in cur) echo bench_cur ;; pgmq) echo bench_pgmq ;; *) echo bench_v2 ;; esac
}
NOTES=""
$PSQL -d postgres -c "CREATE DATABASE bench_cur" -c "CREATE DATABASE bench_v2" -c "CREATE DATABASE bench_pgmq"
if have cur; then
    sh "$ROOT/test/sql/apply.sh" -h 127.0.0.1 -p "$PORT" -U postgres -d bench_cur
fi
for s in qv2a:1 qv2b:8 qv2c:0; do
    name=${s%%:*}
    have "$name" || continue
    sed -e "s/@S@/$name/g" -e "s/@K@/${s##*:}/g" "$HERE/v2.sql" |
        $PSQL -v ON_ERROR_STOP=1 -d bench_v2 >/dev/null
done
if have pgmq; then
    if [ -r "$PGMQ_SQL" ] && $PSQL -v ON_ERROR_STOP=1 -d bench_pgmq -f "$PGMQ_SQL" >/dev/null 2>"$T/pgmq.err"; then
        for q in bpush bspread bkeyed bhorizon; do
            $PSQL -d bench_pgmq -c "SELECT pgmq.create ('$q')" >/dev/null
        done
    else
        NOTES="$NOTES
note: PGMQ skipped: $PGMQ_SQL missing or failed to install ($(tail -n 1 "$T/pgmq.err" 2>/dev/null))"
        SYSTEMS=$(echo " $SYSTEMS " | sed 's/ pgmq / /')
    fi
fi
#  every partition of every queue exists before the runs: one push of 1,000
#  items, one per partition (consumed by the warm-ups)
for sys in $SYSTEMS; do
    for q in bpush bspread bkeyed bhorizon; do
        case "$sys" in
        cur) $PSQL -d bench_cur -c "SELECT count(*) FROM queen.push ('', array_fill ('$q'::text, ARRAY[1000]),
               ARRAY (SELECT 'p' || g FROM generate_series (0, 999) g), array_fill (NULL::text, ARRAY[1000]),
               array_fill ('\x7b7d'::bytea, ARRAY[1000]), array_fill (NULL::uuid, ARRAY[1000]),
               array_fill (NULL::text, ARRAY[1000]), array_fill (false, ARRAY[1000]), false)" >/dev/null ;;
        pgmq) ;;
        *) $PSQL -d bench_v2 -c "SELECT count(*) FROM $sys.push ('$q', ARRAY (SELECT 'p' || g FROM generate_series (0, 999) g),
               array_fill (NULL::text, ARRAY[1000]), array_fill ('\x7b7d'::bytea, ARRAY[1000]))" >/dev/null ;;
        esac
    done
done
for db in bench_cur bench_v2 bench_pgmq; do
    $PSQL -d $db -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
done

#  ---------------------------------------------------------------- scripts
PAYLOADS="ARRAY (SELECT convert_to ('{\"s\":' || g || ',\"t\":1764500000000,\"f\":\"' || repeat ('x', 216) || '\"}', 'UTF8')
         FROM generate_series (1, 100) g)"
#  produce SYSTEM QUEUE SHAPE > script
produce () {
    if [ "$3" = keyed ]; then
        echo '\set p random(0, 999)'
        parts="array_fill (('p' || :p)::text, ARRAY[100])"
    else
        parts="ARRAY (SELECT 'p' || floor (random () * 1000)::int FROM generate_series (1, 100))"
    fi
    case "$1" in
    cur) cat <<EOF
SELECT count(*) FROM queen.push ('', array_fill ('$2'::text, ARRAY[100]), $parts,
  array_fill (NULL::text, ARRAY[100]), $PAYLOADS,
  array_fill (NULL::uuid, ARRAY[100]), array_fill (NULL::text, ARRAY[100]),
  array_fill (false, ARRAY[100]), false);
EOF
    ;;
    pgmq) cat <<EOF
SELECT count(*) FROM pgmq.send_batch ('$2',
  ARRAY (SELECT jsonb_build_object ('s', g, 't', 1764500000000, 'f', repeat ('x', 216))
         FROM generate_series (1, 100) g));
EOF
    ;;
    *) cat <<EOF
SELECT count(*) FROM $1.push ('$2', $parts, array_fill (NULL::text, ARRAY[100]), $PAYLOADS);
EOF
    ;;
    esac
}
#  consume SYSTEM QUEUE > script
consume () {
    case "$1" in
    cur) cat <<EOF
SELECT coalesce (array_agg (partition_id), '{}') AS pids, coalesce (array_agg (seq), '{}') AS seqs,
       count (seq) AS n
  FROM queen.pop ('', '$2', NULL, '__QUEUE_MODE__', NULL, NULL, 100, 100, gen_random_uuid (), false)
 WHERE seq IS NOT NULL \gset
SELECT count(*) FROM queen.ack ('', array_fill ('__QUEUE_MODE__'::text, ARRAY[:n]), ':pids'::bigint[],
  array_fill (NULL::text, ARRAY[:n]), ':seqs'::bigint[], array_fill ('completed'::text, ARRAY[:n]),
  array_fill (NULL::uuid, ARRAY[:n]), array_fill (NULL::text, ARRAY[:n]));
EOF
    ;;
    pgmq) cat <<EOF
BEGIN;
SELECT coalesce (array_agg (msg_id), '{}') AS ids FROM pgmq.read ('$2', 60, 100) \gset
SELECT count(*) FROM pgmq.delete ('$2', ':ids'::bigint[]);
COMMIT;
EOF
    ;;
    *) cat <<EOF
SELECT gen_random_uuid () AS lease \gset
SELECT coalesce (array_agg (partition_id), '{}') AS pids, coalesce (array_agg (xid), '{}') AS xids,
       coalesce (array_agg (seq), '{}') AS seqs, count (*) AS n
  FROM $1.pop ('$2', '__QUEUE_MODE__', 100, 100, ':lease') \gset
SELECT $1.ack (array_fill ('$2'::text, ARRAY[:n]), array_fill ('__QUEUE_MODE__'::text, ARRAY[:n]),
  ':pids'::bigint[], ':xids'::xid8[], ':seqs'::bigint[], array_fill (':lease'::uuid, ARRAY[:n]));
EOF
    ;;
    esac
}
#  consumed SYSTEM QUEUE: messages consumed so far
consumed () {
    case "$1" in
    cur) $PSQL -d bench_cur -c "SELECT count(*) FROM queen.messages m
        JOIN queen.partitions p ON p.id = m.partition_id
        JOIN queen.queues q ON q.id = p.queue_id AND q.name = '$2'
        JOIN queen.consumer_groups g ON g.queue_id = q.id AND g.name = '__QUEUE_MODE__'
        LEFT JOIN queen.ready r ON r.partition_id = m.partition_id AND r.group_id = g.id
        LEFT JOIN queen.cursors c ON c.partition_id = m.partition_id AND c.group_id = g.id
        WHERE m.seq <= coalesce (r.acked_seq, c.acked_seq, 0)" ;;
    pgmq) $PSQL -d bench_pgmq -c "SELECT (SELECT CASE WHEN is_called THEN last_value ELSE 0 END
                                   FROM pgmq.q_$2_msg_id_seq) - (SELECT count(*) FROM pgmq.q_$2)" ;;
    *) $PSQL -d bench_v2 -c "SELECT $1.consumed ('$2', '__QUEUE_MODE__')" ;;
    esac
}

#  every process of the cluster: reaped children + live children, in ticks
pg_ticks () {
    { sed 's/^.*) //' "/proc/$PM/stat" | awk '{ print $14 + $15 }'
      for c in $(pgrep -P "$PM"); do
          sed 's/^.*) //' "/proc/$c/stat" 2>/dev/null | awk '{ print $12 + $13 }'
      done; } | awk '{ s += $1 } END { print s + 0 }'
}
#  pgb CLIENTS SECONDS SCRIPT DB LOG
pgb () {
    PGOPTIONS="-c jit=off" "$PGBENCH" -n -h 127.0.0.1 -p "$PORT" -U postgres -c "$1" -j 1 -T "$2" \
        --max-tries=10 -f "$3" "$4" > "$5" 2>&1 || true
}
failed () {
    awk '/number of failed transactions/ { f += $5 } /number of transactions retried/ { r += $5 }
         END { printf "%d/%d", f, r }' "$@"
}
top_statements () {        #  DB N
    $PSQL -d "$1" -F '|' -c "
        SELECT round ((total_exec_time * 1000 / $2)::numeric, 1), round ((calls::numeric / $2), 3),
               CASE WHEN toplevel THEN 'TOP ' ELSE '' END || left (regexp_replace (query, '\\s+', ' ', 'g'), 100)
          FROM pg_stat_statements
         WHERE query !~* 'pg_stat_statements|^(BEGIN|COMMIT)' AND dbid = (SELECT oid FROM pg_database WHERE datname = '$1')
         ORDER BY total_exec_time DESC LIMIT 6" |
        awk -F'|' '{ printf "      %8s us/msg %7s calls/msg  %s\n", $1, $2, $3 }'
}

RES="$T/results"
: > "$RES"
DETAIL="$T/detail"
: > "$DETAIL"
#  run SYSTEM SCENARIO: appends "system scenario msgs cpu failures" to RES
run () {
    sys=$1
    sc=$2
    db=$(db_of "$sys")
    q="b$sc"
    produce "$sys" "$q" "$sc" > "$T/produce.sql"
    consume "$sys" "$q" > "$T/consume.sql"
    echo "storage_v2: $sys $sc (${SECS}s)" >&2
    if [ "$sc" = push ]; then
        pgb 8 2 "$T/produce.sql" "$db" "$T/warm.txt"
        $PSQL -d "$db" -c "SELECT pg_stat_statements_reset ()" >/dev/null
        k0=$(pg_ticks)
        pgb 8 "$SECS" "$T/produce.sql" "$db" "$T/produce.txt"
        k1=$(pg_ticks)
        tps=$(awk '/^tps/ { print $3; exit }' "$T/produce.txt")
        n=$(awk -v t="${tps:-0}" -v s="$SECS" 'BEGIN { printf "%d", t * 100 * s }')
        fails=$(failed "$T/produce.txt")
    else
        pgb 4 3 "$T/produce.sql" "$db" "$T/warm_p.txt" & wp=$!
        pgb 4 3 "$T/consume.sql" "$db" "$T/warm_c.txt"
        wait "$wp" || true
        $PSQL -d "$db" -c "SELECT pg_stat_statements_reset ()" >/dev/null
        c0=$(consumed "$sys" "$q")
        k0=$(pg_ticks)
        pgb 4 "$SECS" "$T/produce.sql" "$db" "$T/produce.txt" & pp=$!
        pgb 4 "$SECS" "$T/consume.sql" "$db" "$T/consume.txt"
        wait "$pp" || true
        k1=$(pg_ticks)
        c1=$(consumed "$sys" "$q")
        n=$((c1 - c0))
        fails="$(failed "$T/produce.txt") $(failed "$T/consume.txt")"
        grep -q '^tps' "$T/consume.txt" || { echo "storage_v2: $sys $sc consumer failed:" >&2; tail -n 5 "$T/consume.txt" >&2; }
    fi
    grep -q '^tps' "$T/produce.txt" || { echo "storage_v2: $sys $sc producer failed:" >&2; tail -n 5 "$T/produce.txt" >&2; }
    rate=$((n / SECS))
    cpu=$(awk -v t=$((k1 - k0)) -v hz="$HZ" -v n="$n" 'BEGIN { if (n > 0) printf "%.1f", t / hz * 1e6 / n; else print "-" }')
    echo "$sys $sc $rate $cpu $(echo "$fails" | tr ' ' ',')" >> "$RES"
    {
        echo "  $sys $sc: $rate msg/s, PostgreSQL CPU $cpu us/msg, failed/retried (producers, consumers) $fails"
        [ "$n" -gt 0 ] && top_statements "$db" "$n"
    } >> "$DETAIL"
    sleep 1
}

for sc in $SCENARIOS; do
    for sys in $SYSTEMS; do
        run "$sys" "$sc"
    done
done

#  ---------------------------------------------------------------- horizon
#  horizon_run SYSTEM KIND: keyed cycle of 24 s; from second 6, a session
#  of KIND (xid | readonly | timeout) idles in a transaction for 8 s.
HTL="$T/horizon"
: > "$HTL"
horizon_run () {
    sys=$1
    kind=$2
    db=$(db_of "$sys")
    q=bhorizon
    produce "$sys" "$q" keyed > "$T/produce.sql"
    consume "$sys" "$q" > "$T/consume.sql"
    echo "storage_v2: horizon, $sys, idle session: $kind" >&2
    pgb 4 2 "$T/produce.sql" "$db" "$T/warm_p.txt" & wp=$!
    pgb 4 2 "$T/consume.sql" "$db" "$T/warm_c.txt"
    wait "$wp" || true
    pgb 4 24 "$T/produce.sql" "$db" "$T/produce.txt" & pp=$!
    pgb 4 24 "$T/consume.sql" "$db" "$T/consume.txt" & cp=$!
    case "$kind" in
        xid)      idle="BEGIN; SELECT pg_current_xact_id ();" ;;
        readonly) idle="BEGIN; SELECT count(*) FROM pg_class;" ;;
        timeout)  idle="SET idle_in_transaction_session_timeout = '2s'; BEGIN; SELECT pg_current_xact_id ();" ;;
    esac
    #  delivered so far: rows returned by the reading statement inside
    #  the pop (pg_stat_statements, track = all): cheap enough to sample
    #  every second on a loaded machine; rates use the real elapsed time
    case "$sys" in
        pgmq) pat="WITH cte AS%q_$q %" ;;
        *)    pat="WITH sel AS MATERIALIZED%$sys.claims%" ;;
    esac
    delivered () {
        $PSQL -d "$db" -c "SELECT coalesce (sum (rows), 0) FROM pg_stat_statements
                            WHERE query LIKE '$pat' AND dbid = (SELECT oid FROM pg_database WHERE datname = '$db')"
    }
    t0=$(date +%s.%N)
    prev=$(delivered)
    tprev=$t0
    line="$sys $kind:"
    oldest=""
    opened=""
    while :; do
        now=$(date +%s.%N)
        el=$(awk -v a="$now" -v b="$t0" 'BEGIN { printf "%d", a - b }')
        [ "$el" -ge 21 ] && break
        if [ -z "$opened" ] && [ "$el" -ge 5 ]; then
            opened=1
            line="$line |"
            #  idle in the transaction for 8 s (no statement running), then
            #  COMMIT (the timeout kind is ended by the server after 2 s)
            { echo "$idle"; sleep 8; echo "COMMIT;"; } | $PSQL -d postgres >/dev/null 2>&1 &
        fi
        sleep 1
        cur=$(delivered)
        tcur=$(date +%s.%N)
        age=$($PSQL -d postgres -c "SELECT coalesce (max (age (backend_xid)), 0) FROM pg_stat_activity
                                    WHERE backend_xid IS NOT NULL")
        line="$line $(awk -v n=$((cur - prev)) -v a="$tcur" -v b="$tprev" 'BEGIN { printf "%d", n / (a - b) }')"
        oldest="$oldest $age"
        prev=$cur
        tprev=$tcur
    done
    wait "$pp" "$cp" 2>/dev/null || true
    echo "$line" >> "$HTL"
    echo "  oldest xid age:$oldest" >> "$HTL"
    $PSQL -d "$db" -c "SELECT 1" >/dev/null
}
if [ -n "$HORIZON" ]; then
    for kind in xid readonly timeout; do
        horizon_run "$HORIZON" "$kind"
    done
    have pgmq && horizon_run pgmq xid
fi

#  ---------------------------------------------------------------- report
val () {        #  SYSTEM SCENARIO FIELD(3 rate, 4 cpu, 5 failures)
    awk -v s="$1" -v c="$2" -v f="$3" '$1 == s && $2 == c { print $f }' "$RES"
}
ratio () {
    awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b != "" && b > 0) printf "%.2f", a / b; else print "-" }'
}
{
    echo "== storage_v2: prototypes beside the current model and PGMQ, one run, ${SECS}s per figure, 256-byte payloads,"
    echo "   1,000 partitions; PostgreSQL $($PSQL -d postgres -c 'SHOW server_version') (fsync on, synchronous_commit on),"
    echo "   $(nproc) cores; load avg at start $LOAD0, at end $(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%F %H:%M UTC')"
    echo
    printf "%-8s %-7s %10s %12s %8s %9s %10s\n" system shape "msg/s" "pg us/msg" "x pgmq" "x cur" "fail/retry"
    for sc in $SCENARIOS; do
        for sys in $SYSTEMS; do
            r=$(val "$sys" "$sc" 3)
            [ -n "$r" ] || continue
            printf "%-8s %-7s %10s %12s %8s %9s %10s\n" "$sys" "$sc" "$r" "$(val "$sys" "$sc" 4)" \
                "$(ratio "$r" "$(val pgmq "$( [ "$sc" = keyed ] && echo keyed || echo "$sc")" 3)")" \
                "$(ratio "$r" "$(val cur "$sc" 3)")" "$(val "$sys" "$sc" 5)"
        done
    done
    echo
    echo "msg/s: push = pushed, cycles = consumed (from the cursors). pg us/msg = CPU of every process of the cluster"
    echo "(backends, autovacuum, WAL writer, checkpointer) per message. x pgmq / x cur: msg/s over PGMQ's (push:"
    echo "send_batch; spread and keyed: its read + delete cycle, run in that slot) / the current model's."
    echo "fail/retry: pgbench failed,retried transactions (producers[,consumers]), deadlocks retried up to 10 times."
    if [ -s "$HTL" ]; then
        echo
        echo "-- horizon: keyed cycle (4 + 4), delivered msg/s about every second; at '|' another session idles 8 s in a"
        echo "   transaction: xid = it holds a transaction id, readonly = it only read, timeout = it holds an xid and has"
        echo "   idle_in_transaction_session_timeout = 2s; 'oldest xid age' = max(age(backend_xid)) of pg_stat_activity"
        cat "$HTL"
    fi
    echo
    echo "-- per run: top statements (us of execution time and calls per message; TOP = the pgbench call)"
    cat "$DETAIL"
    [ -n "$NOTES" ] && echo "$NOTES"
    true
} > "$OUT"
cat "$OUT"
