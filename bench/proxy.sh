#!/bin/sh
# bench/proxy.sh - scenario "proxy": the messaging shape through queen-proxy
# beside straight to the broker, in one run on one server (docs/tenancy.md).
#   1. push msg/s, HTTP batches of 100, 256-byte payloads, 1,000 partitions,
#      8 connections: straight (a JWT of the same tenant) vs through the
#      proxy (an API key): the ratio (goal >= 0.85).
#   2. latency of single-item pushes one at a time: p50/p99 straight and
#      through the proxy: the added p99.
#   3. 12 tenants through the proxy at once (one connection each, batches
#      of 100): aggregate msg/s.
# One broker with TENANT_ASSERTION_SECRET and JWT_ENABLED, one proxy.
# Writes QN_BENCH_OUT/proxy.txt. Run by bench/run.sh.
# Environment: QN_BENCH_SECONDS (15 per measurement).
set -eu

HERE=$(cd "$(dirname "$0")" && pwd -P)
if [ -z "${QN_PG_PORT:-}" ]; then
    exec sh "$HERE/run.sh" "${1:-build}" proxy
fi

SECS="${QN_BENCH_SECONDS:-15}"
OUT="$QN_BENCH_OUT/proxy.txt"
T="$QN_TMP"
SECRET="bench-proxy-secret-0123456789abcdef-0123456789"
JWT_SECRET="bench-jwt-secret-0123456789abcdef-0123456789"
PROXY_BIN="$(dirname "$QN_BIN")/queen-proxy"

. "$HERE/lib.sh"
BENCH_BROKER_ENV="TENANT_ASSERTION_SECRET=$SECRET JWT_ENABLED=true JWT_SECRET=$JWT_SECRET"
bench_start proxy

PGENV="PG_HOST=127.0.0.1 PG_PORT=$QN_PG_PORT PG_DB=$DB"
PPORT=$(sh "$QN_ROOT/scripts/pg.sh" freeport)
# shellcheck disable=SC2086
env $PGENV PORT="$PPORT" HOST=127.0.0.1 QUEEN_UPSTREAMS="$URL" TENANT_ASSERTION_SECRET="$SECRET" \
    LOG_LEVEL=warn "$PROXY_BIN" > "$T/proxy.log" 2>&1 &
PROXY_PID=$!
trap 'kill -TERM $PROXY_PID 2>/dev/null; wait $PROXY_PID 2>/dev/null; bench_cleanup' EXIT
PURL="http://127.0.0.1:$PPORT"
n=0
until curl -sf "$PURL/health" >/dev/null 2>&1; do
    n=$((n + 1))
    [ $n -gt 200 ] && { echo "proxy: queen-proxy did not start"; cat "$T/proxy.log"; exit 1; }
    sleep 0.1
done

key_of () {     # tenant -> its admin key
    # shellcheck disable=SC2086
    env $PGENV "$PROXY_BIN" create-tenant "$1" | sed 's/.*"key":"\([^"]*\)".*/\1/'
}
KEY=$(key_of bench)
JWT=$(node -e '
const c = require("crypto"), b = (v) => Buffer.from(JSON.stringify(v)).toString("base64url");
const i = b({ alg: "HS256", typ: "JWT" }) + "." + b({ tenant: "bench", role: "admin", exp: Math.floor(Date.now() / 1000) + 3600 });
console.log(i + "." + c.createHmac("sha256", process.argv[1]).update(i).digest("base64url"));' "$JWT_SECRET")
sleep 1.5      # the proxy's key table refreshes every second

rate () { echo "$1" | sed 's/.*"msgs_per_s":\([0-9]*\).*/\1/'; }
field () { echo "$1" | sed "s/.*\"$2\":\([0-9.]*\).*/\1/"; }

echo "proxy: push straight (${SECS}s)"
STRAIGHT=$(QN_BENCH_KEY="$JWT" node "$HERE/load.mjs" push --url "$URL" --queue bs --conns 8 --batch 100 \
           --payload 256 --partitions 1000 --seconds "$SECS")
echo "proxy: push through the proxy (${SECS}s)"
PROXIED=$(QN_BENCH_KEY="$KEY" node "$HERE/load.mjs" push --url "$PURL" --queue bp --conns 8 --batch 100 \
          --payload 256 --partitions 1000 --seconds "$SECS")

echo "proxy: single-push latency"
LAT_S=$(QN_BENCH_KEY="$JWT" node "$HERE/proxy_lat.mjs" --url "$URL" --queue ls --samples 500)
LAT_P=$(QN_BENCH_KEY="$KEY" node "$HERE/proxy_lat.mjs" --url "$PURL" --queue lp --samples 500)

echo "proxy: 12 tenants through the proxy (${SECS}s)"
i=1
while [ $i -le 12 ]; do
    k=$(key_of "t$i")
    echo "$k" > "$T/key.$i"
    i=$((i + 1))
done
sleep 1.5
PIDS=""
i=1
while [ $i -le 12 ]; do
    QN_BENCH_KEY=$(cat "$T/key.$i") node "$HERE/load.mjs" push --url "$PURL" --queue orders --conns 1 \
        --batch 100 --payload 256 --partitions 100 --seconds "$SECS" > "$T/t.$i" &
    PIDS="$PIDS $!"
    i=$((i + 1))
done
for p in $PIDS; do wait "$p"; done
TOTAL=0
i=1
while [ $i -le 12 ]; do
    TOTAL=$((TOTAL + $(rate "$(cat "$T/t.$i")")))
    i=$((i + 1))
done

ratio () { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
ADDED=$(awk -v a="$(field "$LAT_P" p99_ms)" -v b="$(field "$LAT_S" p99_ms)" 'BEGIN { printf "%.2f", a - b }')
{
    echo "== proxy ($(nproc) cores, one broker, one proxy)"
    printf "%-40s %12s %12s %8s  %s\n" scenario proxy straight ratio target
    printf "%-40s %12s %12s %8s  %s\n" "push msg/s (8 conns, batch 100)" "$(rate "$PROXIED")" "$(rate "$STRAIGHT")" \
        "$(ratio "$(rate "$PROXIED")" "$(rate "$STRAIGHT")")" ">= 0.85"
    printf "%-40s %12s %12s\n" "single push p50 ms" "$(field "$LAT_P" p50_ms)" "$(field "$LAT_S" p50_ms)"
    printf "%-40s %12s %12s %8s\n" "single push p99 ms (added)" "$(field "$LAT_P" p99_ms)" "$(field "$LAT_S" p99_ms)" "+$ADDED"
    printf "%-40s %12s\n" "12 tenants through the proxy msg/s" "$TOTAL"
    echo "raw: straight=$STRAIGHT"
    echo "raw: proxied=$PROXIED"
    echo "raw: latency straight=$LAT_S proxied=$LAT_P"
} | tee "$OUT"
