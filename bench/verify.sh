#!/bin/sh
# bench/verify.sh - scenario "verify": the exactly-once verifier at scale.
#   Two runs of build/queen-verify, each starting its own broker
#   (--broker-bin QN_BIN) against a fresh database on the bench cluster:
#     steady: 4 stages x 1,000 partitions x QN_VERIFY_MESSAGES messages
#             (default 10,000,000) through the final stage;
#     chaos:  the same shape with QN_VERIFY_CHAOS_MESSAGES (default
#             1,000,000) and SIGKILL + restart of the broker every 2-6 s
#             until QN_VERIFY_CHAOS_KILLS kills (default 20).
#   Each must end with 0 duplicates, 0 gaps, 0 order violations, 0 corrupt
#   messages and no broker crash (queen-verify exits 0), and the chaos run
#   must reach its kills. Prints both summary lines with the wall time.
#
#   The defaults are for a quiet machine and take hours: run it alone with
#   the time limits raised, e.g.
#     QN_BENCH_TIMEOUT=43200 QN_BENCH_SCENARIO_TIMEOUT=43200 sh bench/run.sh build verify
#   `make bench` (every scenario) skips it: bench/run.sh runs a scenario
#   marked "bench: explicit" only when it is named. A small proof run:
#     QN_VERIFY_MESSAGES=20000 QN_VERIFY_CHAOS_MESSAGES=20000 QN_VERIFY_CHAOS_KILLS=3 \
#       sh bench/run.sh build verify
# bench: explicit
# Writes QN_BENCH_OUT/verify.txt. Other settings: QN_VERIFY_STAGES (4),
# QN_VERIFY_PARTITIONS (1000), QN_VERIFY_DRAIN_TIMEOUT (s, 600), QN_VERIFY_FLAGS
# (more queen-verify flags for both runs, e.g. "--batch 500 --pop-partitions 100").
set -eu

HERE=$(cd "$(dirname "$0")" && pwd -P)
if [ -z "${QN_PG_PORT:-}" ]; then
    exec sh "$HERE/run.sh" "${1:-build}" verify
fi

N="${QN_VERIFY_MESSAGES:-10000000}"
NC="${QN_VERIFY_CHAOS_MESSAGES:-1000000}"
KILLS="${QN_VERIFY_CHAOS_KILLS:-20}"
STAGES="${QN_VERIFY_STAGES:-4}"
PARTS="${QN_VERIFY_PARTITIONS:-1000}"
DRAIN="${QN_VERIFY_DRAIN_TIMEOUT:-600}"
VERIFY="$(dirname "$QN_BIN")/queen-verify"
OUT="$QN_BENCH_OUT/verify.txt"
T="$QN_TMP"
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"
[ -x "$VERIFY" ] || { echo "verify: $VERIFY not built"; exit 1; }
#  The broker queen-verify starts inherits these: the other doors off
#  (their fixed default ports collide with other brokers on the machine)
KAFKA_PORT=0 SQS_PORT=0 MESH_PORT=0
export KAFKA_PORT SQS_PORT MESH_PORT

: > "$OUT"
failed=0
run () {                #  name messages extra-flags...
    name=$1
    msgs=$2
    shift 2
    db="bench_verify_$name"
    $PSQL -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
    echo "verify: $name: $STAGES stages x $PARTS partitions x $msgs messages $*"
    t0=$(date +%s)
    rc=0
    "$VERIFY" --broker-bin "$QN_BIN" --broker-log "$T/broker_$name.log" --pg-host 127.0.0.1 \
        --pg-port "$QN_PG_PORT" --pg-db "$db" --pg-user postgres --pg-password postgres \
        --stages "$STAGES" --partitions "$PARTS" --messages "$msgs" --drain-timeout "$DRAIN" \
        --quiet ${QN_VERIFY_FLAGS:-} "$@" > "$T/verify_$name.txt" 2>&1 || rc=$?
    t1=$(date +%s)
    line=$(grep '^verify:' "$T/verify_$name.txt" | tail -n 1)
    echo "$name ($((t1 - t0)) s, exit $rc): ${line:-no summary: $(tail -n 3 "$T/verify_$name.txt" | tr '\n' ' ')}" \
        | tee -a "$OUT"
    [ "$rc" = 0 ] && [ -n "$line" ] || failed=1
    case "$line" in *"messages=$msgs "*) ;; *) echo "verify: $name: expected messages=$msgs" | tee -a "$OUT"; failed=1 ;; esac
    if [ "$name" = chaos ]; then
        k=$(echo "$line" | sed -n 's/.* kills=\([0-9]*\).*/\1/p')
        [ "${k:-0}" -ge "$KILLS" ] || { echo "verify: chaos: ${k:-0} kills, wanted $KILLS" | tee -a "$OUT"; failed=1; }
    fi
}

run steady "$N"
run chaos "$NC" --chaos --chaos-kills "$KILLS"
exit "$failed"
