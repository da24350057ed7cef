-- ---------------------------------------------------------------------------
-- lease extension (spec 3.13)
-- ---------------------------------------------------------------------------
-- Scoped by tenant: a lease of another tenant's partition is "not found".
-- p_tenant last, with a default: the previous catalogue calls renew($1, $2).
CREATE FUNCTION queen.renew(p_lease_id uuid, p_seconds int, p_tenant text DEFAULT '')
RETURNS TABLE(status text, expires_at timestamptz)
LANGUAGE plpgsql
-- generic plans: the statements are written to plan well without the parameter
-- values; custom plans would re-plan every call (~0.3 ms per statement that
-- touches the partitioned queen.messages). See docs/storage.md. No seq or
-- bitmap scans: a plan cached while the tables were nearly empty must not
-- walk every partition, ready or cursors row once they are large.
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_bitmapscan = off
AS $$
#variable_conflict use_column
DECLARE
  v_n   int;
  v_min timestamptz;
BEGIN
  -- L4 order (partition, group), like ack
  PERFORM 1 FROM queen.ready r WHERE r.lease_id = p_lease_id
     AND EXISTS (SELECT 1 FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
                  WHERE p.id = r.partition_id AND q.tenant = p_tenant)
   ORDER BY r.partition_id, r.group_id FOR UPDATE;
  WITH u AS (
    UPDATE queen.ready r
       SET avail_at = GREATEST(r.avail_at, now() + make_interval(secs => COALESCE(p_seconds, 60)))
     WHERE r.lease_id = p_lease_id AND r.avail_at > now()
       AND EXISTS (SELECT 1 FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
                    WHERE p.id = r.partition_id AND q.tenant = p_tenant)
    RETURNING r.avail_at)
  SELECT count(*), min(u.avail_at) INTO v_n, v_min FROM u;
  IF v_n > 0 THEN
    RETURN QUERY SELECT 'ok'::text, v_min;
  ELSIF EXISTS (SELECT 1 FROM queen.ready r WHERE r.lease_id = p_lease_id
                  AND EXISTS (SELECT 1 FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
                               WHERE p.id = r.partition_id AND q.tenant = p_tenant)) THEN
    RETURN QUERY SELECT 'Lease already expired'::text, NULL::timestamptz;
  ELSE
    RETURN QUERY SELECT 'Lease not found'::text, NULL::timestamptz;
  END IF;
END
$$;
