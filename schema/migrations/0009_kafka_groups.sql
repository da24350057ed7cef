-- 0009_kafka_groups.sql: Kafka consumer groups' committed offsets keep the
-- commit metadata byte for byte (spec kafka.md §4.12: it must round-trip
-- unchanged; a NUL or invalid UTF-8 cannot live in text). The table itself
-- came with 0004_kafka. A migration: applied once, recorded with its
-- checksum, never edited after a release.
ALTER TABLE queen.kafka_group_offset
  ALTER COLUMN metadata TYPE bytea USING convert_to(metadata, 'UTF8');
