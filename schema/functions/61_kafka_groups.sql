-- ---------------------------------------------------------------------------
-- Kafka consumer groups: committed offsets (spec kafka.md §4.11, §4.12, §6.4;
-- docs/kafka.md). Membership lives in the coordinating broker's memory
-- (actors/kafka/group.c); what a group committed lives here, so a broker
-- restart, or another replica taking the Kafka port, resumes every group
-- where it committed. Kafka groups share nothing with native consumer
-- groups of the same name (queen.kafka_group_offset is their only state).
-- ---------------------------------------------------------------------------

-- Stores the offsets of one OffsetCommit in one transaction. Item i names
-- topic p_topics[i], Kafka partition p_kparts[i]. One row per item, in
-- item order: err 0 stored, 3 no such topic (queue of tenant p_tenant with
-- its Kafka view on) or partition. Items that failed store nothing; the
-- others are stored (Kafka answers per partition).
CREATE FUNCTION queen.kafka_offset_commit(p_tenant text, p_group text, p_topics text[],
                                          p_kparts int[], p_offsets bigint[], p_meta bytea[])
RETURNS TABLE(ord int, err smallint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH item AS (
    SELECT i.ord::int AS ord, i.topic, p_kparts[i.ord] AS kpart, p_offsets[i.ord] AS koffset,
           p_meta[i.ord] AS meta, q.id AS qid,
           (q.id IS NULL OR COALESCE(q.kafka_partitions, 0) < 1
            OR p_kparts[i.ord] < 0 OR p_kparts[i.ord] >= q.kafka_partitions) AS bad
      FROM unnest(p_topics) WITH ORDINALITY AS i(topic, ord)
      LEFT JOIN queen.queues q ON q.tenant = p_tenant AND q.name = i.topic),
  latest AS (       -- the last item wins when a request names a partition twice
    SELECT DISTINCT ON (qid, kpart) qid, kpart, koffset, meta
      FROM item WHERE NOT bad ORDER BY qid, kpart, ord DESC),
  put AS (
    INSERT INTO queen.kafka_group_offset AS o
           (group_name, queue_id, kpart, committed_offset, metadata, commit_ts)
    SELECT p_group, qid, kpart, koffset, meta, now() FROM latest ORDER BY qid, kpart
    ON CONFLICT (group_name, queue_id, kpart) DO UPDATE
       SET committed_offset = excluded.committed_offset, metadata = excluded.metadata,
           commit_ts = excluded.commit_ts
    RETURNING 1)
  SELECT item.ord, CASE WHEN item.bad THEN 3 ELSE 0 END::smallint
    FROM item, (SELECT count(*) FROM put) AS done
   ORDER BY item.ord;
END
$$;

-- The committed offsets of group p_group. With p_topics NULL: every offset
-- the group committed on a queue of tenant p_tenant that still exists
-- (OffsetFetch v2+ with a null topic list), as (topic, kpart, 0, offset,
-- metadata). Otherwise one row per item (p_topics[i], p_kparts[i]) in item
-- order: err 3 for an unknown topic or partition, else 0 with the stored
-- offset and metadata, or -1 and NULL when the group committed none (a
-- group that never existed is not an error).
CREATE FUNCTION queen.kafka_offset_fetch(p_tenant text, p_group text, p_topics text[], p_kparts int[])
RETURNS TABLE(topic text, kpart int, err smallint, koffset bigint, metadata bytea)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
  IF p_topics IS NULL THEN
    RETURN QUERY
    SELECT q.name::text, o.kpart, 0::smallint, o.committed_offset, o.metadata
      FROM queen.kafka_group_offset o
      JOIN queen.queues q ON q.id = o.queue_id
     WHERE o.group_name = p_group AND q.tenant = p_tenant AND COALESCE(q.kafka_partitions, 0) >= 1
     ORDER BY q.name, o.kpart;
    RETURN;
  END IF;
  RETURN QUERY
  SELECT i.topic, p_kparts[i.ord],
         CASE WHEN q.id IS NULL OR COALESCE(q.kafka_partitions, 0) < 1
                OR p_kparts[i.ord] < 0 OR p_kparts[i.ord] >= q.kafka_partitions
              THEN 3 ELSE 0 END::smallint,
         COALESCE(o.committed_offset, -1), o.metadata
    FROM unnest(p_topics) WITH ORDINALITY AS i(topic, ord)
    LEFT JOIN queen.queues q ON q.tenant = p_tenant AND q.name = i.topic
    LEFT JOIN queen.kafka_group_offset o
           ON o.group_name = p_group AND o.queue_id = q.id AND o.kpart = p_kparts[i.ord]
   ORDER BY i.ord;
END
$$;
