#!/bin/sh
# Micro-benchmarks of the hot functions (figures recorded in docs/storage.md).
# Not part of run.sh. Needs pgbench. Usage: test/sql/bench.sh <dbname> [seconds]
# Creates and drops <dbname> on the server given by PGHOST/PGPORT/PGUSER.
set -e
db=$1; secs=${2:-10}
here=$(cd "$(dirname "$0")" && pwd)
pgbench=$(command -v pgbench || echo /usr/lib/postgresql/15/bin/pgbench)
w=$(mktemp -d)
dropdb --if-exists "$db"; createdb "$db"
"$here/apply.sh" -d "$db" >/dev/null
psql -X -q -d "$db" -c "SET jit = off" >/dev/null

echo "# setup: queue big = 100,000 partitions x 2 messages; queue hot = 100 partitions x 3,000 messages"
cat >"$w/setup.sql" <<'SQL'
SELECT format($f$SELECT count(*) FROM queen.push('', array_fill('big'::text, ARRAY[512]),
   ARRAY(SELECT 'p' || lpad((%s*256 + (k %% 256))::text, 6, '0') FROM generate_series(0,511) k),
   array_fill(NULL::text, ARRAY[512]), array_fill('{"hello":"world","n":12345}'::bytea, ARRAY[512]),
   array_fill(NULL::uuid, ARRAY[512]), array_fill(NULL::text, ARRAY[512]), array_fill(false, ARRAY[512]), false)$f$, i)
FROM generate_series(0, 390) i \gexec
SELECT format($f$SELECT count(*) FROM queen.push('', array_fill('hot'::text, ARRAY[10000]),
   ARRAY(SELECT 'h' || (k %% 100) FROM generate_series(0,9999) k),
   array_fill(NULL::text, ARRAY[10000]), array_fill('{"hello":"world","n":12345}'::bytea, ARRAY[10000]),
   array_fill(NULL::uuid, ARRAY[10000]), array_fill(NULL::text, ARRAY[10000]), array_fill(false, ARRAY[10000]), false)$f$)
FROM generate_series(1, 30) i \gexec
VACUUM ANALYZE;
SQL
t0=$(date +%s.%N)
psql -X -q -d "$db" -f "$w/setup.sql" >/dev/null
t1=$(date +%s.%N)
echo "setup: $(echo "$t1 - $t0" | bc) s for 100,096 new partitions/200,192 messages + 300,000 messages"

cat >"$w/push_dense.sql" <<'SQL'
\set b random(0, 389)
SELECT count(*) FROM queen.push('', array_fill('big'::text, ARRAY[10000]),
   ARRAY(SELECT 'p' || lpad((:b*256 + (k % 256))::text, 6, '0') FROM generate_series(0,9999) k),
   array_fill(NULL::text, ARRAY[10000]), array_fill('{"hello":"world","n":12345}'::bytea, ARRAY[10000]),
   array_fill(NULL::uuid, ARRAY[10000]), array_fill(NULL::text, ARRAY[10000]), array_fill(false, ARRAY[10000]), false);
SQL
cat >"$w/push_dense_txn.sql" <<'SQL'
\set b random(0, 389)
SELECT count(*) FROM queen.push('', array_fill('big'::text, ARRAY[10000]),
   ARRAY(SELECT 'p' || lpad((:b*256 + (k % 256))::text, 6, '0') FROM generate_series(0,9999) k),
   ARRAY(SELECT md5(random()::text) FROM generate_series(0,9999) k), array_fill('{"hello":"world","n":12345}'::bytea, ARRAY[10000]),
   array_fill(NULL::uuid, ARRAY[10000]), array_fill(NULL::text, ARRAY[10000]), array_fill(false, ARRAY[10000]), false);
SQL
cat >"$w/push_sparse.sql" <<'SQL'
\set b random(0, 389)
SELECT count(*) FROM queen.push('', array_fill('big'::text, ARRAY[256]),
   ARRAY(SELECT 'p' || lpad((:b*256 + k)::text, 6, '0') FROM generate_series(0,255) k),
   ARRAY(SELECT md5(random()::text) FROM generate_series(0,255) k), array_fill('{"hello":"world","n":12345}'::bytea, ARRAY[256]),
   array_fill(NULL::uuid, ARRAY[256]), array_fill(NULL::text, ARRAY[256]), array_fill(false, ARRAY[256]), false);
SQL
cat >"$w/push_one.sql" <<'SQL'
\set b random(0, 99999)
SELECT count(*) FROM queen.push('', ARRAY['big'], ARRAY['p' || lpad(:b::text, 6, '0')], ARRAY[md5(random()::text)],
   ARRAY['{"hello":"world","n":12345}'::bytea], ARRAY[NULL::uuid], ARRAY[NULL::text], ARRAY[false], false);
SQL
cat >"$w/pop_ack.sql" <<'SQL'
\set l random(1, 1000000000)
SELECT coalesce(string_agg(partition_id::text, ','), '') AS pids, coalesce(string_agg(seq::text, ','), '') AS seqs, count(*) AS n FROM queen.pop('', :q, NULL, :g, NULL, NULL, :batch, :maxp, md5(:l::text)::uuid, false) WHERE seq IS NOT NULL \gset
SELECT count(*) FROM queen.ack('', array_fill(:g::text, ARRAY[:n]), ARRAY[:pids]::bigint[], array_fill(NULL::text, ARRAY[:n]), ARRAY[:seqs]::bigint[], array_fill('completed'::text, ARRAY[:n]), array_fill(md5(:l::text)::uuid, ARRAY[:n]), array_fill(NULL::text, ARRAY[:n]));
SQL

run() {  # name, script, pgbench -D args...
  name=$1; script=$2; shift 2
  out=$("$pgbench" -n -f "$w/$script" "$@" -c 1 -T "$secs" -r "$db" 2>&1)
  lat=$(echo "$out" | sed -n 's/^latency average = \([0-9.]*\) ms/\1/p')
  stm=$(echo "$out" | awk '/^ +[0-9.]+ +[0-9]+ +SELECT/ {printf "%s ms  ", $1}')
  echo "$name: $lat ms per call ($stm)"
}
for sc in on off; do
  export PGOPTIONS="-c jit=off -c synchronous_commit=$sc"
  echo "## synchronous_commit=$sc, 1 client"
  run "push 10,000 msgs / 256 partitions, no txn ids" push_dense.sql
  run "push 10,000 msgs / 256 partitions, txn ids   " push_dense_txn.sql
  run "push 256 msgs / 256 partitions, txn ids      " push_sparse.sql
  run "push 1 msg, txn id                           " push_one.sql
  run "pop 100 (1 partition of 100) + ack 100       " pop_ack.sql -D q="'hot'" -D g="'g$sc'" -D batch=100 -D maxp=1
  run "pop 10 (1 partition of 100) + ack 10         " pop_ack.sql -D q="'hot'" -D g="'h$sc'" -D batch=10 -D maxp=1
  run "pop 1 (any of 100k partitions) + ack 1       " pop_ack.sql -D q="'big'" -D g=NULL -D batch=1 -D maxp=1
  run "pop 10 (10 of 100k partitions) + ack 10      " pop_ack.sql -D q="'big'" -D g=NULL -D batch=10 -D maxp=10
done
rm -rf "$w"
