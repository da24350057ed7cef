#!/bin/sh
# Kafka offsets become visible in offset order (spec kafka.md §6.3): 4
# sessions push 25 single messages each into their own native partition of
# a queue with one kpart while a reader fetches from its position over and
# over; the reader must see offsets 0..99 each exactly once (a row
# committed later with a smaller offset than one already read would be
# skipped), and the log must be dense.
set -e
run=$(date +%s%N)
q="krace_$run"
dir=$(mktemp -d)
psql -X -q -v ON_ERROR_STOP=1 "$@" -c "SELECT queen.configure('', '$q', NULL, NULL, NULL)" >/dev/null
# Kafka names the queue (Metadata with auto-creation): its view is on from here
psql -X -q -v ON_ERROR_STOP=1 "$@" -c "SELECT count(*) FROM queen.kafka_topics('', ARRAY['$q'], true, 1)" >/dev/null
psql -X -q -At -v ON_ERROR_STOP=1 "$@" -c "
  CREATE TEMP TABLE seen (koffset bigint);
  DO \$\$
  DECLARE pos bigint := 0; t0 timestamptz := clock_timestamp(); r record;
  BEGIN
    WHILE pos < 100 AND clock_timestamp() < t0 + interval '60 s' LOOP
      FOR r IN SELECT koffset FROM queen.kafka_fetch('', '$q', 0, pos, 1048576, 7)
                WHERE koffset IS NOT NULL ORDER BY koffset LOOP
        INSERT INTO seen VALUES (r.koffset);
        pos := r.koffset + 1;
      END LOOP;
    END LOOP;
  END \$\$;
  SELECT count(*) || ' ' || count(DISTINCT koffset) || ' ' || COALESCE(max(koffset), -1) FROM seen" \
  >"$dir/reader" 2>"$dir/err0" &
reader=$!
for i in 1 2 3 4; do
  psql -X -q -At -v ON_ERROR_STOP=1 "$@" -c "
    DO \$\$ BEGIN
      FOR k IN 1..25 LOOP
        PERFORM queen.push('', ARRAY['$q'], ARRAY['p$i'], ARRAY[NULL], ARRAY[convert_to(k::text, 'UTF8')],
                           ARRAY[NULL::uuid], ARRAY[NULL], ARRAY[false], false);
        COMMIT;
      END LOOP;
    END \$\$" >/dev/null 2>"$dir/err$i" &
done
wait
got=$(cat "$dir/reader")
dense=$(psql -X -q -At "$@" -c "SELECT count(*) = 100 AND count(DISTINCT koffset) = 100 AND max(koffset) = 99
  FROM queen.kafka_log l JOIN queen.queues q ON q.id = l.queue_id WHERE q.name = '$q'")
cat "$dir"/err* >&2
rm -rf "$dir"
echo "reader: rows distinct max = $got; log dense = $dense"
[ "$got" = "100 100 99" ] && [ "$dense" = t ]
