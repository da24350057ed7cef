#!/bin/sh
# bench/peers.sh - scenario "peers": Queen beside RabbitMQ and pg-boss on the
# same machine in the same run, with equivalent durability, plus the raw
# PostgreSQL ceilings of Queen's own SQL.
#   Durability: PostgreSQL fsync on, synchronous_commit on (scripts/pg.sh)
#   for Queen, pg-boss and pgbench; RabbitMQ: a durable queue, persistent
#   messages, publisher confirms (a batch counts once confirmed), manual
#   acks. 256-byte payloads everywhere.
#   Two shapes, QN_PEERS_SECONDS each:
#     push:  8 connections, each sending batches of 100 (Queen: POST
#            /api/v1/push of 100 items over 1,000 partitions; RabbitMQ: 100
#            publishes then waitForConfirms; pg-boss: insert of 100 jobs;
#            pgbench: queen.push of 100-row arrays, 8 clients);
#     cycle: 4 producers as above + 4 consumers taking batches of 100
#            (Queen: pop batch 100 of up to 100 partitions + ack/batch;
#            RabbitMQ: prefetch 100,
#            ack multiple per 100; pg-boss: fetch batchSize 100 + complete;
#            pgbench: queen.pop + queen.ack beside queen.push);
#     cycle, keyed batches: Queen only (bench/peers/queen.mjs), the same
#            but each push batch goes to one partition.
#   RabbitMQ is Debian's rabbitmq-server (installed with apt-get when
#   missing and we are root), started as a throwaway node (own ports, data
#   and log dirs under the scratch dir, RABBITMQ_NODENAME=bench@localhost)
#   and stopped afterwards; its client is the npm amqplib package. pg-boss
#   runs on the same PostgreSQL, in its own database. Both npm packages are
#   installed into bench/peers/node_modules (bench/peers/package.json).
#   PGMQ (github pgmq/pgmq, its PL/pgSQL build `pgmq-extension/sql/pgmq.sql`)
#   runs on the same PostgreSQL in its own database, driven by pgbench:
#   push = 8 clients × pgmq.send_batch of 100; cycle = 4 clients sending
#   batches of 100 beside 4 clients each doing pgmq.read(100) +
#   pgmq.delete(ids) in one transaction (consumed = sent - left). Its SQL is
#   not part of this repository: QN_PGMQ_SQL names the file (fetch it
#   yourself); unset, PGMQ is skipped with a line saying so.
#   A peer that cannot be installed or started is skipped with a line
#   saying why.
# Prints one table: absolute figures and each one's ratio to Queen.
# Writes QN_BENCH_OUT/peers.txt. Run by bench/run.sh.
# Environment: QN_PEERS_SECONDS (15), QN_PEERS_RABBIT_QUEUE_TYPE (classic;
# quorum for Raft-replicated queues), QN_PGMQ_SQL (path of pgmq.sql),
# QN_PEERS_ONLY (space-separated subset of "queen pgbench pgmq pgboss
# rabbit"; default all).
set -eu

HERE=$(cd "$(dirname "$0")" && pwd -P)
if [ -z "${QN_PG_PORT:-}" ]; then
    exec sh "$HERE/run.sh" "${1:-build}" peers
fi

