#!/bin/sh
# bench/kafka.sh - scenario "kafka": the Kafka door against the HTTP API,
# side by side in one run, the same shape: 256-byte values, 1,000 keys /
# native partitions, 8 Kafka partitions on the Kafka topic.
#   1. write: HTTP push (8 connections, batches of 100; bench/load.mjs) vs
#      librdkafka produce (acks=all, linger 5 ms, murmur2_random;
#      bench/kafka_load.c, built here) for QN_BENCH_SECONDS each.
#   2. read: what each wrote, read back: HTTP pops of 100 with autoAck from
#      8 connections (bench/kafka_http.mjs) vs one librdkafka consumer
#      assigned every partition from the beginning (no group).
#   3. long-poll wake-up, produce/push -> delivery, p50/p99: a librdkafka
#      consumer parked at the end vs an HTTP pop parked with wait=true.
# msg/s each way and the ratios Kafka/HTTP (issue goal >= 0.8).
# Writes QN_BENCH_OUT/kafka.txt. Run by bench/run.sh (`sh bench/kafka.sh`
# alone runs it through run.sh). Environment: QN_BENCH_SECONDS (10).
set -eu

HERE=$(cd "$(dirname "$0")" && pwd -P)
if [ -z "${QN_PG_PORT:-}" ]; then
    exec sh "$HERE/run.sh" "${1:-build}" kafka
fi
SECS="${QN_BENCH_SECONDS:-10}"
. "$HERE/lib.sh"
KPORT=$(sh "$QN_ROOT/scripts/pg.sh" freeport)
BENCH_BROKER_ENV="KAFKA_PORT=$KPORT KAFKA_ADVERTISED_HOST=127.0.0.1 KAFKA_DEFAULT_PARTITIONS=8"
bench_start kafka
B="127.0.0.1:$KPORT"
LOAD="$QN_TMP/kafka_load"
cc -std=c11 -O2 -Wall -Wextra -Werror "$HERE/kafka_load.c" -o "$LOAD" -lrdkafka
# Kafka names the topics first (Metadata auto-creation: 8 partitions)
kcat -b "$B" -L -t kbench >/dev/null
kcat -b "$B" -L -t kwake >/dev/null

echo "kafka: HTTP push (${SECS}s)"
HPUSH=$(node "$HERE/load.mjs" push --url "$URL" --queue hbench --conns 8 --batch 100 --payload 256 \
        --partitions 1000 --seconds "$SECS")
echo "kafka: Kafka produce (${SECS}s)"
KPROD=$("$LOAD" produce "$B" kbench "$SECS" 1000 256)
HN=$(echo "$HPUSH" | sed 's/.*"pushed":\([0-9]*\).*/\1/')
KN=$(echo "$KPROD" | sed 's/.*"delivered":\([0-9]*\).*/\1/')
echo "kafka: HTTP read of $HN"
HREAD=$(node "$HERE/kafka_http.mjs" "$URL" hbench "$HN" 8)
echo "kafka: Kafka read of $KN"
KREAD=$("$LOAD" consume "$B" kbench "$KN")
echo "kafka: wake-up"
KWAKE=$("$LOAD" wake "$B" kwake 200)
HWAKE=$(node "$HERE/load.mjs" wake --url "$URL" --queue hwake --samples 200 --interval 20)
{
    echo "kafka: librdkafka $(pkg-config --modversion rdkafka 2>/dev/null || echo '?') vs HTTP, 256-byte values, 1000 keys, 8 Kafka partitions, $(nproc) cores, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "  http push     $HPUSH"
    echo "  kafka produce $KPROD"
    echo "  http read     $HREAD"
    echo "  kafka read    $KREAD"
    echo "  kafka wake    $KWAKE"
    echo "  http wake     $HWAKE"
    node -e '
const [hp, kp, hr, kr] = process.argv.slice(1).map((x) => JSON.parse(x).msgs_per_s);
console.log(`  write: kafka ${kp} msg/s, http ${hp} msg/s, ratio kafka/http ${(kp / hp).toFixed(2)}`);
console.log(`  read:  kafka ${kr} msg/s, http ${hr} msg/s, ratio kafka/http ${(kr / hr).toFixed(2)}`);
' "$HPUSH" "$KPROD" "$HREAD" "$KREAD"
} | tee "$QN_BENCH_OUT/kafka.txt"
