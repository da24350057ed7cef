-- 0011_sqs_sweep.sql: upkeep of the SQS door's own rows (0005_sqs.sql;
-- functions in schema/functions/62_sqs.sql, docs/sqs.md).
--   The retention actor calls queen.sqs_sweep each tick: expired
--   sqs_dedup rows (past their 5-minute window) go by expires_at;
--   sqs_meta rows of messages that no longer exist, and sqs_receives rows
--   of messages that no longer exist or that the queue-mode cursor has
--   passed (deleted over SQS or acked natively), are found by walking each
--   table in seq order from a remembered position (sqs_sweep_pos), a
--   bounded batch per call, wrapping to the start at the end.
CREATE INDEX sqs_dedup_expires ON queen.sqs_dedup (expires_at);
CREATE INDEX sqs_meta_seq ON queen.sqs_meta (seq);
CREATE INDEX sqs_receives_seq ON queen.sqs_receives (seq);

CREATE TABLE queen.sqs_sweep_pos (
  id        int PRIMARY KEY CHECK (id = 1),
  meta_seq  bigint NOT NULL DEFAULT 0,
  recv_seq  bigint NOT NULL DEFAULT 0
);
INSERT INTO queen.sqs_sweep_pos (id) VALUES (1);