SECS="${QN_PEERS_SECONDS:-15}"
RABBIT_QUEUE_TYPE="${QN_PEERS_RABBIT_QUEUE_TYPE:-classic}"
OUT="$QN_BENCH_OUT/peers.txt"
T="$QN_TMP"
PG="$QN_ROOT/scripts/pg.sh"
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"           #  PSQL, bench_consumed (its broker is its own)
PGBENCH=$(ls /usr/lib/postgresql/*/bin/pgbench 2>/dev/null | tail -n 1)
PEERS="$HERE/peers"
DB=bench_peers
BOSS_DB=bench_pgboss
PGMQ_DB=bench_pgmq
ONLY=" ${QN_PEERS_ONLY:-queen pgbench pgmq pgboss rabbit} "
want () {
    case "$ONLY" in *" $1 "*) return 0 ;; esac
    return 1
}
mkdir -p "$QN_BENCH_OUT"

QPID=""
RPID=""
EPMD_PORT=""
RABBIT_SERVER=/usr/lib/rabbitmq/bin/rabbitmq-server
rabbit_stop () {
    if [ -n "$RPID" ]; then
        #  The server script runs beam in the foreground: TERM stops the node
        kill -TERM "$RPID" 2>/dev/null || true
        n=0
        while [ $n -lt 300 ] && kill -0 "$RPID" 2>/dev/null; do
            sleep 0.1
            n=$((n + 1))
        done
        kill -KILL "$RPID" 2>/dev/null || true
        RPID=""
    fi
    #  The node started its own epmd on a private port: stop it too
    if [ -n "$EPMD_PORT" ]; then
        EPMD=$(ls /usr/lib/erlang/erts-*/bin/epmd 2>/dev/null | tail -n 1)
        [ -n "$EPMD" ] && ERL_EPMD_PORT=$EPMD_PORT "$EPMD" -port "$EPMD_PORT" -kill >/dev/null 2>&1 || true
        EPMD_PORT=""
    fi
}
cleanup () {
    trap "" INT TERM HUP
    trap - EXIT
    [ -n "$QPID" ] && kill -TERM "$QPID" 2>/dev/null && wait "$QPID" 2>/dev/null
    rabbit_stop
    true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

note () {
    echo "peers: $*" >&2
    echo "$*" >> "$T/notes"
}
: > "$T/notes"
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
jfield () {
    sed -n "s/.*\"$1\":\\([0-9.]*\\).*/\\1/p"
}

# ---------------------------------------------------------------- Queen
$PSQL -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "DROP DATABASE IF EXISTS $BOSS_DB" \
      -c "CREATE DATABASE $DB" -c "CREATE DATABASE $BOSS_DB"
PORT=$(sh "$PG" freeport)
KAFKA_PORT=0 SQS_PORT=0 MESH_PORT=0 PORT=$PORT HOST=127.0.0.1 PG_HOST=127.0.0.1 PG_PORT=$QN_PG_PORT PG_DB=$DB \
    FILE_BUFFER_DIR="$T/spool" LOG_LEVEL=warn "$QN_BIN" > "$T/broker.log" 2>&1 &
QPID=$!
URL="http://127.0.0.1:$PORT"
n=0
until curl -sf "$URL/health" >/dev/null 2>&1; do
    n=$((n + 1))
    [ $n -gt 200 ] && { echo "peers: broker did not start"; cat "$T/broker.log"; exit 1; }
    sleep 0.1
done
#  A fresh broker spools pushes until the spool's first report
n=0
until curl -sf -X POST "$URL/api/v1/push" -H 'Content-Type: application/json' \
        -d '{"items":[{"queue":"warm-up","payload":0}]}' | grep -q '"queued"'; do
    n=$((n + 1))
    [ $n -gt 200 ] && { echo "peers: broker does not store pushes"; exit 1; }
    sleep 0.1
done

#  CPU per consumed message around a Queen cycle: PostgreSQL (every
#  child of this run's postmaster, live ones' utime + stime plus the
#  reaped ones' cutime + cstime: backends, autovacuum, WAL writer ...)
#  and the broker (its own utime + stime), in clock ticks.
PM=$(head -n 1 "$QN_PG_DIR/data/postmaster.pid")
HZ=$(getconf CLK_TCK)
pg_ticks () {
    { sed 's/^.*) //' "/proc/$PM/stat" | awk '{ print $14 + $15 }'
      for c in $(pgrep -P "$PM"); do
          sed 's/^.*) //' "/proc/$c/stat" 2>/dev/null | awk '{ print $12 + $13 }'
      done; } | awk '{ s += $1 } END { print s + 0 }'
}
broker_ticks () {
    sed 's/^.*) //' "/proc/$QPID/stat" 2>/dev/null | awk '{ print $12 + $13 }'
}
cpu_mark () {
    CPU_PG0=$(pg_ticks)
    CPU_BR0=$(broker_ticks)
}
#  "PG / broker" us per message for $1 consumed msg/s over SECS
cpu_per_msg () {
    pg1=$(pg_ticks)
    br1=$(broker_ticks)
    awk -v p=$((pg1 - CPU_PG0)) -v b=$((br1 - CPU_BR0)) -v hz="$HZ" -v r="${1:-0}" -v s="$SECS" \
        'BEGIN { n = r * s; if (n > 0) printf "%.1f / %.1f", p / hz * 1e6 / n, b / hz * 1e6 / n; else print "-" }'
}

echo "peers: Queen push (${SECS}s)"
Q_PUSH=$(node "$HERE/load.mjs" push --url "$URL" --queue bpush --conns 8 --batch 100 --payload 256 \
         --partitions 1000 --seconds "$SECS" | jfield msgs_per_s)
echo "peers: Queen cycle (${SECS}s)"
cpu_mark
Q_CYCLE=$(node "$HERE/load.mjs" cycle --url "$URL" --queue bcycle --producers 4 --consumers 4 --batch 100 \
          --payload 256 --partitions 1000 --seconds "$SECS" | jfield consumed_per_s)
Q_CYCLE_CPU=$(cpu_per_msg "$Q_CYCLE")
echo "peers: Queen cycle, one partition per push batch (${SECS}s)"
cpu_mark
Q_CYCLE_K=$(node "$PEERS/queen.mjs" cycle --url "$URL" --queue bcyclek --producers 4 --consumers 4 --batch 100 \
            --payload 256 --partitions 1000 --spread 1 --pop-partitions 100 --seconds "$SECS" | jfield consumed_per_s)
Q_CYCLE_K_CPU=$(cpu_per_msg "$Q_CYCLE_K")
echo "peers: Queen CPU per consumed message (PostgreSQL / broker, us): cycle $Q_CYCLE_CPU; keyed $Q_CYCLE_K_CPU"

# ---------------------------------------------------------------- PostgreSQL ceilings
#  The SQL the broker runs, minus the broker (as in bench/messaging.sh).
cat > "$T/push.sql" <<EOF
SELECT count(*) FROM queen.push ('', array_fill ('bpg'::text, ARRAY[100]),
  ARRAY (SELECT 'p' || floor (random () * 1000)::int FROM generate_series (1, 100)),
  array_fill (NULL::text, ARRAY[100]),
  ARRAY (SELECT convert_to ('{"s":' || g || ',"t":1764500000000,"f":"' || repeat ('x', 216) || '"}', 'UTF8')
         FROM generate_series (1, 100) g),
  array_fill (NULL::uuid, ARRAY[100]), array_fill (NULL::text, ARRAY[100]),
  array_fill (false, ARRAY[100]), false);
EOF
sed 's/bpg/bpgc/' "$T/push.sql" > "$T/push_c.sql"
cat > "$T/consume.sql" <<EOF
SELECT coalesce (array_agg (partition_id), '{}') AS pids, coalesce (array_agg (seq), '{}') AS seqs,
       count (seq) AS n
  FROM queen.pop ('', 'bpgc', NULL, '__QUEUE_MODE__', NULL, NULL, 100, 100, gen_random_uuid (), false)
 WHERE seq IS NOT NULL \gset
SELECT count(*) FROM queen.ack ('', array_fill ('__QUEUE_MODE__'::text, ARRAY[:n]), ':pids'::bigint[],
  array_fill (NULL::text, ARRAY[:n]), ':seqs'::bigint[], array_fill ('completed'::text, ARRAY[:n]),
  array_fill (NULL::uuid, ARRAY[:n]), array_fill (NULL::text, ARRAY[:n]));
EOF
for q in bpg bpgc; do
    curl -sf -X POST "$URL/api/v1/configure" -H 'Content-Type: application/json' \
         -d "{\"queue\":\"$q\",\"options\":{\"leaseTime\":60}}" >/dev/null
done
kill -TERM "$QPID" 2>/dev/null && wait "$QPID" 2>/dev/null || true
QPID=""
PG_PUSH=""
PG_CYCLE=""
if ! want pgbench; then
    :
elif [ -z "$PGBENCH" ]; then
    note "PostgreSQL ceilings skipped: pgbench not found"
else
    echo "peers: PostgreSQL ceiling, queen.push via pgbench (${SECS}s)"
    PGOPTIONS="-c jit=off" "$PGBENCH" -n -h 127.0.0.1 -p "$QN_PG_PORT" -U postgres -c 8 -j 2 -T "$SECS" \
        -f "$T/push.sql" $DB > "$T/pgbench_push.txt" 2>&1 || true
    tps=$(awk '/^tps/ { print int($3) }' "$T/pgbench_push.txt" | head -n 1)
    [ -n "$tps" ] && PG_PUSH=$((tps * 100)) || note "pgbench push failed: $(tail -n 3 "$T/pgbench_push.txt")"
    echo "peers: PostgreSQL ceiling, queen.push + pop + ack via pgbench (${SECS}s)"
    c0=$(bench_consumed bpgc)
    PGOPTIONS="-c jit=off" "$PGBENCH" -n -h 127.0.0.1 -p "$QN_PG_PORT" -U postgres -c 8 -j 2 -T "$SECS" \
        -f "$T/push_c.sql@1" -f "$T/consume.sql@1" $DB > "$T/pgbench_cycle.txt" 2>&1 || true
    c1=$(bench_consumed bpgc)
    PG_CYCLE=$(( (c1 - c0) / SECS ))
fi

# ---------------------------------------------------------------- PGMQ
M_PUSH=""
M_CYCLE=""
M_VERSION=""
if ! want pgmq; then
    :
elif [ -z "${QN_PGMQ_SQL:-}" ]; then
    note "PGMQ skipped: QN_PGMQ_SQL is unset (path of pgmq.sql from github pgmq/pgmq, pgmq-extension/sql/pgmq.sql)"
elif [ ! -r "$QN_PGMQ_SQL" ]; then
    note "PGMQ skipped: QN_PGMQ_SQL=$QN_PGMQ_SQL is not a readable file"
elif [ -z "$PGBENCH" ]; then
    note "PGMQ skipped: pgbench not found"
elif ! { $PSQL -d postgres -c "DROP DATABASE IF EXISTS $PGMQ_DB" -c "CREATE DATABASE $PGMQ_DB" &&
         $PSQL -d $PGMQ_DB -v ON_ERROR_STOP=1 -f "$QN_PGMQ_SQL" &&
         $PSQL -d $PGMQ_DB -v ON_ERROR_STOP=1 -c "SELECT pgmq.create ('bpush')" -c "SELECT pgmq.create ('bcycle')"; } \
        > "$T/pgmq_install.txt" 2>&1; then
    note "PGMQ skipped: installing $QN_PGMQ_SQL failed ($(tail -n 1 "$T/pgmq_install.txt"))"
else
    M_VERSION="pgmq.sql sha256 $(sha256sum "$QN_PGMQ_SQL" | cut -c1-12)"
    #  256-byte JSON documents, as the others' payloads
    cat > "$T/pgmq_send.sql" <<'EOF'
SELECT count(*) FROM pgmq.send_batch ('QUEUE',
  ARRAY (SELECT jsonb_build_object ('s', g, 't', 1764500000000, 'f', repeat ('x', 216))
         FROM generate_series (1, 100) g));
EOF
    sed 's/QUEUE/bpush/' "$T/pgmq_send.sql" > "$T/pgmq_push.sql"
    sed 's/QUEUE/bcycle/' "$T/pgmq_send.sql" > "$T/pgmq_produce.sql"
    cat > "$T/pgmq_consume.sql" <<'EOF'
BEGIN;
SELECT coalesce (array_agg (msg_id), '{}') AS ids FROM pgmq.read ('bcycle', 60, 100) \gset
SELECT count(*) FROM pgmq.delete ('bcycle', ':ids'::bigint[]);
COMMIT;
EOF
    #  sent - left = consumed (deleted)
    pgmq_consumed () {
        $PSQL -d $PGMQ_DB -c "SELECT (SELECT CASE WHEN is_called THEN last_value ELSE 0 END
                                        FROM pgmq.q_bcycle_msg_id_seq) - (SELECT count(*) FROM pgmq.q_bcycle)"
    }
    echo "peers: PGMQ push, pgmq.send_batch via pgbench (${SECS}s)"
    PGOPTIONS="-c jit=off" "$PGBENCH" -n -h 127.0.0.1 -p "$QN_PG_PORT" -U postgres -c 8 -j 2 -T "$SECS" \
        -f "$T/pgmq_push.sql" $PGMQ_DB > "$T/pgmq_push.txt" 2>&1 || true
    tps=$(awk '/^tps/ { print int($3) }' "$T/pgmq_push.txt" | head -n 1)
    [ -n "$tps" ] && M_PUSH=$((tps * 100)) || note "PGMQ push failed: $(tail -n 3 "$T/pgmq_push.txt")"
    echo "peers: PGMQ cycle, 4 x send_batch + 4 x (read 100 + delete) via pgbench (${SECS}s)"
    c0=$(pgmq_consumed)
    PGOPTIONS="-c jit=off" "$PGBENCH" -n -h 127.0.0.1 -p "$QN_PG_PORT" -U postgres -c 4 -j 1 -T "$SECS" \
        -f "$T/pgmq_produce.sql" $PGMQ_DB > "$T/pgmq_produce.txt" 2>&1 &
    mp=$!
    PGOPTIONS="-c jit=off" "$PGBENCH" -n -h 127.0.0.1 -p "$QN_PG_PORT" -U postgres -c 4 -j 1 -T "$SECS" \
        -f "$T/pgmq_consume.sql" $PGMQ_DB > "$T/pgmq_consume.txt" 2>&1 || true
    wait "$mp" || true
    c1=$(pgmq_consumed)
    if grep -q '^tps' "$T/pgmq_consume.txt" && grep -q '^tps' "$T/pgmq_produce.txt"; then
        M_CYCLE=$(( (c1 - c0) / SECS ))
    else
        note "PGMQ cycle failed: $(tail -n 3 "$T/pgmq_consume.txt" "$T/pgmq_produce.txt" | tr '\n' ' ')"
    fi
