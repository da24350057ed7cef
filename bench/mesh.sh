#!/bin/sh
# bench/mesh.sh - scenario "mesh" (issue 13, docs/mesh.md): two brokers of
# one cell (one database, joined by the mesh port).
#   - push -> parked pop wake-up p50/p99 with the consumer on the same
#     broker and on the other broker, in one run (goal: cross-broker p99
#     <= 20 ms and within 2x of same-broker), and the push's own answer
#     time beside it (the wake-up cannot be shorter than the commit);
#   - ephemeral request/reply across the two brokers: round trips per
#     second, p50/p99 (goal: >= 10,000/s, p99 <= 5 ms) and the brokers' CPU
#     per round trip (utime + stime of both from /proc/PID/stat over the
#     run, divided by the trips: the figure a loaded machine distorts
#     least), requesters on A and repliers on B, with bench/mesh_rr.c (an
#     epoll client, compiled here), in the shapes of SHAPES below.
# With MESH_BEFORE_BIN (an older broker binary) every round of shapes runs
# that binary first, then this one, each on a fresh pair of brokers, and a
# last table gives the CPU per round trip after / before per shape (median
# over MESH_PAIRS rounds). Side by side against main:
#   git worktree add --detach /tmp/main-base main && make -C /tmp/main-base -j2 all
#   MESH_BEFORE_BIN=/tmp/main-base/build/queen MESH_PAIRS=3 MESH_RR_ONLY=1 sh bench/mesh.sh build
# Writes QN_BENCH_OUT/mesh.txt. Environment: MESH_ROUNDS (200 wake-up
# rounds), MESH_SECONDS (10 per shape), MESH_PAIRS (1), MESH_SHAPES,
# MESH_BEFORE_BIN, MESH_RR_ONLY, MESH_BEFORE_NODE, MESH_PERF (a directory:
# `perf record -g` of both brokers during each shape, perf-LABEL.data;
# MESH_PERF_ARGS replaces -g, e.g. "--call-graph dwarf -F 300").
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
    until [ "$(curl -s --max-time 2 "$URL_A/health" | grep -o '"peersUp":1')" = '"peersUp":1' ] \
       && [ "$(curl -s --max-time 2 "$URL_B/health" | grep -o '"peersUp":1')" = '"peersUp":1' ]; do
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

# The shapes of the request/reply table: LABEL:REQUESTERS:DEPTH:REPLIERS:BATCH
# (BATCH 0: one request per receive and one reply per call).
#   one     32 requesters, 32 repliers one by one (the issue's shape)
#   goal    32 requesters, 4 repliers batching up to 32 (closest to the goal
#           on a quiet machine: 10,308/s, p99 5.40 ms before wave 4)
#   batch   64 requesters x 2 pipelined, 8 repliers batching up to 64
#   low     16 requesters, 4 repliers batching up to 16
SHAPES="${MESH_SHAPES:-one:32:1:32:0 goal:32:1:4:32 batch:64:2:8:64 low:16:1:4:16}"

# CPU ticks (utime + stime, 1/CLK_TCK s) of both brokers so far
cpu_ticks () {
    echo $(( $(awk '{print $14 + $15}' "/proc/$PID_A/stat") + $(awk '{print $14 + $15}' "/proc/$PID_B/stat") ))
}

# rr LABEL REQUESTERS DEPTH REPLIERS BATCH: one mesh_rr run into rr-LABEL.json,
# with both brokers' CPU ticks over the run in rr-LABEL.cpu
rr () {
    perf_pid=""
    if [ -n "${MESH_PERF:-}" ]; then
        mkdir -p "$MESH_PERF"
        perf record -q ${MESH_PERF_ARGS:--g} -p "$PID_A,$PID_B" -o "$MESH_PERF/perf-$1.data" > /dev/null 2>&1 &
        perf_pid=$!
    fi
    t0=$(cpu_ticks)
    "$QN_TMP/mesh_rr" 127.0.0.1 "$PORT_A" 127.0.0.1 "$PORT_B" "$SECONDS_EACH" "$2" "$3" "$4" \
        "rr-$1" "$QN_TMP/rr-$1.json" "$5"
    t1=$(cpu_ticks)
    if [ -n "$perf_pid" ]; then
        kill -INT "$perf_pid" 2>/dev/null || true
        wait "$perf_pid" 2>/dev/null || true
    fi
    echo "$((t1 - t0)) $(getconf CLK_TCK)" > "$QN_TMP/rr-$1.cpu"
}

# shapes BUILD ROUND: every shape on the running pair, labelled BUILD-SHAPE-ROUND
shapes () {
    for s in $SHAPES; do
        old_ifs=$IFS
        IFS=:
        set -- "$1" "$2" $s
        IFS=$old_ifs
        rr "$1-$3-$2" "$4" "$5" "$6" "$7"
    done
}

