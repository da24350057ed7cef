/*  wire/ids.h - identifiers and timestamps on the wire
    Internal ids are bigints; the HTTP contract speaks UUID strings. An id
    is encoded deterministically (storage.md §10) as
        0000000K-0000-8000-HHHH-HHHHHHHHHHHH
    where K is the kind and H the 16 hex digits of (2^63 | id): a version-8,
    RFC-variant UUID that decodes with no lookup and sorts like the id
    within a kind. queen.uuid_of() in SQL renders the same strings.
*/
#ifndef QN_WIRE_IDS_H
#define QN_WIRE_IDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    QN_ID_MESSAGE = 1,          //  id = seq
    QN_ID_PARTITION = 2,
    QN_ID_QUEUE = 3,
    QN_ID_GROUP = 4,
    QN_ID_DEAD_LETTER = 5
} qn_id_kind_t;

#define QN_ID_STR_LEN 36

//  Writes the 36-character form and a NUL into out.
void qn_id_format (qn_id_kind_t kind, int64_t id, char out [QN_ID_STR_LEN + 1]);
//  Decodes s (any case) if it is an id of `kind`: 0 and *id set, else -1.
int qn_id_parse (qn_id_kind_t kind, const char *s, size_t len, int64_t *id);
//  True if s is any canonical 8-4-4-4-12 hex UUID (any version).
bool qn_uuid_valid (const char *s, size_t len);
//  Random version-4 UUID (libsodium randomness).
void qn_uuid_v4 (char out [QN_ID_STR_LEN + 1]);
//  Time-ordered version-7 UUID for generated transaction ids.
void qn_uuid_v7 (char out [QN_ID_STR_LEN + 1]);

//  Timestamps, from microseconds since the Unix epoch (UTC):
//  ts-us "2026-05-16T08:41:27.123456Z", ts-ms "2026-05-16T08:41:27.123Z".
void qn_ts_us (int64_t us, char out [32]);
void qn_ts_ms (int64_t us, char out [32]);
//  Parses an ISO-8601 timestamp (date, optional time, fraction and zone:
//  Z, +hh:mm, +hhmm; no zone means UTC) into us since the epoch. 0 or -1.
int qn_ts_parse (const char *s, size_t len, int64_t *us);

#endif
