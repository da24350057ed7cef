#!/bin/sh
# bench/messaging.sh - scenario "messaging": the core hot paths beside their
# raw PostgreSQL ceilings, in one run on one server.
#   1. push: HTTP, batches of 100, 256-byte payloads, 1,000 partitions,
#      8 connections  vs  pgbench calling queen.push with the same 100-row
#      arrays from 8 clients (the SQL the broker runs, minus the broker).
#   2. cycle: producers and consumers together (push; pop batch 100 + ack
#      batch)  vs  pgbench running the same pop and ack calls (two round
#      trips, like the broker) beside the push script. Pops claim up to 100
#      partitions for a batch of 100 (the sparse pattern: 1,000 partitions).
#   3. long-poll wake-up latency push -> delivery, p50/p99.
#   4. broker RSS at idle and under load.
# Consumed counts come from the cursors (same query for broker and pgbench).
# Writes QN_BENCH_OUT/messaging.txt. Run by bench/run.sh.
# Environment: QN_BENCH_SECONDS (15 per measurement).
set -eu

HERE=$(cd "$(dirname "$0")" && pwd -P)
if [ -z "${QN_PG_PORT:-}" ]; then
    exec sh "$HERE/run.sh" "${1:-build}" messaging
fi

SECS="${QN_BENCH_SECONDS:-15}"
OUT="$QN_BENCH_OUT/messaging.txt"
T="$QN_TMP"
PGBENCH=$(ls /usr/lib/postgresql/*/bin/pgbench 2>/dev/null | tail -n 1)

. "$HERE/lib.sh"
bench_start messaging

RSS_IDLE=$(bench_rss)

# ---------------------------------------------------------------- 1. push
echo "messaging: push via HTTP (${SECS}s)"
PUSH=$(node "$HERE/load.mjs" push --url "$URL" --queue bpush --conns 8 --batch 100 --payload 256 \
       --partitions 1000 --seconds "$SECS")
RSS_LOAD=$(bench_rss)
PUSH_RATE=$(echo "$PUSH" | sed 's/.*"msgs_per_s":\([0-9]*\).*/\1/')

cat > "$T/push.sql" <<EOF
SELECT count(*) FROM queen.push ('', array_fill ('bpg'::text, ARRAY[100]),
  ARRAY (SELECT 'p' || floor (random () * 1000)::int FROM generate_series (1, 100)),
  array_fill (NULL::text, ARRAY[100]),
  ARRAY (SELECT convert_to ('{"s":' || g || ',"t":1764500000000,"f":"' || repeat ('x', 216) || '"}', 'UTF8')
         FROM generate_series (1, 100) g),
  array_fill (NULL::uuid, ARRAY[100]), array_fill (NULL::text, ARRAY[100]),
  array_fill (false, ARRAY[100]), false);
EOF
sed 's/bpg/bpgc/' "$T/push.sql" > "$T/push_c.sql"
cat > "$T/consume.sql" <<EOF
SELECT coalesce (array_agg (partition_id), '{}') AS pids, coalesce (array_agg (seq), '{}') AS seqs,
       count (seq) AS n
  FROM queen.pop ('', 'bpgc', NULL, '__QUEUE_MODE__', NULL, NULL, 100, 100, gen_random_uuid (), false)
 WHERE seq IS NOT NULL \gset
SELECT count(*) FROM queen.ack ('', array_fill ('__QUEUE_MODE__'::text, ARRAY[:n]), ':pids'::bigint[],
  array_fill (NULL::text, ARRAY[:n]), ':seqs'::bigint[], array_fill ('completed'::text, ARRAY[:n]),
  array_fill (NULL::uuid, ARRAY[:n]), array_fill (NULL::text, ARRAY[:n]));
EOF
# Create the pgbench queues with the same options.
curl -sf -X POST "$URL/api/v1/configure" -H 'Content-Type: application/json' \
     -d '{"queue":"bpg","options":{"leaseTime":60}}' >/dev/null
curl -sf -X POST "$URL/api/v1/configure" -H 'Content-Type: application/json' \
     -d '{"queue":"bpgc","options":{"leaseTime":60}}' >/dev/null

echo "messaging: push ceiling via pgbench (${SECS}s)"
PGOPTIONS="-c jit=off" "$PGBENCH" -n -h 127.0.0.1 -p "$QN_PG_PORT" -U postgres -c 8 -j 2 -T "$SECS" \
    -f "$T/push.sql" $DB > "$T/pgbench_push.txt" 2>&1 || { cat "$T/pgbench_push.txt"; exit 1; }
PG_TPS=$(awk '/^tps/ { print int($3) }' "$T/pgbench_push.txt" | head -n 1)
PG_PUSH_RATE=$((PG_TPS * 100))

# ---------------------------------------------------------------- 2. cycle
echo "messaging: push/pop/ack cycle via HTTP (${SECS}s)"
C0=$(bench_consumed bcycle)
CYCLE=$(node "$HERE/load.mjs" cycle --url "$URL" --queue bcycle --producers 4 --consumers 4 --batch 100 \
        --payload 256 --partitions 1000 --seconds "$SECS")
C1=$(bench_consumed bcycle)
CYCLE_RATE=$(( (C1 - C0) / SECS ))

echo "messaging: cycle ceiling via pgbench (${SECS}s)"
P0=$(bench_consumed bpgc)
PGOPTIONS="-c jit=off" "$PGBENCH" -n -h 127.0.0.1 -p "$QN_PG_PORT" -U postgres -c 8 -j 2 -T "$SECS" \
    -f "$T/push_c.sql@1" -f "$T/consume.sql@1" $DB > "$T/pgbench_cycle.txt" 2>&1 \
    || { cat "$T/pgbench_cycle.txt"; exit 1; }
P1=$(bench_consumed bpgc)
PG_CYCLE_RATE=$(( (P1 - P0) / SECS ))

# ---------------------------------------------------------------- 3. wake-up
echo "messaging: long-poll wake-up latency"
WAKE=$(node "$HERE/load.mjs" wake --url "$URL" --queue bwake --samples 300 --interval 20)
P50=$(echo "$WAKE" | sed 's/.*"p50_ms":\([0-9.]*\).*/\1/')
P99=$(echo "$WAKE" | sed 's/.*"p99_ms":\([0-9.]*\).*/\1/')
RSS_END=$(bench_rss)

ratio () { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
{
    echo "== messaging ($(nproc) cores, PostgreSQL $($PSQL -d $DB -c 'SHOW server_version'), fsync on, synchronous_commit on)"
    printf "%-34s %12s %12s %8s  %s\n" scenario queen ceiling ratio target
    printf "%-34s %12s %12s %8s  %s\n" "push msg/s (HTTP vs pgbench)" "$PUSH_RATE" "$PG_PUSH_RATE" \
        "$(ratio "$PUSH_RATE" "$PG_PUSH_RATE")" ">= 0.80"
    printf "%-34s %12s %12s %8s  %s\n" "cycle consumed msg/s" "$CYCLE_RATE" "$PG_CYCLE_RATE" \
        "$(ratio "$CYCLE_RATE" "$PG_CYCLE_RATE")" ">= 0.60"
    printf "%-34s %12s\n" "wake-up p50 ms" "$P50"
    printf "%-34s %12s %21s\n" "wake-up p99 ms" "$P99" "<= 10"
    printf "%-34s %12s\n" "RSS idle KiB" "$RSS_IDLE"
    printf "%-34s %12s\n" "RSS under push load KiB" "$RSS_LOAD"
    printf "%-34s %12s %21s\n" "RSS at end KiB" "$RSS_END" "<= 30720"
    echo "raw: push=$PUSH"
    echo "raw: cycle=$CYCLE"
    echo "raw: wake=$WAKE"
} | tee "$OUT"