# MESH_PAIRS (1): rounds of the request/reply shapes; with MESH_BEFORE_BIN
# each round runs the older build first, then this one (alternating, so
# both see the same machine), each on a fresh pair of brokers.
# MESH_RR_ONLY=1 skips the wake-up part; MESH_BEFORE_NODE=1 adds the node
# generator's request/reply on the older build (the first measurements).
PAIRS="${MESH_PAIRS:-1}"
if [ -n "${MESH_BEFORE_BIN:-}" ] && [ -n "${MESH_BEFORE_NODE:-}" ]; then
    pair before "$MESH_BEFORE_BIN"
    MESH_REQUESTERS=32 MESH_REPLIERS=32 MESH_SECONDS="$SECONDS_EACH" \
        node "$HERE/mesh_load.mjs" "$URL_A" "$URL_B" "$QN_TMP/before-node.json" rpc > /dev/null
    unpair
fi
if [ -z "${MESH_RR_ONLY:-}" ]; then
    if [ -n "${MESH_BEFORE_BIN:-}" ]; then
        pair before "$MESH_BEFORE_BIN"
        node "$HERE/mesh_load.mjs" "$URL_A" "$URL_B" "$QN_TMP/before-wake.json" wake > /dev/null
        unpair
    fi
    pair after "$QN_BIN"
    node "$HERE/mesh_load.mjs" "$URL_A" "$URL_B" "$QN_TMP/after-wake.json" wake > /dev/null
    unpair
fi
round=1
while [ "$round" -le "$PAIRS" ]; do
    if [ -n "${MESH_BEFORE_BIN:-}" ]; then
        pair before "$MESH_BEFORE_BIN"
        shapes before "$round"
        unpair
    fi
    pair after "$QN_BIN"
    shapes after "$round"
    unpair
    round=$((round + 1))
done

node -e '
const fs = require("fs"), dir = process.argv[1], shapes = process.argv[2].trim().split(" ");
const read = (f) => fs.existsSync(`${dir}/${f}`) ? JSON.parse(fs.readFileSync(`${dir}/${f}`)) : null;
const f = (x) => x.toFixed(2);
const med = (v) => { const s = [...v].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
const beforeNode = read("before-node.json"), before = read("before-wake.json"), after = read("after-wake.json");
console.log(`mesh: two brokers of one cell, ${require("os").cpus().length} cores, load ${require("os").loadavg()[0].toFixed(1)}, ${new Date().toISOString()}`);
if (after) {
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
}
console.log("");
console.log("ephemeral request/reply, requesters on A, repliers on B (goal >= 10000/s, p99 <= 5 ms)");
console.log("broker CPU = utime + stime of both brokers over the run (/proc/PID/stat), per round trip");
console.log("| build | shape | round | requesters x depth | repliers (batch) | round trips/s | p50 ms | p99 ms | errors | broker CPU us/trip |");
console.log("|---|---|---|---|---|---|---|---|---|---|");
if (beforeNode && beforeNode.rpc) {
    const r = beforeNode.rpc;
    console.log(`| before | node http | 1 | ${r.requesters} x 1 | ${r.repliers} (1) | ${Math.round(r.perSecond)} | ${f(r.p50)} | ${f(r.p99)} | ${r.errors} | - |`);
}
const cpu = {};
const runs = fs.readdirSync(dir).filter((x) => /^rr-.*\.json$/.test(x)).map((x) => x.slice(3, -5));
const key = (l) => { const [b, s, r] = l.split("-"); return [Number(r), shapes.indexOf(s), b === "before" ? 0 : 1]; };
runs.sort((x, y) => { const a = key(x), b = key(y); return a[0] - b[0] || a[1] - b[1] || a[2] - b[2]; });
for (const label of runs) {
    const r = read(`rr-${label}.json`);
    const [build, shape, round] = label.split("-");
    let us = NaN;
    if (fs.existsSync(`${dir}/rr-${label}.cpu`)) {
        const [ticks, hz] = fs.readFileSync(`${dir}/rr-${label}.cpu`, "utf8").trim().split(" ").map(Number);
        us = r.trips ? ticks / hz * 1e6 / r.trips : NaN;
        const byShape = (cpu[shape] = cpu[shape] || {});
        (byShape[build] = byShape[build] || []).push(us);
    }
    console.log(`| ${build} | ${shape} | ${round} | ${r.requesters} x ${r.depth} | ${r.repliers} (${r.batch || 1}) | ${Math.round(r.perSecond)} | ${f(r.p50)} | ${f(r.p99)} | ${r.errors} | ${isNaN(us) ? "-" : us.toFixed(1)} |`);
}
const both = shapes.filter((s) => cpu[s] && cpu[s].before && cpu[s].after);
if (both.length) {
    console.log("");
    console.log("broker CPU per round trip, median over rounds (after / before: below 1 is cheaper)");
    console.log("| shape | before us/trip | after us/trip | after / before |");
    console.log("|---|---|---|---|");
    for (const s of both) {
        const b = med(cpu[s].before), a = med(cpu[s].after);
        console.log(`| ${s} | ${b.toFixed(1)} | ${a.toFixed(1)} | ${(a / b).toFixed(2)} |`);
    }
}
' "$QN_TMP" "$(for s in $SHAPES; do printf '%s ' "${s%%:*}"; done)" | tee "$QN_BENCH_OUT/mesh.txt"
