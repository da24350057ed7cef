#!/bin/sh
# bench/cardinality.sh - scenario "cardinality": one queue grown to 1,000,000
# partitions, none created in advance, while serving steady load.
#
#   * the first 1,000 partitions (h0..h999) carry the steady load: producers
#     push batches of 100 256-byte messages to random ones of them,
#     consumers pop the wildcard route (batch 100, partitions 10) and ack;
#   * new partitions g0, g1, ... are created by pushes of one message each
#     (500 per request, 2 connections, paced at QN_CARD_RATE/s), while the
#     steady load runs at QN_CARD_STEADY msg/s and the consumers drain the
#     new partitions too (their messages are work like any other);
#   * at 1k, 100k and 1M partitions growth pauses and the consumers catch
#     up; then a measurement window: producers and consumers closed-loop on
#     the hot partitions for QN_CARD_WINDOW seconds; then, drained again,
#     the storage is measured and each hot SQL call is run under
#     auto_explain (buffers touched: the "does it scan idle partitions"
#     check).
# Reports push and pop msg/s, pop/push/ack latency p50/p99 per checkpoint,
# the ratios 1M/1k against the goal (throughput and p99 within 30%), the
# growth rate reached, and PostgreSQL bytes per partition.
# Writes QN_BENCH_OUT/cardinality.txt. Run by bench/run.sh; needs more than
# the default 600 s scenario limit on this 2-core machine:
#   QN_BENCH_SCENARIO_TIMEOUT=1800 sh bench/run.sh build cardinality
# Environment: QN_CARD_CHECKPOINTS (1000,100000,1000000), QN_CARD_RATE
# (4000), QN_CARD_STEADY (1000), QN_CARD_WINDOW (15), QN_CARD_MAX_SECONDS
# (1700: the load generator gives up after that), QN_CARD_DRAIN_TIMEOUT (900 s
# for the consumers to catch up at a checkpoint; on a busy machine they fall
# behind the growth).
set -eu

HERE=$(cd "$(dirname "$0")" && pwd -P)
if [ -z "${QN_PG_PORT:-}" ]; then
    exec sh "$HERE/run.sh" "${1:-build}" cardinality
fi

CHECKPOINTS="${QN_CARD_CHECKPOINTS:-1000,100000,1000000}"
RATE="${QN_CARD_RATE:-4000}"
STEADY="${QN_CARD_STEADY:-1000}"
WINDOW="${QN_CARD_WINDOW:-15}"
MAX_SECONDS="${QN_CARD_MAX_SECONDS:-1700}"
DRAIN="${QN_CARD_DRAIN_TIMEOUT:-900}"
OUT="$QN_BENCH_OUT/cardinality.txt"
T="$QN_TMP"
DB=bench_cardinality
Q=card
PSQL="psql -X -q -t -A -v ON_ERROR_STOP=1 -h 127.0.0.1 -p $QN_PG_PORT -U postgres"
mkdir -p "$QN_BENCH_OUT"

QPID=""
LPID=""
REPORTED=""
rc=0
START=$(date +%s)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
cleanup () {
    trap "" INT TERM HUP
    trap - EXIT
    [ -n "$LPID" ] && kill -TERM "$LPID" 2>/dev/null
    [ -n "$QPID" ] && kill -TERM "$QPID" 2>/dev/null && wait "$QPID" 2>/dev/null
    true
}
#  Cut short (time limit, Ctrl-C): report what was measured so far.
interrupted () {
    echo "cardinality: interrupted; partial results follow" >&2
    [ -n "$REPORTED" ] || report || true
    exit "$1"
}
trap cleanup EXIT
trap 'interrupted 130' INT
trap 'interrupted 143' TERM
trap 'interrupted 129' HUP

