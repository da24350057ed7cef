#!/bin/sh
# bench/health.sh - scenario "health": the HTTP front door with no work behind
# it. wrk (keep-alive) against the broker's GET /health, and the same load
# against nginx serving a tiny static JSON file at /health, for a yardstick.
# Reports requests/s of both, their ratio, latency, and the broker's RSS
# (VmRSS) at idle and at the end of the load. Writes QN_BENCH_OUT/health.txt.
#
# Run by bench/run.sh (see there for the environment); run alone as
# `sh bench/health.sh [BUILD_DIR]` it goes through bench/run.sh.
# Environment: WRK_THREADS (2), WRK_CONNECTIONS (64), WRK_DURATION (10s),
# QN_NGINX_WORKERS (1: one event loop, like the broker's acceptor).
set -eu

HERE=$(cd "$(dirname "$0")" && pwd -P)
if [ -z "${QN_PG_PORT:-}" ]; then
    exec sh "$HERE/run.sh" "${1:-build}" health
fi

PG="$QN_ROOT/scripts/pg.sh"
THREADS="${WRK_THREADS:-2}"
CONNS="${WRK_CONNECTIONS:-64}"
DURATION="${WRK_DURATION:-10s}"
NGINX_WORKERS="${QN_NGINX_WORKERS:-1}"
OUT="$QN_BENCH_OUT/health.txt"
T="$QN_TMP"

QPID=""
NPID=""
SAMPLER=""
cleanup () {
    trap "" INT TERM HUP
    trap - EXIT
    for pid in $SAMPLER $NPID $QPID; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in $SAMPLER $NPID $QPID; do
        wait "$pid" 2>/dev/null || true
    done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

command -v wrk >/dev/null || { echo "health: wrk not installed (make deps)" >&2; exit 1; }

#  Waits up to $2 s until GET $1 answers 200.
wait_http () {
    n=0
    while [ $n -lt $(($2 * 10)) ]; do
        if [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$1" 2>/dev/null)" = 200 ]; then
            return 0
        fi
        sleep 0.1
        n=$((n + 1))
    done
    return 1
}

rss_kib () {
    awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0
}

mib () {
    awk -v k="$1" 'BEGIN { printf "%.1f MiB", k / 1024 }'
}

#  Runs wrk against $1 and leaves its output in $2.
run_wrk () {
    wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency "$1" > "$2" 2>&1
}

#  Prints "rps p50_ms p99_ms non2xx socket_errors" from wrk output $1.
parse_wrk () {
    awk '
        function ms(v) {
            if (v ~ /us$/) return v * 0.001;
            if (v ~ /ms$/) return v + 0;
            if (v ~ /s$/)  return v * 1000;
            return v + 0;
        }
        /^Requests\/sec:/           { rps = $2 }
        /^ +50%/                    { p50 = ms($2) }
        /^ +99%/                    { p99 = ms($2) }
        /Non-2xx or 3xx responses:/ { non2xx = $NF }
        /Socket errors:/ {
            gsub(",", "");
            errs = $4 + $6 + $8 + $10
        }
        END { printf "%.0f %.2f %.2f %d %d\n", rps, p50, p99, non2xx, errs }
    ' "$1"
}

#  ---------------------------------------------------------------- broker
queen_row=""
queen_rps=0
rss_idle=0
rss_end=0
rss_peak=0
queen_rc=""
status=0

if [ ! -x "$QN_BIN" ]; then
    echo "health: $QN_BIN not built; broker half skipped" >&2
    queen_row="not built"
    status=1
else
    db="bench_health_$$"
    psql -q -X -h 127.0.0.1 -p "$QN_PG_PORT" -U postgres -d postgres \
         -v ON_ERROR_STOP=1 -c "CREATE DATABASE $db" >/dev/null
    QPORT=$(sh "$PG" freeport)
    mkdir -p "$T/spool"
    env HOST=127.0.0.1 PORT="$QPORT" PG_HOST=127.0.0.1 PG_PORT="$QN_PG_PORT" \
        PG_USER=postgres PG_PASSWORD=postgres PG_DB="$db" \
        FILE_BUFFER_DIR="$T/spool" LOG_LEVEL="${LOG_LEVEL:-warn}" \
        "$QN_BIN" > "$T/queen.log" 2>&1 &
    QPID=$!
    if ! wait_http "http://127.0.0.1:$QPORT/health" 20; then
        echo "health: broker not healthy after 20 s; its log:" >&2
        tail -n 30 "$T/queen.log" >&2
        queen_row="not healthy"
        status=1
    else
        sleep 1
        rss_idle=$(rss_kib "$QPID")
        #  Sample RSS during the load: the last sample is "end of load"
        (
            trap 'exit 0' TERM
            while :; do
                awk '/^VmRSS:/ { print $2 }' "/proc/$QPID/status" >> "$T/rss" 2>/dev/null || exit 0
                sleep 0.25
            done
        ) &
        SAMPLER=$!
        run_wrk "http://127.0.0.1:$QPORT/health" "$T/wrk-queen.txt" || true
        kill -TERM "$SAMPLER" 2>/dev/null || true
        wait "$SAMPLER" 2>/dev/null || true
        SAMPLER=""
        rss_end=$(tail -n 1 "$T/rss" 2>/dev/null || echo 0)
        rss_peak=$(sort -n "$T/rss" 2>/dev/null | tail -n 1 || echo 0)
        queen_row=$(parse_wrk "$T/wrk-queen.txt")
        queen_rps=${queen_row%% *}
        if [ "${queen_rps:-0}" = 0 ]; then
            echo "health: wrk against the broker failed:" >&2
            cat "$T/wrk-queen.txt" >&2
            status=1
        fi
    fi
    kill -TERM "$QPID" 2>/dev/null || true
    n=0
    while [ $n -lt 200 ] && kill -0 "$QPID" 2>/dev/null; do
        sleep 0.1
        n=$((n + 1))
    done
    if kill -0 "$QPID" 2>/dev/null; then
        echo "health: broker did not exit 20 s after SIGTERM; killing it" >&2
        kill -KILL "$QPID" 2>/dev/null || true
        status=1
    fi
    if wait "$QPID"; then queen_rc=0; else queen_rc=$?; fi
    QPID=""
fi

#  ---------------------------------------------------------------- nginx
NGINX=$(command -v nginx || true)
[ -n "$NGINX" ] || [ ! -x /usr/sbin/nginx ] || NGINX=/usr/sbin/nginx
if [ -z "$NGINX" ] && [ "$(id -u)" = 0 ]; then
    echo "health: installing nginx-light for the comparison"
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y -qq --no-install-recommends nginx-light >/dev/null 2>&1; then
        apt-get update -qq >/dev/null 2>&1 || true
        apt-get install -y -qq --no-install-recommends nginx-light >/dev/null 2>&1 \
            || apt-get install -y -qq --no-install-recommends nginx >/dev/null 2>&1 || true
    fi
    NGINX=$(command -v nginx || true)
    [ -n "$NGINX" ] || [ ! -x /usr/sbin/nginx ] || NGINX=/usr/sbin/nginx
fi

nginx_row=""
nginx_rps=0
if [ -z "$NGINX" ]; then
    echo "health: nginx not available and could not be installed; skipping the nginx comparison"
    nginx_row="not available"
else
    NPORT=$(sh "$PG" freeport)
    mkdir -p "$T/nginx/www" "$T/nginx/tmp"
    printf '{"status":"healthy","database":"connected"}' > "$T/nginx/www/health.json"
    chmod -R a+rX "$T/nginx"
    cat > "$T/nginx/nginx.conf" <<EOF
daemon off;
worker_processes $NGINX_WORKERS;
pid $T/nginx/nginx.pid;
error_log $T/nginx/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 65s;
    client_body_temp_path $T/nginx/tmp/body;
    proxy_temp_path $T/nginx/tmp/proxy;
    fastcgi_temp_path $T/nginx/tmp/fastcgi;
    server {
        listen 127.0.0.1:$NPORT;
        location = /health {
            default_type application/json;
            alias $T/nginx/www/health.json;
        }
    }
}
EOF
    "$NGINX" -p "$T/nginx" -c "$T/nginx/nginx.conf" -e "$T/nginx/error.log" > "$T/nginx/stdout.log" 2>&1 &
    NPID=$!
    if ! wait_http "http://127.0.0.1:$NPORT/health" 10; then
        echo "health: nginx did not answer; skipping the comparison. Its log:"
        cat "$T/nginx/stdout.log" "$T/nginx/error.log" 2>/dev/null | tail -n 20
        nginx_row="failed to start"
    else
        run_wrk "http://127.0.0.1:$NPORT/health" "$T/wrk-nginx.txt" || true
        nginx_row=$(parse_wrk "$T/wrk-nginx.txt")
        nginx_rps=${nginx_row%% *}
    fi
    #  QUIT: graceful shutdown of master and workers
    kill -QUIT "$NPID" 2>/dev/null || true
    n=0
    while [ $n -lt 100 ] && kill -0 "$NPID" 2>/dev/null; do
        sleep 0.1
        n=$((n + 1))
    done
    kill -TERM "$NPID" 2>/dev/null || true
    wait "$NPID" 2>/dev/null || true
    NPID=""