fi

# ---------------------------------------------------------------- npm packages
#  node resolves bench/peers/node_modules from the scripts there.
npm_ok=""
if ! want pgboss && ! want rabbit; then
    :
elif ! command -v npm >/dev/null 2>&1; then
    note "npm not found: RabbitMQ (amqplib) and pg-boss skipped"
elif ( cd "$PEERS" && node -e "import('amqplib').then(() => import('pg-boss'))" ) >/dev/null 2>&1; then
    npm_ok=1
else
    echo "peers: installing amqplib and pg-boss into bench/peers/node_modules"
    ( cd "$PEERS" && timeout 300 npm install --no-audit --no-fund --no-package-lock --loglevel=error ) \
        > "$T/npm.log" 2>&1 || true
    npm_ok=1
fi
have_pkg () {
    [ -n "$npm_ok" ] && ( cd "$PEERS" && node -e "import('$1')" ) >/dev/null 2>&1
}

# ---------------------------------------------------------------- pg-boss
B_PUSH=""
B_CYCLE=""
if [ -z "$npm_ok" ] || ! want pgboss; then
    :
elif ! have_pkg pg-boss; then
    note "pg-boss skipped: the npm package could not be installed ($(tail -n 1 "$T/npm.log" 2>/dev/null))"
else
    BOSS_URL="postgres://postgres:postgres@127.0.0.1:$QN_PG_PORT/$BOSS_DB"
    echo "peers: pg-boss push (${SECS}s)"
    B_PUSH=$(timeout $((SECS + 120)) node "$PEERS/pgboss.mjs" push --db "$BOSS_URL" --queue bpush --conns 8 \
             --batch 100 --payload 256 --seconds "$SECS" 2> "$T/pgboss.err" | jfield msgs_per_s) || true
    echo "peers: pg-boss cycle (${SECS}s)"
    B_CYCLE=$(timeout $((SECS + 120)) node "$PEERS/pgboss.mjs" cycle --db "$BOSS_URL" --queue bcycle --producers 4 \
              --consumers 4 --batch 100 --payload 256 --seconds "$SECS" 2>> "$T/pgboss.err" | jfield consumed_per_s) || true
    [ -n "$B_PUSH" ] && [ -n "$B_CYCLE" ] || note "pg-boss failed: $(tail -n 3 "$T/pgboss.err")"
    B_VERSION=$(cd "$PEERS" && node -e "console.log(JSON.parse(require('fs').readFileSync('node_modules/pg-boss/package.json')).version)" 2>/dev/null || echo "?")