$PSQL -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
PORT=$(sh "$QN_ROOT/scripts/pg.sh" freeport)
PORT=$PORT HOST=127.0.0.1 PG_HOST=127.0.0.1 PG_PORT=$QN_PG_PORT PG_DB=$DB \
    FILE_BUFFER_DIR="$T/spool" LOG_LEVEL=warn "$QN_BIN" > "$T/broker.log" 2>&1 &
QPID=$!
URL="http://127.0.0.1:$PORT"
n=0
until curl -sf "$URL/health" >/dev/null 2>&1; do
    n=$((n + 1))
    [ $n -gt 200 ] && { echo "cardinality: broker did not start"; cat "$T/broker.log"; exit 1; }
    sleep 0.1
done

# ---------------------------------------------------------------- checkpoint
# Run by the load generator at each checkpoint, load paused and drained:
# storage sizes, then each hot call once under auto_explain. A probe's
# figure is the buffers (shared hit + read) of its top plan node, which
# include every statement the function ran.
#  One round of probes tagged $1 (new partitions named probe<N>_$2_<i>);
#  the first rounds warm the session (plans, catalog caches).
probe_round () {
    cat <<EOF
SELECT /* ${1}push_existing */ count(*) FROM queen.push ('', array_fill ('$Q'::text, ARRAY[100]), ARRAY (SELECT 'h' || (g % 10) FROM generate_series (1, 100) g), array_fill (NULL::text, ARRAY[100]), array_fill (convert_to ('{"probe":true}', 'UTF8'), ARRAY[100]), array_fill (NULL::uuid, ARRAY[100]), array_fill (NULL::text, ARRAY[100]), array_fill (false, ARRAY[100]), false);
SELECT /* ${1}pop */ coalesce (array_agg (partition_id), '{}') AS pids, coalesce (array_agg (seq), '{}') AS seqs, count (seq) AS n FROM queen.pop ('', '$Q', NULL, NULL, NULL, NULL, 100, 10, gen_random_uuid (), false) WHERE seq IS NOT NULL \gset
SELECT /* ${1}ack */ count(*) FROM queen.ack ('', array_fill ('__QUEUE_MODE__'::text, ARRAY[:n]), :'pids'::bigint[], array_fill (NULL::text, ARRAY[:n]), :'seqs'::bigint[], array_fill ('completed'::text, ARRAY[:n]), array_fill (NULL::uuid, ARRAY[:n]), array_fill (NULL::text, ARRAY[:n]));
SELECT /* ${1}pop_empty */ count(*) FROM queen.pop ('', '$Q', NULL, NULL, NULL, NULL, 100, 10, gen_random_uuid (), false);
SELECT /* ${1}push_new */ count(*) FROM queen.push ('', array_fill ('$Q'::text, ARRAY[100]), ARRAY (SELECT 'probe' || current_setting ('qn.n') || '_$2_' || g FROM generate_series (1, 100) g), array_fill (NULL::text, ARRAY[100]), array_fill (convert_to ('{"probe":true}', 'UTF8'), ARRAY[100]), array_fill (NULL::uuid, ARRAY[100]), array_fill (NULL::text, ARRAY[100]), array_fill (false, ARRAY[100]), false);
SELECT /* ${1}pop_new */ coalesce (array_agg (partition_id), '{}') AS pids, coalesce (array_agg (seq), '{}') AS seqs, count (seq) AS n FROM queen.pop ('', '$Q', NULL, NULL, NULL, NULL, 100, 100, gen_random_uuid (), false) WHERE seq IS NOT NULL \\gset
SELECT /* ${1}ack_new */ count(*) FROM queen.ack ('', array_fill ('__QUEUE_MODE__'::text, ARRAY[:n]), :'pids'::bigint[], array_fill (NULL::text, ARRAY[:n]), :'seqs'::bigint[], array_fill ('completed'::text, ARRAY[:n]), array_fill (NULL::uuid, ARRAY[:n]), array_fill (NULL::text, ARRAY[:n]));
EOF
}
{
    cat <<EOF
LOAD 'auto_explain';
SET auto_explain.log_min_duration = 0;
SET auto_explain.log_analyze = on;
SET auto_explain.log_buffers = on;
SET auto_explain.log_timing = off;
SET auto_explain.log_nested_statements = on;
SELECT /* warm:pop_empty */ count(*) FROM queen.pop ('', '$Q', NULL, NULL, NULL, NULL, 100, 10, gen_random_uuid (), false);
SET client_min_messages = log;
SELECT /* probe:pop_unvac */ count(*) FROM queen.pop ('', '$Q', NULL, NULL, NULL, NULL, 100, 10, gen_random_uuid (), false);
SET client_min_messages = notice;
VACUUM queen.ready;
EOF
    probe_round warm0: 0
    probe_round warm1: 1
    echo "SET client_min_messages = log;"
    probe_round probe: 2
} > "$T/probe.sql"
cat > "$T/sizes.sql" <<EOF
SELECT (SELECT count(*) FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id AND q.name = '$Q'),
       (SELECT count(*) FROM queen.ready), (SELECT count(*) FROM queen.cursors),
       (SELECT count(*) FROM queen.messages),
       pg_total_relation_size ('queen.partitions'), pg_total_relation_size ('queen.ready'),
       pg_total_relation_size ('queen.cursors'),
       (SELECT coalesce (sum (pg_total_relation_size (format ('queen.%I', relname)::regclass)), 0) FROM queen.segments),
       pg_database_size (current_database ());