fi

#  ---------------------------------------------------------------- report
row () {
    #  $1 = label, $2 = "rps p50 p99 non2xx errors" or a reason
    case "$2" in
        [0-9]*)
            set -- "$1" $2
            printf '| %-18s | %14s | %8s | %8s | %8s | %8s |\n' "$1" "$2" "$3" "$4" "$5" "$6"
            ;;
        *)
            printf '| %-18s | %14s | %8s | %8s | %8s | %8s |\n' "$1" "$2" - - - -
            ;;
    esac
}
ratio="n/a"
if [ "${queen_rps:-0}" != 0 ] && [ "${nginx_rps:-0}" != 0 ]; then
    ratio=$(awk -v q="$queen_rps" -v n="$nginx_rps" 'BEGIN { printf "%.2f", q / n }')
fi
mkdir -p "$QN_BENCH_OUT"
{
    echo "health: GET /health, wrk -t$THREADS -c$CONNS -d$DURATION (keep-alive), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo
    printf '| %-18s | %14s | %8s | %8s | %8s | %8s |\n' server requests/s "p50 ms" "p99 ms" non-2xx "sock err"
    printf '|%s|%s|%s|%s|%s|%s|\n' -------------------- ---------------- ---------- ---------- ---------- ----------
    row "queen" "$queen_row"
    row "nginx ($NGINX_WORKERS worker)" "$nginx_row"
    echo
    echo "ratio queen/nginx (requests/s): $ratio"
    if [ "$rss_idle" != 0 ]; then
        echo "queen RSS: idle $(mib "$rss_idle"), end of load $(mib "$rss_end"), peak $(mib "$rss_peak")"
    fi
    if [ -n "$queen_rc" ]; then
        echo "queen exit status after SIGTERM: $queen_rc"
    fi
    case "$queen_row" in
        [0-9]*)
            set -- $queen_row
            if [ "$4" != 0 ] || [ "$5" != 0 ]; then
                echo "WARNING: queen gave $4 non-2xx responses and $5 socket errors: its requests/s are not comparable"
            fi
            ;;
    esac
} | tee "$OUT"

if [ -n "$queen_rc" ] && [ "$queen_rc" != 0 ]; then
    status=1
fi
exit "$status"
