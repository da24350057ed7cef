-- 0017_sqs_keys.sql: SQS access keys per tenant (docs/sqs.md "Access keys").
--   One row per access key: its secret (SigV4 needs the secret itself to
--   compute the signature, so it is stored as given, like AWS's own key
--   store: protect this table as you protect the database), the tenant the
--   key acts for ('' is the default tenant), whether it is enabled, and
--   when it was created and disabled. Keys of SQS_CREDENTIALS are not here:
--   they stay on the default tenant. Functions in functions/62_sqs.sql.
CREATE TABLE queen.sqs_keys (
  access_key_id  text PRIMARY KEY
                 CHECK (access_key_id ~ '^[A-Za-z0-9._-]{1,128}$'),
  secret         text NOT NULL CHECK (length(secret) BETWEEN 1 AND 128),
  tenant         text NOT NULL DEFAULT ''
                 CHECK (tenant = '' OR tenant ~ '^[A-Za-z0-9._-]{1,64}$'),
  enabled        boolean NOT NULL DEFAULT true,
  created_at     timestamptz NOT NULL DEFAULT now(),
  disabled_at    timestamptz
);
CREATE INDEX sqs_keys_tenant ON queen.sqs_keys (tenant);
