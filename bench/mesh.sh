#!/bin/sh
# bench/mesh.sh - scenario "mesh" (issue 13, docs/mesh.md): two brokers of
# one cell (one database, joined by the mesh port).
#   - push -> parked pop wake-up p50/p99 with the consumer on the same
#     broker and on the other broker, in one run (goal: cross-broker p99
#     <= 20 ms and within 2x of same-broker), and the push's own answer
#     time beside it (the wake-up cannot be shorter than the commit);
#   - ephemeral request/reply across the two brokers: round trips per
#     second and p99 (goal: >= 10,000/s, p99 <= 5 ms), requesters on A and
#     repliers on B, with bench/mesh_rr.c (an epoll client, compiled here):
#       one-by-one   32 requesters, 32 repliers answering one request per call
#       batched      64 requesters x 2 pipelined, 8 repliers taking up to 64
#                    requests per receive (?max=64), one reply call per batch
#       low latency  16 requesters, 4 repliers, batches of up to 16
# With MESH_BEFORE_BIN (an older broker binary) the same brokers are run
# first with that binary, so the two builds are measured side by side in
# one run: its wake-ups, its request/reply with the node generator of the
# first measurements (bench/mesh_load.mjs) and with mesh_rr one-by-one.
# Writes QN_BENCH_OUT/mesh.txt. Environment: MESH_ROUNDS (200),
# MESH_SECONDS (10), MESH_BEFORE_BIN.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd -P)
if [ -z "${QN_PG_PORT:-}" ]; then
    exec sh "$HERE/run.sh" "${1:-build}" mesh
