#!/bin/sh
# The first Kafka naming of a native queue racing native pushes (spec
# kafka.md D-K7, docs/kafka.md "deviations"): 4 sessions push single
# messages, one commit each, into their own native partition of a queue
# Kafka never named (kafka_partitions NULL) while another session names it
# (Metadata with auto-creation, 2 kparts). Afterwards: the offsets of each
# kpart are dense from 0; every message created after the naming committed
# is in the Kafka log; the logged messages of each native partition are a
# suffix of it (none skipped after the first logged one); messages pushed
# before the naming are not logged.
set -e
run=$(date +%s%N)
q="kview_$run"
dir=$(mktemp -d)
psql -X -q -v ON_ERROR_STOP=1 "$@" -c "SELECT queen.configure('', '$q', NULL, NULL, NULL)" >/dev/null
push() {   # push <partition> <count> <psql args>: one transaction per message
  part=$1; n=$2; shift 2
  psql -X -q -At -v ON_ERROR_STOP=1 "$@" -c "
    DO \$\$ BEGIN
      FOR k IN 1..$n LOOP
        PERFORM queen.push('', ARRAY['$q'], ARRAY['$part'], ARRAY[NULL], ARRAY[convert_to(k::text, 'UTF8')],
                           ARRAY[NULL::uuid], ARRAY[NULL], ARRAY[false], false);
        COMMIT;
      END LOOP;
    END \$\$" >/dev/null
}
for i in 1 2 3 4; do push "p$i" 1 "$@"; done            # surely before
for i in 1 2 3 4; do push "p$i" 60 "$@" 2>"$dir/err$i" & done
# the naming, then (next transaction) the instant after its commit
psql -X -q -At -v ON_ERROR_STOP=1 "$@" -c "SELECT pg_sleep(0.2)" \
  -c "SELECT count(*) FROM queen.kafka_topics('', ARRAY['$q'], true, 2)" \
  -c "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint" >"$dir/switch" 2>"$dir/err0"
wait
for i in 1 2 3 4; do push "p$i" 1 "$@"; done            # surely after
cat "$dir"/err* >&2
sw=$(tail -n 1 "$dir/switch")
res=$(psql -X -q -At -v ON_ERROR_STOP=1 "$@" -c "
  WITH q AS (SELECT id, kafka_partitions FROM queen.queues WHERE tenant = '' AND name = '$q'),
  msgs AS (SELECT m.partition_id, m.seq, m.created_at, l.koffset IS NOT NULL AS logged
             FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
             JOIN q ON p.queue_id = q.id
             LEFT JOIN queen.kafka_log l ON l.partition_id = m.partition_id AND l.seq = m.seq),
  dense AS (SELECT bool_and(c = d AND c = mx + 1) AS ok, count(*) AS kparts
              FROM (SELECT kpart, count(*) c, count(DISTINCT koffset) d, max(koffset) mx
                      FROM queen.kafka_log WHERE queue_id = (SELECT id FROM q) GROUP BY kpart) k)
  SELECT (SELECT kafka_partitions FROM q) || ' ' ||
         (SELECT count(*) FROM msgs) || ' ' ||
         (SELECT ok FROM dense) || ' ' ||
         (SELECT count(*) FROM msgs WHERE NOT logged
            AND created_at > timestamptz 'epoch' + $sw * interval '1 microsecond') || ' ' ||
         (SELECT count(*) FROM msgs a WHERE NOT a.logged AND EXISTS (
            SELECT 1 FROM msgs b WHERE b.partition_id = a.partition_id AND b.logged AND b.seq < a.seq)) || ' ' ||
         (SELECT count(*) FILTER (WHERE logged) > 0 AND count(*) FILTER (WHERE NOT logged) >= 4 FROM msgs)")
rm -rf "$dir"
echo "kparts messages dense unlogged-after-switch gaps both = $res"
[ "$res" = "2 248 true 0 0 true" ]
