#!/bin/sh
# bench/fanout.sh - scenario "fanout": N consumer groups (1, 4, 10) each
# receiving every message of one queue.
#   For each N and each offered rate: a fresh queue (100 partitions), N
#   named groups created before the first push, 2 producers pushing
#   batches of 100 256-byte messages paced at the offered rate for
#   QN_FANOUT_SECONDS, one long-polling consumer per group (pop batch 100,
#   partitions 10, ack/batch); then the groups get up to 120 s to catch up.
#   Reports pushed and delivered msg/s (delivered = sum over the groups),
#   each group's lag (messages pushed - messages it acked) over the run,
#   sampled every 0.5 s, and end-to-end latency (payload timestamp ->
#   receipt).
# Writes QN_BENCH_OUT/fanout.txt. Run by bench/run.sh.
# Environment: QN_FANOUT_GROUPS ("1 4 10"), QN_FANOUT_RATES ("1000 4000"
# msg/s offered), QN_FANOUT_SECONDS (20).
set -eu

HERE=$(cd "$(dirname "$0")" && pwd -P)
if [ -z "${QN_PG_PORT:-}" ]; then
    exec sh "$HERE/run.sh" "${1:-build}" fanout
fi

GROUPS="${QN_FANOUT_GROUPS:-1 4 10}"
RATES="${QN_FANOUT_RATES:-1000 4000}"
SECS="${QN_FANOUT_SECONDS:-20}"
OUT="$QN_BENCH_OUT/fanout.txt"
T="$QN_TMP"
DB=bench_fanout
PSQL="psql -X -q -t -A -h 127.0.0.1 -p $QN_PG_PORT -U postgres"
mkdir -p "$QN_BENCH_OUT"

QPID=""
cleanup () {
    trap "" INT TERM HUP
    trap - EXIT
    [ -n "$QPID" ] && kill -TERM "$QPID" 2>/dev/null && wait "$QPID" 2>/dev/null
    true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

$PSQL -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
PORT=$(sh "$QN_ROOT/scripts/pg.sh" freeport)
PORT=$PORT HOST=127.0.0.1 PG_HOST=127.0.0.1 PG_PORT=$QN_PG_PORT PG_DB=$DB \
    FILE_BUFFER_DIR="$T/spool" LOG_LEVEL=warn "$QN_BIN" > "$T/broker.log" 2>&1 &
QPID=$!
URL="http://127.0.0.1:$PORT"
n=0
until curl -sf "$URL/health" >/dev/null 2>&1; do
    n=$((n + 1))
    [ $n -gt 200 ] && { echo "fanout: broker did not start"; cat "$T/broker.log"; exit 1; }
    sleep 0.1
done

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
status=0
: > "$T/runs.jsonl"
for rate in $RATES; do
    for g in $GROUPS; do
        echo "fanout: $g group(s), $rate msg/s offered for ${SECS}s"
        if node "$HERE/fanout_load.mjs" --url "$URL" --queue "fan_${g}_$rate" --groups "$g" --rate "$rate" \
                --seconds "$SECS" >> "$T/runs.jsonl"; then
            :
        else
            echo "fanout: $g groups at $rate msg/s: errors or a group did not catch up" >&2
            status=1
        fi
    done
done

HEADER="== fanout: N consumer groups on one queue, each receiving every message
   $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), PostgreSQL $($PSQL -d $DB -c 'SHOW server_version'), fsync on, synchronous_commit on; load avg at start $LOAD_START, at end $(cut -d' ' -f1-3 /proc/loadavg)
   2 producers x batch 100 x 256 B paced at the offered rate for ${SECS}s over 100 partitions; 1 consumer per group: long-poll pop batch 100 partitions 10 + ack/batch"
node -e '
const fs = require("fs");
const runs = fs.readFileSync(process.argv[1], "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));
const pad = (s, n) => String(s).padStart(n);
console.log(process.argv[2]);
console.log("");
console.log(["groups", "offered/s", "pushed/s", "delivered/s", "deliv/s push", "per group/s", "lag max", "lag p50",
             "lag@end", "catch-up s", "e2e p50", "e2e p99"].map((h, i) => pad(h, i ? 12 : 6)).join(" "));
for (const r of runs) {
    const worst = (k) => Math.max(...r.per_group.map((x) => x[k] ?? 0));
    const minRate = Math.min(...r.per_group.map((x) => x.msgs_per_s));
    console.log([r.groups, r.offered_per_s, r.pushed_per_s, r.delivered_per_s, r.delivered_per_s_push, minRate,
                 worst("lag_max"), worst("lag_p50"), worst("lag_push_end"), r.caught_up ? r.catch_up_s : "NO",
                 worst("e2e_p50_ms"), worst("e2e_p99_ms")].map((v, i) => pad(v, i ? 12 : 6)).join(" "));
}
console.log("");
console.log("lag = messages pushed so far - messages the group acked (worst group shown; p50 over the 0.5 s samples);");
console.log("delivered/s = all groups together, until every group caught up; deliv/s push = during the push phase only;");
console.log("per group/s = the slowest group; e2e ms = payload timestamp -> consumer receipt, worst group.");
console.log("");
console.log("lag of each group over the run (messages behind, every 2 s):");
for (const r of runs) {
    console.log(`  ${r.groups} group(s), ${r.offered_per_s} msg/s offered; t(s): ` +
                r.series.filter((_, i) => i % 4 === 3).map((s) => s[0].toFixed(0)).join(" "));
    r.series_cols.slice(2).forEach((name, gi) => {
        console.log(`    ${name.padEnd(8)} ` + r.series.filter((_, i) => i % 4 === 3).map((s) => s[gi + 2]).join(" "));
    });
}
for (const r of runs) {
    const { series, ...rest } = r;
    console.log("raw: " + JSON.stringify(rest));
}
' "$T/runs.jsonl" "$HEADER" | tee "$OUT"
exit "$status"