EOF
cat > "$T/checkpoint.sh" <<EOF
#!/bin/sh
N=\$QN_CARD_PARTITIONS
#  Dead tuples the load left in ready (before the probe's VACUUM)
D=\$($PSQL -d $DB -c "SELECT 'ready_dead=' || n_dead_tup || ' claim_kb=' || pg_relation_size ('queen.ready_claim') / 1024 FROM pg_stat_user_tables WHERE relid = 'queen.ready'::regclass")
PGOPTIONS="-c qn.n=\$N" $PSQL -d $DB -f "$T/probe.sql" > "$T/probe_\$N.log" 2>&1 || { cat "$T/probe_\$N.log" >&2; exit 1; }
B=\$(awk '/Query Text:.*probe:/ { sub(/.*probe:/, ""); sub(/ .*/, ""); name = \$0; next }
          name != "" && /Buffers:/ { h = 0; r = 0
              if (match(\$0, /hit=[0-9]+/)) h = substr(\$0, RSTART + 4, RLENGTH - 4)
              if (match(\$0, /read=[0-9]+/)) r = substr(\$0, RSTART + 5, RLENGTH - 5)
              printf " %s=%d", name, h + r; name = "" }' "$T/probe_\$N.log")
S=\$($PSQL -d $DB -F ' ' -f "$T/sizes.sql")
echo "\$N \$S\$B \$D" >> "$T/checkpoints.txt"
EOF

# ---------------------------------------------------------------- run
echo "cardinality: growing queue '$Q' to $CHECKPOINTS partitions at $RATE/s (load avg: $(cut -d' ' -f1-3 /proc/loadavg))"
: > "$T/card.jsonl"
node "$HERE/card_load.mjs" --url "$URL" --queue "$Q" --checkpoints "$CHECKPOINTS" --rate "$RATE" \
    --steady-rate "$STEADY" --window "$WINDOW" --max-seconds "$MAX_SECONDS" --drain-timeout "$DRAIN" \
    --checkpoint-cmd "sh $T/checkpoint.sh" > "$T/card.jsonl" &
LPID=$!
#  Echo progress while it runs
tail -f "$T/card.jsonl" --pid=$LPID 2>/dev/null | while IFS= read -r l; do echo "cardinality: $l" >&2; done &
TPID=$!
wait "$LPID" || rc=$?
LPID=""
wait "$TPID" 2>/dev/null || true

# ---------------------------------------------------------------- report
#  Field $2 of a JSON line: number or null.
jnum () {
    sed -n "s/.*\"$1\":\\([0-9.]*\\|null\\).*/\\1/p"
}
fmt_int () {
    awk -v v="$1" 'BEGIN { if (v == "" || v == "null") print "-"; else { s = sprintf("%d", v); r = "";
        while (length(s) > 3) { r = "," substr(s, length(s) - 2) r; s = substr(s, 1, length(s) - 3) } print s r } }'
}
ratio () {
    awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b != "" && a != "null" && b != "null" && b > 0) printf "%.2f", a / b; else print "n/a" }'
}
report () {
    REPORTED=1
    {
        echo "== cardinality: one queue grown to $(tail -n 1 "$T/checkpoints.txt" 2>/dev/null | cut -d' ' -f1) partitions"
        echo "   $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/^Mem:/ { print $2 }') GiB," \
             "PostgreSQL $($PSQL -d $DB -c 'SHOW server_version' 2>/dev/null), fsync on, synchronous_commit on;" \
             "load avg at start $LOAD_START, at end $(cut -d' ' -f1-3 /proc/loadavg)"
        echo "   steady load: 2 producers x batch 100 x 256 B over 1,000 hot partitions, 2 consumers pop batch 100" \
             "partitions 10 + ack/batch; windows ${WINDOW}s closed-loop, growth paused and queue drained at window start"
        echo
        printf "%-11s %9s %9s %8s %8s %9s %9s %8s %8s\n" partitions "push/s" "pop/s" "pop p50" "pop p99" "push p50" "push p99" "ack p50" "ack p99"
        grep '"phase":"window"' "$T/card.jsonl" | while read -r l; do
            printf "%-11s %9s %9s %8s %8s %9s %9s %8s %8s\n" "$(fmt_int "$(echo "$l" | jnum partitions)")" \
                "$(echo "$l" | jnum push_msgs_per_s)" "$(echo "$l" | jnum pop_msgs_per_s)" \
                "$(echo "$l" | jnum pop_p50_ms)" "$(echo "$l" | jnum pop_p99_ms)" \
                "$(echo "$l" | jnum push_p50_ms)" "$(echo "$l" | jnum push_p99_ms)" \
                "$(echo "$l" | jnum ack_p50_ms)" "$(echo "$l" | jnum ack_p99_ms)"
        done
        first=$(grep '"phase":"window"' "$T/card.jsonl" | head -n 1)
        last=$(grep '"phase":"window"' "$T/card.jsonl" | tail -n 1)
        if [ -n "$first" ] && [ "$first" != "$last" ]; then
            echo
            echo "ratio last/first checkpoint (goal: throughput >= 0.70, p99 <= 1.30):" \
                 "push/s $(ratio "$(echo "$last" | jnum push_msgs_per_s)" "$(echo "$first" | jnum push_msgs_per_s)")," \
                 "pop/s $(ratio "$(echo "$last" | jnum pop_msgs_per_s)" "$(echo "$first" | jnum pop_msgs_per_s)")," \
                 "pop p99 $(ratio "$(echo "$last" | jnum pop_p99_ms)" "$(echo "$first" | jnum pop_p99_ms)")," \
                 "push p99 $(ratio "$(echo "$last" | jnum push_p99_ms)" "$(echo "$first" | jnum push_p99_ms)")"
        fi
        echo
        echo "growth (steady load running, target $RATE new partitions/s):"
        printf "%-21s %11s %9s %9s %8s %8s\n" "partitions" "new part/s" "push/s" "pop/s" "pop p50" "pop p99"
        grep '"phase":"growth"' "$T/card.jsonl" | while read -r l; do
            printf "%-21s %11s %9s %9s %8s %8s\n" "$(fmt_int "$(echo "$l" | jnum from)") -> $(fmt_int "$(echo "$l" | jnum to)")" \
                "$(echo "$l" | jnum partitions_per_s)" "$(echo "$l" | jnum push_msgs_per_s)" \
                "$(echo "$l" | jnum pop_msgs_per_s)" "$(echo "$l" | jnum pop_p50_ms)" "$(echo "$l" | jnum pop_p99_ms)"
        done
        echo
        echo "storage and buffers touched by one call of each hot function (auto_explain, at the checkpoint):"
        printf "%-11s %9s %10s %10s %10s %10s %11s %6s %6s %6s %6s %6s %6s %6s %7s %8s %8s\n" partitions "ready" "cursors" \
            "part MiB" "ready MiB" "curs MiB" "msgs MiB" push pop ack empty newp popnew acknew unvac "dead" "claimKB"
        [ -f "$T/checkpoints.txt" ] && while read -r N parts ready curs msgs pb rb cb mb db rest; do
            buf () { echo " $rest" | sed -n "s/.* $1=\\([0-9]*\\).*/\\1/p"; }
            printf "%-11s %9s %10s %10.1f %10.1f %10.1f %11.1f %6s %6s %6s %6s %6s %6s %6s %7s %8s %8s\n" "$(fmt_int "$parts")" \
                "$(fmt_int "$ready")" "$(fmt_int "$curs")" \
                "$(awk -v b="$pb" 'BEGIN { print b / 1048576 }')" "$(awk -v b="$rb" 'BEGIN { print b / 1048576 }')" \
                "$(awk -v b="$cb" 'BEGIN { print b / 1048576 }')" "$(awk -v b="$mb" 'BEGIN { print b / 1048576 }')" \
                "$(buf push_existing)" "$(buf pop)" "$(buf ack)" "$(buf pop_empty)" "$(buf push_new)" "$(buf pop_new)" "$(buf ack_new)" \
                "$(buf pop_unvac)" "$(buf ready_dead)" "$(buf claim_kb)"
        done < "$T/checkpoints.txt"
        if [ "$(wc -l < "$T/checkpoints.txt" 2>/dev/null || echo 0)" -ge 2 ]; then
            set -- $(head -n 1 "$T/checkpoints.txt")
            p0=$2; s0=$(($6 + $7 + $8))
            set -- $(tail -n 1 "$T/checkpoints.txt")
            p1=$2; s1=$(($6 + $7 + $8)); m1=$9; n1=$5
            echo
            echo "bytes per partition (partitions + ready + cursors tables with indexes, growth between first and last checkpoint):" \
                 "$(awk -v a="$s0" -v b="$s1" -v x="$p0" -v y="$p1" 'BEGIN { printf "%.0f", (b - a) / (y - x) }')"
            echo "bytes per stored message (segments with indexes, at the last checkpoint):" \
                 "$(awk -v m="$m1" -v n="$n1" 'BEGIN { if (n > 0) printf "%.0f", m / n; else print "n/a" }')" \
                 "(new partitions hold one 10-byte message each; hot messages 256 B)"
        fi
        echo "probe columns: buffers (shared hit+read) of one call: push = queen.push of 100 msgs to 10 hot partitions," \
             "pop = wildcard pop batch 100 partitions 10 (gets them), ack = queen.ack of those 100, empty = the same pop" \
             "finding nothing, newp = push of 100 msgs to 100 new partitions, popnew = pop batch 100 partitions 100 of those, acknew = their ack;" \
             "each measured in the third round of one session after VACUUM queen.ready (so no dead index entries from the load are counted);" \
             "unvac = the empty pop before that VACUUM (second call: dead ready_claim entries left by the load)," \
             "dead = n_dead_tup of queen.ready then, claimKB = size of its claim index."
        echo "elapsed $(( $(date +%s) - START )) s; load generator status $rc"
        sed 's/^/raw: /' "$T/card.jsonl"
    } | tee "$OUT"
    cp "$T/probe_"*.log "$QN_BENCH_OUT/" 2>/dev/null || true
}
report
exit "$rc"
