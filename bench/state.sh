#!/bin/sh
# bench/state.sh - scenario "state": the kv store and timers.
#   1. kv CAS updates/s: 16 HTTP clients, 1,000 keys, each update a GET and
#      a PUT ?ifVersion= (read-modify-write of a counter)  vs  pgbench
#      running queen.kv_get + queen.kv_put (the same two calls, minus the
#      broker) from 16 clients.
#   2. timer firing lag at light load: 300 timers created through POST
#      /api/v1/timers, coming due one by one over 15 s.
#   3. timer firing lag under load: 100,000 timers due within one minute
#      (inserted in bulk through SQL for the setup, into 1,000 partitions of
#      one queue), fired by one broker.
# Lag = message created_at - timer due_at, read from the database (both on
# the database clock). Writes QN_BENCH_OUT/state.txt. Run by bench/run.sh;
# run alone as `sh bench/state.sh [BUILD_DIR]` it goes through bench/run.sh.
# Environment: QN_BENCH_SECONDS (15 per throughput measurement),
# QN_BENCH_TIMERS (100000), QN_BENCH_TIMER_WINDOW_S (60).
set -eu

HERE=$(cd "$(dirname "$0")" && pwd -P)
if [ -z "${QN_PG_PORT:-}" ]; then
    exec sh "$HERE/run.sh" "${1:-build}" state
fi

SECS="${QN_BENCH_SECONDS:-15}"
NTIMERS="${QN_BENCH_TIMERS:-100000}"
WINDOW="${QN_BENCH_TIMER_WINDOW_S:-60}"
OUT="$QN_BENCH_OUT/state.txt"
T="$QN_TMP"
PGBENCH=$(ls /usr/lib/postgresql/*/bin/pgbench 2>/dev/null | tail -n 1)

. "$HERE/lib.sh"
bench_start state

# Percentiles of the firing lag (ms) of the fired timers of queue $1:
# "p50 p99 max count".
lag () {
    $PSQL -d $DB -F ' ' -c "SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY l)::numeric, 1),
        round(percentile_cont(0.99) WITHIN GROUP (ORDER BY l)::numeric, 1), round(max(l)::numeric, 1), count(*)
        FROM (SELECT extract(epoch FROM m.created_at - t.due_at) * 1000 AS l
                FROM queen.timers t JOIN queen.messages m ON m.seq = t.seq WHERE t.queue = '$1') s"
}
pending () {
    $PSQL -d $DB -c "SELECT count(*) FROM queen.timers WHERE queue = '$1' AND fired_at IS NULL"
}

# ---------------------------------------------------------------- 1. kv CAS
echo "state: kv CAS via HTTP (${SECS}s, 16 clients, 1000 keys)"
CAS=$(node "$HERE/state_load.mjs" cas --url "$URL" --bucket bcas --keys 1000 --clients 16 --seconds "$SECS")
CAS_RATE=$(echo "$CAS" | sed 's/.*"updates_per_s":\([0-9]*\).*/\1/')

$PSQL -d $DB -c "SELECT count(*) FROM generate_series(1, 1000) g,
    LATERAL queen.kv_put('', 'bpg', 'k' || g, '0'::bytea, NULL, NULL)" >/dev/null
cat > "$T/cas.sql" <<'EOF'
\set k random(1, 1000)
SELECT version FROM queen.kv_get('', 'bpg', 'k' || :k) \gset
SELECT status FROM queen.kv_put('', 'bpg', 'k' || :k, '1'::bytea, :version, NULL);
EOF
echo "state: kv CAS ceiling via pgbench (${SECS}s)"
PGOPTIONS="-c jit=off" "$PGBENCH" -n -h 127.0.0.1 -p "$QN_PG_PORT" -U postgres -c 16 -j 2 -T "$SECS" \
    -f "$T/cas.sql" $DB > "$T/pgbench_cas.txt" 2>&1
PG_CAS_RATE=$(awk '/^tps/ { print int($3) }' "$T/pgbench_cas.txt" | head -n 1)

# ---------------------------------------------------------------- 2. light load
echo "state: timer lag at light load (300 timers over 15 s, via HTTP)"
LIGHT=$(node "$HERE/state_load.mjs" timers --url "$URL" --queue blight --count 300 --spread 15000 --lead 1000)
n=0
while [ "$(pending blight)" != 0 ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
sleep 2
set -- $(lag blight)
L50=$1 L99=$2 LMAX=$3 LN=$4

# ---------------------------------------------------------------- 3. 100k in a minute
echo "state: $NTIMERS timers due within ${WINDOW}s (bulk insert through SQL)"
# Due times count from the insert's start (now()) plus a lead that covers
# the insert itself: rows only become visible at its commit.
LEAD=15
I0=$(date +%s)
$PSQL -d $DB -c "INSERT INTO queen.timers (tenant, timer_id, due_at, queue, partition, txn_id, txn_given,
        payload, fingerprint)
    SELECT '', 'bt-' || g, d, 'bheavy', 'p' || (g % 1000), 'bt-' || g, true, p,
           queen._timer_fp('bheavy', 'p' || (g % 1000), 'bt-' || g, 'at:' || (extract(epoch FROM d) * 1000000)::bigint, p)
      FROM generate_series(1, $NTIMERS) g,
           LATERAL (SELECT now() + interval '$LEAD seconds' + (g::float8 / $NTIMERS * $WINDOW) * interval '1 second' AS d,
                           convert_to('{\"i\":' || g || '}', 'UTF8') AS p) x"
INSERT_S=$(( $(date +%s) - I0 ))
[ "$INSERT_S" -lt "$LEAD" ] || echo "state: warning: the insert took ${INSERT_S}s, longer than the ${LEAD}s lead" >&2
START=$(date +%s)
n=0
while [ "$(pending bheavy)" != 0 ] && [ $n -lt $((WINDOW + LEAD + 60)) ]; do sleep 1; n=$((n + 1)); done
LEFT=$(pending bheavy)
ELAPSED=$(( $(date +%s) - START ))
set -- $(lag bheavy)
H50=$1 H99=$2 HMAX=$3 HN=$4
RSS=$(awk '/VmRSS/ { print $2 }' "/proc/$QPID/status")

ratio () { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
{
    echo "== state ($(nproc) cores, PostgreSQL $($PSQL -d $DB -c 'SHOW server_version'), fsync on, synchronous_commit on)"
    printf "%-40s %12s %12s %8s\n" scenario queen ceiling ratio
    printf "%-40s %12s %12s %8s\n" "kv CAS updates/s (16 clients, 1k keys)" "$CAS_RATE" "$PG_CAS_RATE" \
        "$(ratio "$CAS_RATE" "$PG_CAS_RATE")"
    printf "%-40s %12s %12s %12s %8s\n" "timer lag ms" p50 p99 max fired
    printf "%-40s %12s %12s %12s %8s\n" "light (300 over 15 s, HTTP)" "$L50" "$L99" "$LMAX" "$LN"
    printf "%-40s %12s %12s %12s %8s\n" "$NTIMERS due within ${WINDOW} s (SQL setup)" "$H50" "$H99" "$HMAX" "$HN"
    echo "timers not fired at the end: $LEFT (insert ${INSERT_S} s, then waited ${ELAPSED} s); broker RSS ${RSS} KiB"
    echo "raw: cas=$CAS"
    echo "raw: light=$LIGHT"
} | tee "$OUT"
[ "$LEFT" = 0 ]
