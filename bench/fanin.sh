#!/bin/sh
# bench/fanin.sh - scenario "fanin": a fan-in pipeline stage built on
# transaction riders, beside the plain push/pop/ack cycle of the same run.
#   1. cycle: 4 producers push batches of 100 (256-byte payloads, 1,000
#      partitions); 4 consumers pop batches of 100 (up to 100 partitions per
#      pop) and ack them with /api/v1/ack/batch (`load.mjs cycle`).
#   2. fan-in: the same producers; each consumer pops the same way and
#      commits one POST /api/v1/transaction per batch: an ack per popped
#      message, one push of the batch's aggregate to another queue, and a
#      kv.set of the consumer's progress with ifVersion (bench/fanin_load.mjs).
#   3. and 4. the consumers of 1. and 2. alone, draining a backlog of
#      QN_BENCH_BACKLOG messages (bulk-pushed through SQL beforehand, 1,000
#      partitions): the consumer side without the producers' share of the
#      two cores.
# All count consumed messages per second from the source queue's cursors
# (the same query for all). Writes QN_BENCH_OUT/fanin.txt. Run by
# bench/run.sh; run alone as `sh bench/fanin.sh [BUILD_DIR]` it goes
# through bench/run.sh. Environment: QN_BENCH_SECONDS (15 per measurement),
# QN_BENCH_BACKLOG (200000 per drain).
set -eu

HERE=$(cd "$(dirname "$0")" && pwd -P)
if [ -z "${QN_PG_PORT:-}" ]; then
    exec sh "$HERE/run.sh" "${1:-build}" fanin
fi

SECS="${QN_BENCH_SECONDS:-15}"
BACKLOG="${QN_BENCH_BACKLOG:-200000}"
OUT="$QN_BENCH_OUT/fanin.txt"
T="$QN_TMP"

. "$HERE/lib.sh"
bench_start fanin


# ---------------------------------------------------------------- 1. cycle
echo "fanin: plain push/pop/ack cycle via HTTP (${SECS}s)"
C0=$(bench_consumed fcycle)
CYCLE=$(node "$HERE/load.mjs" cycle --url "$URL" --queue fcycle --producers 4 --consumers 4 --batch 100 \
        --payload 256 --partitions 1000 --seconds "$SECS")
C1=$(bench_consumed fcycle)
CYCLE_RATE=$(( (C1 - C0) / SECS ))

# ---------------------------------------------------------------- 2. fan-in
echo "fanin: pop -> transaction (acks + push + kv.set) via HTTP (${SECS}s)"
F0=$(bench_consumed fsrc)
FANIN=$(node "$HERE/fanin_load.mjs" --url "$URL" --queue fsrc --out fout --producers 4 --consumers 4 \
        --batch 100 --payload 256 --partitions 1000 --seconds "$SECS")
