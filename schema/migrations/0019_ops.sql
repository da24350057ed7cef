-- 0019_ops.sql: the dashboard's dead-letter pages and the ingest rollup
-- (issue 18; functions in schema/functions/66_stats.sql, docs/operations.md).

-- Dead letters page by keyset, newest first, on (failed_at, id) within a
-- queue, a queue's consumer group or a partition (queen.api_dead_letters):
-- each page is an index range. The (queue_id, failed_at) index is the
-- prefix of the first one.
CREATE INDEX dead_letters_queue_page ON queen.dead_letters (queue_id, failed_at, id);
CREATE INDEX dead_letters_group_page ON queen.dead_letters (queue_id, consumer_group, failed_at, id);
CREATE INDEX dead_letters_partition_page ON queen.dead_letters (partition_id, failed_at, id);
DROP INDEX queen.dead_letters_queue;

-- Messages ever removed from a partition (deletes, retention, dropped
-- segments): messages + removed is the partition's monotone count of
-- messages pushed, whose growth the ingest rollup reads without touching
-- the messages. queen.push keeps writing only `messages`.
ALTER TABLE queen.partition_stats ADD COLUMN removed bigint NOT NULL DEFAULT 0;

CREATE OR REPLACE FUNCTION queen_stats.messages_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  -- rows locked in partition order, as queen.push does
  PERFORM 1 FROM queen.partition_stats s
   WHERE s.partition_id IN (SELECT DISTINCT g.partition_id FROM gone g)
   ORDER BY s.partition_id FOR UPDATE;
  UPDATE queen.partition_stats s
     SET messages = s.messages - d.n, removed = s.removed + d.n, updated_at = now()
    FROM (SELECT g.partition_id, count(*) AS n FROM gone g GROUP BY g.partition_id) d
   WHERE s.partition_id = d.partition_id;
  RETURN NULL;
END
$$;

-- The ingest rollup (queen._ingest_rollup, run by the segment upkeep tick):
-- per partition, the pushed count already rolled up; per queue and minute,
-- the messages pushed. Throughput reads sum the minutes plus the partitions'
-- growth past their mark, never the messages.
CREATE TABLE queen.ingest_marks (
  partition_id bigint PRIMARY KEY,
  pushed       bigint NOT NULL
);
INSERT INTO queen.ingest_marks (partition_id, pushed)
SELECT partition_id, messages + removed FROM queen.partition_stats;

CREATE TABLE queen.ingest_minutes (
  queue_id int         NOT NULL,
  minute   timestamptz NOT NULL,
  ingested bigint      NOT NULL,
  PRIMARY KEY (queue_id, minute)
);
CREATE INDEX ingest_minutes_minute ON queen.ingest_minutes (minute);

INSERT INTO queen.system_state (key, value) VALUES ('ingest_rolled_at', to_jsonb(now()))
ON CONFLICT (key) DO NOTHING;
