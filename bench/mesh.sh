#!/bin/sh
# bench/mesh.sh - scenario "mesh" (issue 13, docs/mesh.md): two brokers of
# one cell (one database, joined by the mesh port).
#   - push -> parked pop wake-up p50/p99 with the consumer on the same
#     broker and on the other broker, in one run (goal: cross-broker p99
#     <= 20 ms and within 2x of same-broker);
#   - ephemeral request/reply across the two brokers: round trips per
#     second and p99 (goal: >= 10,000/s, p99 <= 5 ms).
# Writes QN_BENCH_OUT/mesh.txt. Environment: MESH_ROUNDS (200),
# MESH_SECONDS (10), MESH_REQUESTERS (32), MESH_REPLIERS (32).
set -eu

HERE=$(cd "$(dirname "$0")" && pwd -P)
if [ -z "${QN_PG_PORT:-}" ]; then
    exec sh "$HERE/run.sh" "${1:-build}" mesh
fi
PG="$QN_ROOT/scripts/pg.sh"
PSQL="psql -X -q -t -A -h 127.0.0.1 -p $QN_PG_PORT -U postgres"
mkdir -p "$QN_BENCH_OUT"
DB=bench_mesh
$PSQL -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
SECRET=$(head -c 32 /dev/urandom | base64)
PIDS=""
cleanup () {
    trap "" INT TERM HUP
    trap - EXIT
    for p in $PIDS; do kill -TERM "$p" 2>/dev/null || true; done
    for p in $PIDS; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

start () {
    port=$(sh "$PG" freeport)
    mport=$(sh "$PG" freeport)
    mkdir -p "$QN_TMP/spool-$1"
    env PORT="$port" HOST=127.0.0.1 PG_HOST=127.0.0.1 PG_PORT="$QN_PG_PORT" PG_DB="$DB" \
        FILE_BUFFER_DIR="$QN_TMP/spool-$1" LOG_LEVEL=warn KAFKA_PORT=0 SQS_PORT=0 SINK_PORT=0 MESH_PORT="$mport" MESH_SECRET="$SECRET" \
        "$QN_BIN" > "$QN_TMP/broker-$1.log" 2>&1 &
    PIDS="$PIDS $!"
    eval "URL_$1=http://127.0.0.1:$port"
}
start A
start B
n=0
until [ "$(curl -s "$URL_A/health" | grep -o '"peersUp":1')" = '"peersUp":1' ] \
   && [ "$(curl -s "$URL_B/health" | grep -o '"peersUp":1')" = '"peersUp":1' ]; do
    n=$((n + 1))
    if [ $n -gt 300 ]; then
        echo "mesh: the two brokers did not join"; tail -n 20 "$QN_TMP"/broker-*.log; exit 1
    fi
    sleep 0.1
done
node "$HERE/mesh_load.mjs" "$URL_A" "$URL_B" "$QN_TMP/mesh.json" > /dev/null
node -e '
const r = JSON.parse(require("fs").readFileSync(process.argv[1]));
const f = (x) => x.toFixed(2);
console.log(`mesh: two brokers of one cell, ${require("os").cpus().length} cores, ${new Date().toISOString()}`);
console.log("");
console.log(`push -> parked pop wake-up (${r.wake.rounds} rounds each, push sent -> pop answered, ms)`);
console.log(`| consumer on   | p50 | p99 |`);
console.log(`|---|---|---|`);
console.log(`| same broker   | ${f(r.wake.same.p50)} | ${f(r.wake.same.p99)} |`);
console.log(`| other broker  | ${f(r.wake.cross.p50)} | ${f(r.wake.cross.p99)} |`);
console.log(`cross/same p99: ${f(r.wake.cross.p99 / r.wake.same.p99)} (goal <= 2; cross p99 goal <= 20 ms)`);
console.log("");
console.log(`ephemeral request/reply, requesters on A (${r.rpc.requesters}), repliers on B (${r.rpc.repliers}), ${f(r.rpc.seconds)} s:`);
console.log(`${Math.round(r.rpc.perSecond)} round trips/s, p50 ${f(r.rpc.p50)} ms, p99 ${f(r.rpc.p99)} ms, errors ${r.rpc.errors} (goal >= 10000/s, p99 <= 5 ms)`);
' "$QN_TMP/mesh.json" | tee "$QN_BENCH_OUT/mesh.txt"
