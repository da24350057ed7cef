-- Kafka consumer groups' committed offsets (schema/functions/61_kafka_groups.sql,
-- spec kafka.md §4.11, §4.12, §6.4): one statement stores every item of an
-- OffsetCommit (3 for an unknown topic or partition, stored nothing), the
-- last item for a partition wins, metadata bytes round-trip (NUL, non
-- UTF-8), a later commit replaces, OffsetFetch by item (never committed
-- -1/NULL, unknown 3) and of everything the group committed, groups apart.
\ir _lib.psql

SELECT pg_temp.ok(queen.kafka_create_topic('', pg_temp.qn('g3'), 3, 1024, false) = 0, 'create g3');

SELECT pg_temp.ok(array_agg(err ORDER BY ord) = ARRAY[0, 3, 3, 0, 0]::smallint[], 'commit errors per item')
  FROM queen.kafka_offset_commit('', 'grp-a',
         ARRAY[pg_temp.qn('g3'), pg_temp.qn('g3'), 'no-such-topic', pg_temp.qn('g3'), pg_temp.qn('g3')],
         ARRAY[0, 3, 0, 1, 0], ARRAY[5, 9, 1, 7, 6]::bigint[],
         ARRAY['\x00ff'::bytea, NULL, NULL, NULL, 'meta'::bytea]);

SELECT pg_temp.ok(array_agg(kpart || ':' || committed_offset || ':' || coalesce(encode(metadata, 'hex'), '-')
                            ORDER BY kpart) = ARRAY['0:6:6d657461', '1:7:-'], 'stored: last item wins, one row per kpart')
  FROM queen.kafka_group_offset o JOIN queen.queues q ON q.id = o.queue_id
 WHERE o.group_name = 'grp-a' AND q.name = pg_temp.qn('g3');

SELECT count(*) FROM queen.kafka_offset_commit('', 'grp-a', ARRAY[pg_temp.qn('g3')], ARRAY[1], ARRAY[8]::bigint[],
                                               ARRAY['\x00ff'::bytea]);

SELECT pg_temp.ok(array_agg(err || ':' || koffset || ':' || coalesce(encode(metadata, 'hex'), '-') ORDER BY o)
                  = ARRAY['0:6:6d657461', '0:8:00ff', '0:-1:-', '3:-1:-', '3:-1:-'], 'fetch by item')
  FROM (SELECT f.*, row_number() OVER () AS o
          FROM queen.kafka_offset_fetch('', 'grp-a',
                 ARRAY[pg_temp.qn('g3'), pg_temp.qn('g3'), pg_temp.qn('g3'), pg_temp.qn('g3'), 'no-such-topic'],
                 ARRAY[0, 1, 2, 3, 0]) f) x;

SELECT pg_temp.ok(array_agg(kpart || ':' || koffset ORDER BY kpart) = ARRAY['0:6', '1:8'], 'fetch everything the group committed')
  FROM queen.kafka_offset_fetch('', 'grp-a', NULL, NULL) WHERE topic = pg_temp.qn('g3');

SELECT pg_temp.ok(count(*) = 0, 'another group sees nothing')
  FROM queen.kafka_offset_fetch('', 'grp-b', NULL, NULL);
SELECT pg_temp.ok(bool_and(koffset = -1 AND err = 0), 'a group that never committed: -1')
  FROM queen.kafka_offset_fetch('', 'grp-b', ARRAY[pg_temp.qn('g3')], ARRAY[0]);