fi
PG="$QN_ROOT/scripts/pg.sh"
PSQL="psql -X -q -t -A -h 127.0.0.1 -p $QN_PG_PORT -U postgres"
SECONDS_EACH="${MESH_SECONDS:-10}"
mkdir -p "$QN_BENCH_OUT"
cc -std=c11 -O2 -Wall -Wextra -Werror -o "$QN_TMP/mesh_rr" "$HERE/mesh_rr.c"
SECRET=$(head -c 32 /dev/urandom | base64)
PIDS=""
cleanup () {
    trap "" INT TERM HUP
    trap - EXIT
    for p in $PIDS; do kill -TERM "$p" 2>/dev/null || true; done
    for p in $PIDS; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

# start NAME BIN DB: one broker of the cell in database DB
start () {
    port=$(sh "$PG" freeport)
    mport=$(sh "$PG" freeport)
    mkdir -p "$QN_TMP/spool-$1"
    env PORT="$port" HOST=127.0.0.1 PG_HOST=127.0.0.1 PG_PORT="$QN_PG_PORT" PG_DB="$3" \
        FILE_BUFFER_DIR="$QN_TMP/spool-$1" LOG_LEVEL=warn KAFKA_PORT=0 SQS_PORT=0 SINK_PORT=0 \
        MESH_PORT="$mport" MESH_SECRET="$SECRET" "$2" > "$QN_TMP/broker-$1.log" 2>&1 &
    PIDS="$PIDS $!"
    eval "PID_$1=$!"
    eval "PORT_$1=$port"
}

# pair LABEL BIN: brokers A and B of one cell; waits until they joined
pair () {
    db="bench_mesh_$1"
    $PSQL -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null 2>&1
    start A "$2" "$db"
    start B "$2" "$db"
    URL_A="http://127.0.0.1:$PORT_A"
    URL_B="http://127.0.0.1:$PORT_B"
    n=0
    until [ "$(curl -s "$URL_A/health" | grep -o '"peersUp":1')" = '"peersUp":1' ] \
       && [ "$(curl -s "$URL_B/health" | grep -o '"peersUp":1')" = '"peersUp":1' ]; do
        n=$((n + 1))
        if [ $n -gt 300 ]; then
            echo "mesh: the two brokers did not join"; tail -n 20 "$QN_TMP"/broker-*.log; exit 1
        fi
        sleep 0.1
    done
}

unpair () {
    kill -TERM "$PID_A" "$PID_B" 2>/dev/null || true
    wait "$PID_A" "$PID_B" 2>/dev/null || true
}

# rr LABEL REQUESTERS DEPTH REPLIERS BATCH: one mesh_rr run into rr-LABEL.json
rr () {
    "$QN_TMP/mesh_rr" 127.0.0.1 "$PORT_A" 127.0.0.1 "$PORT_B" "$SECONDS_EACH" "$2" "$3" "$4" \
        "rr-$1" "$QN_TMP/rr-$1.json" "$5"
}

if [ -n "${MESH_BEFORE_BIN:-}" ]; then
    pair before "$MESH_BEFORE_BIN"
    MESH_REQUESTERS=32 MESH_REPLIERS=32 MESH_SECONDS="$SECONDS_EACH" \
        node "$HERE/mesh_load.mjs" "$URL_A" "$URL_B" "$QN_TMP/before-node.json" > /dev/null
    rr before-one 32 1 32 0
    unpair
fi
pair after "$QN_BIN"
node "$HERE/mesh_load.mjs" "$URL_A" "$URL_B" "$QN_TMP/after-node.json" wake > /dev/null
rr after-one 32 1 32 0
rr after-batch 64 2 8 64
rr after-low 16 1 4 16
unpair

node -e '
const fs = require("fs"), dir = process.argv[1];
const read = (f) => fs.existsSync(`${dir}/${f}`) ? JSON.parse(fs.readFileSync(`${dir}/${f}`)) : null;
const f = (x) => x.toFixed(2);
const before = read("before-node.json"), after = read("after-node.json");
console.log(`mesh: two brokers of one cell, ${require("os").cpus().length} cores, load ${require("os").loadavg()[0].toFixed(1)}, ${new Date().toISOString()}`);
console.log("");
console.log(`push -> parked pop wake-up (${after.wake.rounds} rounds each; ms from sending the push)`);
console.log("| build | pop on | wake p50 | wake p99 | push answered p50 | push answered p99 |");
console.log("|---|---|---|---|---|---|");
for (const [name, r] of [["before", before], ["after", after]]) {
    if (!r) continue;
    console.log(`| ${name} | same broker | ${f(r.wake.same.p50)} | ${f(r.wake.same.p99)} | ${r.wake.push ? f(r.wake.push.p50) : "-"} | ${r.wake.push ? f(r.wake.push.p99) : "-"} |`);
    console.log(`| ${name} | other broker | ${f(r.wake.cross.p50)} | ${f(r.wake.cross.p99)} | | |`);
}
console.log(`after: cross/same p99 ${f(after.wake.cross.p99 / after.wake.same.p99)} (goal <= 2; cross p99 goal <= 20 ms)`);
console.log("");
console.log("ephemeral request/reply, requesters on A, repliers on B (goal >= 10000/s, p99 <= 5 ms)");
console.log("| build | generator | requesters x depth | repliers (batch) | round trips/s | p50 ms | p99 ms | errors |");
console.log("|---|---|---|---|---|---|---|---|");
if (before) {
    const r = before.rpc;
    console.log(`| before | node http | ${r.requesters} x 1 | ${r.repliers} (1) | ${Math.round(r.perSecond)} | ${f(r.p50)} | ${f(r.p99)} | ${r.errors} |`);
}
for (const name of ["before-one", "after-one", "after-batch", "after-low"]) {
    const r = read(`rr-${name}.json`);
    if (!r) continue;
    console.log(`| ${name.split("-")[0]} | mesh_rr | ${r.requesters} x ${r.depth} | ${r.repliers} (${r.batch || 1}) | ${Math.round(r.perSecond)} | ${f(r.p50)} | ${f(r.p99)} | ${r.errors} |`);
}
' "$QN_TMP" | tee "$QN_BENCH_OUT/mesh.txt"