fi

# ---------------------------------------------------------------- RabbitMQ
R_PUSH=""
R_CYCLE=""
R_VERSION=""
if want rabbit && [ ! -x "$RABBIT_SERVER" ] && [ "$(id -u)" = 0 ]; then
    echo "peers: installing rabbitmq-server (Debian)"
    export DEBIAN_FRONTEND=noninteractive
    if ! timeout 300 apt-get install -y -qq --no-install-recommends rabbitmq-server > "$T/apt.log" 2>&1; then
        timeout 120 apt-get update -qq >> "$T/apt.log" 2>&1 || true
        timeout 300 apt-get install -y -qq --no-install-recommends rabbitmq-server >> "$T/apt.log" 2>&1 || true
    fi
fi
if [ -z "$npm_ok" ] || ! want rabbit; then
    :
elif [ ! -x "$RABBIT_SERVER" ]; then
    note "RabbitMQ skipped: rabbitmq-server is not installed and could not be ($(tail -n 1 "$T/apt.log" 2>/dev/null))"
elif ! have_pkg amqplib; then
    note "RabbitMQ skipped: the npm package amqplib could not be installed ($(tail -n 1 "$T/npm.log" 2>/dev/null))"
else
    R="$T/rabbit"
    mkdir -p "$R/mnesia" "$R/log" "$R/home"
    echo "[]." > "$R/enabled_plugins"
    RPORT=$(sh "$PG" freeport)
    DPORT=$(sh "$PG" freeport)
    EPMD_PORT=$(sh "$PG" freeport)
    echo "peers: starting RabbitMQ (node bench@localhost, AMQP port $RPORT)"
    env HOME="$R/home" RABBITMQ_NODENAME=bench@localhost RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 \
        RABBITMQ_NODE_PORT="$RPORT" RABBITMQ_DIST_PORT="$DPORT" ERL_EPMD_PORT="$EPMD_PORT" \
        RABBITMQ_MNESIA_BASE="$R/mnesia" RABBITMQ_LOG_BASE="$R/log" \
        RABBITMQ_ENABLED_PLUGINS_FILE="$R/enabled_plugins" RABBITMQ_CONFIG_FILE="$R/rabbitmq" \
        RABBITMQ_PID_FILE="$R/pid" "$RABBIT_SERVER" > "$R/stdout.log" 2>&1 &
    RPID=$!
    AMQP="amqp://guest:guest@127.0.0.1:$RPORT"
    if ! node "$PEERS/rabbit.mjs" wait --url "$AMQP" --seconds 90 > /dev/null 2> "$T/rabbit.err"; then
        note "RabbitMQ skipped: the node did not start ($(tail -n 2 "$R/stdout.log" | tr '\n' ' '))"
    else
        R_VERSION=$(dpkg-query -W -f '${Version}' rabbitmq-server 2>/dev/null || echo "?")
        echo "peers: RabbitMQ push (${SECS}s)"
        R_PUSH=$(timeout $((SECS + 120)) node "$PEERS/rabbit.mjs" push --url "$AMQP" --queue bpush --conns 8 \
                 --batch 100 --payload 256 --seconds "$SECS" --queue-type "$RABBIT_QUEUE_TYPE" 2>> "$T/rabbit.err" \
                 | jfield msgs_per_s) || true
        echo "peers: RabbitMQ cycle (${SECS}s)"
        R_CYCLE=$(timeout $((SECS + 120)) node "$PEERS/rabbit.mjs" cycle --url "$AMQP" --queue bcycle --producers 4 \
                  --consumers 4 --batch 100 --payload 256 --seconds "$SECS" --queue-type "$RABBIT_QUEUE_TYPE" \
                  2>> "$T/rabbit.err" | jfield consumed_per_s) || true
        [ -n "$R_PUSH" ] && [ -n "$R_CYCLE" ] || note "RabbitMQ failed: $(tail -n 3 "$T/rabbit.err")"
    fi
    rabbit_stop
