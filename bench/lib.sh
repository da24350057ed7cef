# bench/lib.sh - what every scenario does first: sourced by bench/*.sh
# (run by bench/run.sh, environment described there).
#   bench_start NAME   fresh database bench_NAME, a broker on a free port
#                      against it (log in $QN_TMP/broker.log), waits for
#                      /health; sets DB, PORT, URL, QPID; stops the broker
#                      on exit. Extra broker settings: BENCH_BROKER_ENV.
#   bench_rss          the broker's VmRSS in KiB
#   bench_consumed Q   messages of queue Q at or below the queue-mode
#                      cursor of their partition (in database $DB)
#   bench_stored Q     messages of queue Q stored (in database $DB)
# Also sets PSQL (psql on the bench cluster) and creates $QN_BENCH_OUT.

PSQL="psql -X -q -t -A -h 127.0.0.1 -p $QN_PG_PORT -U postgres"
mkdir -p "$QN_BENCH_OUT"
QPID=""

bench_cleanup () {
    trap "" INT TERM HUP
    trap - EXIT
    [ -n "$QPID" ] && kill -TERM "$QPID" 2>/dev/null && wait "$QPID" 2>/dev/null
    true
}

bench_start () {
    DB="bench_$1"
    trap bench_cleanup EXIT
    $PSQL -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
    PORT=$(sh "$QN_ROOT/scripts/pg.sh" freeport)
    # shellcheck disable=SC2086
    #  The other doors off unless a scenario asks (fixed default ports
    #  collide with other brokers on the machine)
    env KAFKA_PORT=0 SQS_PORT=0 MESH_PORT=0 \
        PORT="$PORT" HOST=127.0.0.1 PG_HOST=127.0.0.1 PG_PORT="$QN_PG_PORT" PG_DB="$DB" \
        FILE_BUFFER_DIR="$QN_TMP/spool" LOG_LEVEL=warn ${BENCH_BROKER_ENV:-} \
        "$QN_BIN" > "$QN_TMP/broker.log" 2>&1 &
    QPID=$!
    URL="http://127.0.0.1:$PORT"
    n=0
    until curl -sf "$URL/health" >/dev/null 2>&1; do
        n=$((n + 1))
        if [ $n -gt 200 ]; then
            echo "$1: broker did not start"
            cat "$QN_TMP/broker.log"
            exit 1
        fi
        sleep 0.1
    done
}

bench_rss () {
    awk '/VmRSS/ { print $2 }' "/proc/$QPID/status"
}

bench_consumed () {
    $PSQL -d "$DB" -c "SELECT count(*) FROM queen.messages m
        JOIN queen.partitions p ON p.id = m.partition_id
        JOIN queen.queues q ON q.id = p.queue_id AND q.name = '$1'
        JOIN queen.consumer_groups g ON g.queue_id = q.id AND g.name = '__QUEUE_MODE__'
        LEFT JOIN queen.ready r ON r.partition_id = m.partition_id AND r.group_id = g.id
        LEFT JOIN queen.cursors c ON c.partition_id = m.partition_id AND c.group_id = g.id
        WHERE m.seq <= coalesce (r.acked_seq, c.acked_seq, 0)"
}

bench_stored () {
    $PSQL -d "$DB" -c "SELECT count(*) FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
        JOIN queen.queues q ON q.id = p.queue_id AND q.name = '$1'"
}
