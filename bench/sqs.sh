#!/bin/sh
# bench/sqs.sh - scenario "sqs": the SQS front door against the HTTP API,
# side by side in one run (bench/sqs_load.mjs): SendMessageBatch 10 +
# ReceiveMessage 10 + DeleteMessageBatch with the AWS SDK v3 (JSON 1.0,
# signatures verified), and push 10 + pop 10 + ack/batch over HTTP; msg/s
# of both and the ratio SQS/HTTP (goal >= 0.7), and p50/p99 of a parked
# ReceiveMessage's wake-up by a send. Writes QN_BENCH_OUT/sqs.txt.
# Environment: SQS_BENCH_SECONDS (10), SQS_BENCH_WORKERS (8).
set -eu

HERE=$(cd "$(dirname "$0")" && pwd -P)
if [ -z "${QN_PG_PORT:-}" ]; then
    exec sh "$HERE/run.sh" "${1:-build}" sqs
fi
. "$HERE/lib.sh"
SQS_PORT=$(sh "$QN_ROOT/scripts/pg.sh" freeport)
BENCH_BROKER_ENV="SQS_PORT=$SQS_PORT SQS_CREDENTIALS=AKIDBENCH:bench"
bench_start sqs
out=$(node "$HERE/sqs_load.mjs" "http://127.0.0.1:$SQS_PORT" "$URL" "${SQS_BENCH_SECONDS:-10}" "${SQS_BENCH_WORKERS:-8}")
{
    echo "sqs: SDK v3 batch 10 send/receive/delete vs HTTP push/pop/ack of 10, $(nproc) cores, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "$out"
} | tee "$QN_BENCH_OUT/sqs.txt"
