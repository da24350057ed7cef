#!/bin/sh
# bench/sink.sh - scenario "sink": queen-sink writing a queue to a bucket.
# A broker on the bench cluster, s3rver (npm) as the bucket, build/queen-sink
# between them (SINK_WINDOW=10s). For Parquet (zstd) and for JSONL (gzip):
# producers push QN_BENCH_SINK_MESSAGES (200,000) messages of ~200-byte
# JSON into 100 partitions while the sink runs; measured from the first push
# until the sink has written every message to the bucket (msg/s), plus the
# objects' total size and size per million messages, and Parquet against
# gzipped JSONL. Writes QN_BENCH_OUT/sink.txt. Run alone as
# `sh bench/sink.sh [BUILD_DIR]` it goes through bench/run.sh.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd -P)
if [ -z "${QN_PG_PORT:-}" ]; then
    exec sh "$HERE/run.sh" "${1:-build}" sink
fi

N="${QN_BENCH_SINK_MESSAGES:-200000}"
OUT="$QN_BENCH_OUT/sink.txt"
SINK="$(dirname "$QN_BIN")/queen-sink"

. "$HERE/lib.sh"
bench_start sink

SPORT=$(sh "$QN_ROOT/scripts/pg.sh" freeport)
S3PORT=$(sh "$QN_ROOT/scripts/pg.sh" freeport)
echo "sink: $N messages per format, pushed while queen-sink writes them to s3rver"
node "$HERE/sink_load.mjs" --url "$URL" --sink "$SINK" --messages "$N" --port "$SPORT" \
    --s3port "$S3PORT" --dir "$QN_TMP" > "$QN_TMP/sink.jsonl"
field () { sed -n "/\"format\":\"$1\"/s/.*\"$2\":\([0-9]*\).*/\1/p" "$QN_TMP/sink.jsonl"; }
PQ_RATE=$(field parquet msgs_per_s); PQ_BYTES=$(field parquet bytes); PQ_PM=$(field parquet bytes_per_million)
PQ_OBJ=$(field parquet objects); PQ_PUSH=$(field parquet push_ms)
JS_RATE=$(field jsonl msgs_per_s); JS_BYTES=$(field jsonl bytes); JS_PM=$(field jsonl bytes_per_million)
JS_OBJ=$(field jsonl objects); JS_PUSH=$(field jsonl push_ms)
RATIO=$(awk -v a="$PQ_BYTES" -v b="$JS_BYTES" 'BEGIN { printf "%.2f", a / b }')

{
    echo "sink: $N messages (~200-byte JSON, 100 partitions), SINK_WINDOW=10s, pushed while the sink runs"
    printf '%-16s %12s %10s %14s %18s %12s\n' format "msg/s" objects bytes "bytes/1M msgs" "push ms"
    printf '%-16s %12s %10s %14s %18s %12s\n' "parquet (zstd)" "$PQ_RATE" "$PQ_OBJ" "$PQ_BYTES" "$PQ_PM" "$PQ_PUSH"
    printf '%-16s %12s %10s %14s %18s %12s\n' "jsonl (gzip)" "$JS_RATE" "$JS_OBJ" "$JS_BYTES" "$JS_PM" "$JS_PUSH"
    echo "parquet / gzipped jsonl size: $RATIO"
} | tee "$OUT"