fi

# ---------------------------------------------------------------- report
ratio () {
    awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b != "" && b > 0) printf "%.2f", a / b; else print "-" }'
}
cell () {
    [ -n "$1" ] && echo "$1" || echo "-"
}
{
    echo "== peers: same machine, same run, equivalent durability, 256-byte payloads, ${SECS}s per figure"
    echo "   $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/^Mem:/ { print $2 }') GiB;" \
         "PostgreSQL $($PSQL -d postgres -c 'SHOW server_version') (fsync on, synchronous_commit on);" \
         "RabbitMQ ${R_VERSION:-not run} ($RABBIT_QUEUE_TYPE durable queue, persistent, confirms, manual ack);" \
         "pg-boss ${B_VERSION:-not run}; PGMQ ${M_VERSION:-not run} (pgbench; cycle: read 100 + delete in one transaction)"
    echo "   load avg at start $LOAD_START, at end $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    printf "%-34s %10s %10s %6s %10s %6s %10s %6s %12s %6s\n" "msg/s" queen rabbitmq ratio pg-boss ratio pgmq ratio \
        "pg ceiling" ratio
    printf "%-34s %10s %10s %6s %10s %6s %10s %6s %12s %6s\n" "push (8 conns x batch 100)" "$(cell "$Q_PUSH")" \
        "$(cell "$R_PUSH")" "$(ratio "$R_PUSH" "$Q_PUSH")" "$(cell "$B_PUSH")" "$(ratio "$B_PUSH" "$Q_PUSH")" \
        "$(cell "$M_PUSH")" "$(ratio "$M_PUSH" "$Q_PUSH")" "$(cell "$PG_PUSH")" "$(ratio "$PG_PUSH" "$Q_PUSH")"
    printf "%-34s %10s %10s %6s %10s %6s %10s %6s %12s %6s\n" "cycle consumed (4 + 4)" "$(cell "$Q_CYCLE")" \
        "$(cell "$R_CYCLE")" "$(ratio "$R_CYCLE" "$Q_CYCLE")" "$(cell "$B_CYCLE")" "$(ratio "$B_CYCLE" "$Q_CYCLE")" \
        "$(cell "$M_CYCLE")" "$(ratio "$M_CYCLE" "$Q_CYCLE")" "$(cell "$PG_CYCLE")" "$(ratio "$PG_CYCLE" "$Q_CYCLE")"
    printf "%-34s %10s %10s %6s %10s %6s %10s %6s %12s %6s\n" "cycle, keyed batches (4 + 4)" "$(cell "$Q_CYCLE_K")" \
        "$(cell "$R_CYCLE")" "$(ratio "$R_CYCLE" "$Q_CYCLE_K")" "$(cell "$B_CYCLE")" "$(ratio "$B_CYCLE" "$Q_CYCLE_K")" \
        "$(cell "$M_CYCLE")" "$(ratio "$M_CYCLE" "$Q_CYCLE_K")" "-" "-"
    echo "Queen CPU per consumed message, us (PostgreSQL: every child of the postmaster / broker):" \
         "cycle ${Q_CYCLE_CPU:--}; keyed ${Q_CYCLE_K_CPU:--}"
    echo
    echo "ratio = that column / queen (above 1: faster than Queen). Queen spreads messages over 1,000 partitions;"
    echo "push and cycle pick a random partition per message (bench/load.mjs; pops claim up to 100 partitions);"
    echo "the keyed row sends each push batch to one partition (bench/peers/queen.mjs), the shape of per-key"
    echo "client buffers; RabbitMQ, pg-boss and PGMQ have one queue and no partitions, so their figures repeat."
    echo "pg ceiling = pgbench running queen.push (and queen.pop + queen.ack for the cycle) directly, 8 clients:"
    echo "Queen's SQL without the broker."
    if [ -s "$T/notes" ]; then
        echo
        sed 's/^/note: /' "$T/notes"
    fi
} | tee "$OUT"
