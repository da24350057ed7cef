-- 0021_push_sqs.sql: no table changes. SQS sends became items of the push
-- operation (queen.push_sqs, schema/functions/63_sqs_push.sql); this number
-- orders the builds (docs/storage.md, "Rolling upgrades"), so an older
-- broker never re-installs a function set without queen.push_sqs.
-- (0020 was used once on a branch and withdrawn: never reuse it.)
SELECT 1;
