#!/bin/sh
# 8 concurrent sessions push the same (partition, transactionId): exactly one
# stores it, every other gets duplicate=true with the winner's seq (spec 2.3).
set -e
run=$(date +%s%N)
q="race_$run"
dir=$(mktemp -d)
psql -X -q -v ON_ERROR_STOP=1 "$@" -c "SELECT queen.configure('', '$q', NULL, NULL, NULL)" >/dev/null
for i in 1 2 3 4 5 6 7 8; do
  psql -X -q -At -v ON_ERROR_STOP=1 "$@" -c "
    SELECT pg_sleep(0.2 - extract(epoch FROM clock_timestamp())::numeric % 0.2);
    SELECT seq || ' ' || CASE WHEN duplicate THEN 't' ELSE 'f' END FROM queen.push('', ARRAY['$q', '$q'], ARRAY['p', 'p'],
      ARRAY['key-1', 'own-$i'], ARRAY['\"v$i\"', '\"w$i\"']::bytea[], ARRAY[NULL, NULL]::uuid[],
      ARRAY[NULL, NULL], ARRAY[false, false], false) WHERE ord = 1" >"$dir/$i" 2>"$dir/err$i" &
done
wait
cat "$dir"/[0-9]* | grep -v '^$' >"$dir/all"
winners=$(grep -c ' f$' "$dir/all" || true)
dups=$(grep -c ' t$' "$dir/all" || true)
seqs=$(cut -d' ' -f1 "$dir/all" | sort -u | wc -l)
stored=$(psql -X -q -At "$@" -c "SELECT count(*) FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '$q' AND m.txn_id = 'key-1'")
others=$(psql -X -q -At "$@" -c "SELECT count(*) FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '$q' AND m.txn_id <> 'key-1'")
cat "$dir"/err* >&2
rm -rf "$dir"
echo "winners=$winners duplicates=$dups distinct_seqs=$seqs stored=$stored others=$others"
[ "$winners" = 1 ] && [ "$dups" = 7 ] && [ "$seqs" = 1 ] && [ "$stored" = 1 ] && [ "$others" = 8 ]