F1=$(bench_consumed fsrc)
FANIN_RATE=$(( (F1 - F0) / SECS ))
BUNDLES=$(echo "$FANIN" | sed 's/.*"bundles":\([0-9]*\).*/\1/')
ERRORS=$(echo "$FANIN" | sed 's/.*"errors":\([0-9]*\).*/\1/')
OUTS=$(bench_stored fout)
KV_SUM=$($PSQL -d $DB -c "SELECT coalesce (sum ((convert_from (value, 'UTF8')::json ->> 'bundles')::int), 0)
    FROM queen.kv WHERE ns = 'fanin'")
BUNDLE_RATE=$(( BUNDLES / SECS ))

# ---------------------------------------------------------------- 3./4. drains
# A backlog of $BACKLOG messages in queue $1 (1,000 per queen.push call).
fill () {
    curl -sf -X POST "$URL/api/v1/configure" -H 'Content-Type: application/json' \
         -d "{\"queue\":\"$1\",\"options\":{\"leaseTime\":60}}" >/dev/null
    $PSQL -d $DB -c "SELECT count(*) FROM generate_series (1, $BACKLOG / 1000) b,
        LATERAL queen.push ('', array_fill ('$1'::text, ARRAY[1000]),
          ARRAY (SELECT 'p' || (g % 1000) FROM generate_series (1, 1000) g), array_fill (NULL::text, ARRAY[1000]),
          ARRAY (SELECT convert_to ('{\"s\":' || (b * 1000 + g) || ',\"t\":0,\"f\":\"' || repeat ('x', 216) || '\"}', 'UTF8')
                   FROM generate_series (1, 1000) g),
          array_fill (NULL::uuid, ARRAY[1000]), array_fill (NULL::text, ARRAY[1000]),
          array_fill (false, ARRAY[1000]), false)" >/dev/null
    $PSQL -d $DB -c "VACUUM ANALYZE" >/dev/null
}
echo "fanin: backlogs of $BACKLOG messages"
fill dcycle
fill dsrc
echo "fanin: drain with pop + ack/batch (${SECS}s)"
D0=$(bench_consumed dcycle)
DCYCLE=$(node "$HERE/load.mjs" cycle --url "$URL" --queue dcycle --producers 0 --consumers 4 --batch 100 \
         --partitions 1000 --seconds "$SECS")
D1=$(bench_consumed dcycle)
DCYCLE_RATE=$(( (D1 - D0) / SECS ))
echo "fanin: drain with pop + transaction (${SECS}s)"
E0=$(bench_consumed dsrc)
DFANIN=$(node "$HERE/fanin_load.mjs" --url "$URL" --queue dsrc --out dout --producers 0 --consumers 4 \
         --batch 100 --partitions 1000 --seconds "$SECS")
E1=$(bench_consumed dsrc)
DFANIN_RATE=$(( (E1 - E0) / SECS ))
DERRORS=$(echo "$DFANIN" | sed 's/.*"errors":\([0-9]*\).*/\1/')
DBUNDLES=$(echo "$DFANIN" | sed 's/.*"bundles":\([0-9]*\).*/\1/')
OUTS_ALL=$(( $(bench_stored fout) + $(bench_stored dout) ))
KV_ALL=$($PSQL -d $DB -c "SELECT coalesce (sum ((convert_from (value, 'UTF8')::json ->> 'bundles')::int), 0)
    FROM queen.kv WHERE ns = 'fanin'")
[ "$D1" -lt "$BACKLOG" ] && [ "$E1" -lt "$BACKLOG" ] \
    || echo "fanin: warning: a backlog ran out; its drain rate is a lower bound" >&2

ratio () { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
{
    echo "== fanin ($(nproc) cores, PostgreSQL $($PSQL -d $DB -c 'SHOW server_version'), fsync on, synchronous_commit on)"
    printf "%-52s %12s %12s %8s\n" scenario "msg/s" cycle ratio
    printf "%-52s %12s %12s %8s\n" "cycle: pop 100 + ack/batch (consumed)" "$CYCLE_RATE" "$CYCLE_RATE" "1.00"
    printf "%-52s %12s %12s %8s\n" "fan-in: pop 100 + txn (100 acks, push, kv.set)" "$FANIN_RATE" "$CYCLE_RATE" \
        "$(ratio "$FANIN_RATE" "$CYCLE_RATE")"
    printf "%-52s %12s %12s %8s\n" "drain: pop 100 + ack/batch (4 consumers alone)" "$DCYCLE_RATE" "$DCYCLE_RATE" "1.00"
    printf "%-52s %12s %12s %8s\n" "drain: pop 100 + txn (100 acks, push, kv.set)" "$DFANIN_RATE" "$DCYCLE_RATE" \
        "$(ratio "$DFANIN_RATE" "$DCYCLE_RATE")"
    echo "fan-in transactions/s: $BUNDLE_RATE (avg $(ratio "$(( F1 - F0 ))" "$BUNDLES") acks each),"\
         "drain $(( DBUNDLES / SECS )) (avg $(ratio "$(( E1 - E0 ))" "$DBUNDLES") acks each); failed: $ERRORS + $DERRORS"
    echo "check: aggregates pushed $OUTS = bundles counted in kv $KV_SUM (with the drain: $OUTS_ALL = $KV_ALL)"
    echo "raw: cycle=$CYCLE"
    echo "raw: fanin=$FANIN"
    echo "raw: drain cycle=$DCYCLE"
    echo "raw: drain fanin=$DFANIN"
} | tee "$OUT"
[ "$OUTS" = "$KV_SUM" ] && [ "$OUTS_ALL" = "$KV_ALL" ] && [ "$ERRORS" = 0 ] && [ "$DERRORS" = 0 ]
