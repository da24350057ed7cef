/*  actors/http/admin.h - what the files of the admin and read API share
    (actors/http/admin.c: the routes and the call of their functions,
    actors/http/admin_args.c: their arguments): the route spec and one
    request's SQL parameters. Not an API of the codec.
*/
#ifndef QN_ACTORS_HTTP_ADMIN_H
#define QN_ACTORS_HTTP_ADMIN_H

#include "actors/http/codec.h"
#include "wire/json_compact.h"

#include <stdbool.h>
#include <stdint.h>

#define QN_HA_MAX_ARGS      10
#define QN_HA_MAX_SQL       16      //  SQL parameters (an argument may bind two)
#define QN_HA_NAME_MAX      255     //  Names: queue, partition, group (spec 1.9)
#define QN_HA_TEXT_MAX      255     //  transactionId, enum values
#define QN_HA_MAX_IDS       10000
#define QN_HA_LIMIT_MAX     10000
#define QN_HA_OFFSET_MAX    INT32_MAX

typedef enum {
    QN_HA_PATH = 0,             //  Path parameter `index`
    QN_HA_QUERY,                //  Query parameter; empty = absent (spec 1.5)
    QN_HA_BODY,                 //  Member of the JSON body object; null = absent
    QN_HA_ANY                   //  Query parameter, else body member
} qn_ha_src_t;

typedef enum {
    QN_HA_NAME = 1,             //  <= 255 bytes of UTF-8                -> text
    QN_HA_INT,                  //  integer in [min, max]                -> int
    QN_HA_BOOL,                 //  boolean                              -> bool
    QN_HA_TS,                   //  ISO-8601 timestamp                   -> timestamptz
    QN_HA_TS_SENT,              //  timestamp: text as sent, and parsed  -> text, timestamptz
    QN_HA_ENUM,                 //  one of `choices` ("a|b")             -> text
    QN_HA_PARTITION_ID,         //  partition UUID (-1: not one of ours) -> bigint
    QN_HA_TXN,                  //  transactionId, and its seq when it
                                //  is a message id                      -> text, bigint
    QN_HA_IDS,                  //  message / dead-letter ids            -> bigint[], bigint[]
    QN_HA_OFFSET,               //  message id or offset number          -> bigint
    QN_HA_CONST                 //  the fixed text `choices`             -> text
} qn_ha_type_t;

typedef struct {
    qn_ha_type_t type;
    qn_ha_src_t src;
    const char *name;           //  Query / body key; the path parameter's name
    int index;                  //  QN_HA_PATH: parameter index
    bool required;
    int64_t min, max;           //  QN_HA_INT bounds; QN_HA_NAME: max bytes when > 0 (else 255)
    const char *dflt;           //  Value when absent ("200", "true", "hour"); NULL = SQL NULL
    const char *choices;        //  QN_HA_ENUM choices; QN_HA_CONST value
    const char *missing;        //  Error when required and absent
} qn_ha_arg_t;

typedef enum { QN_HA_NO_BODY = 0, QN_HA_BODY_OPTIONAL, QN_HA_BODY_REQUIRED } qn_ha_body_t;

//  Rewrites a 200 body in place before it is sent (e.g. decryption).
typedef void (qn_ha_post_fn) (qn_codec_t *codec, qn_buf_t *body);

typedef struct {
    const char *fn;             //  queen.<fn> (p_tenant, args...)
    bool write;                 //  pg_writer, else pg_reader
    qn_ha_body_t body;
    int wake;                   //  1 + index of the argument naming the queue
                                //  to wake after a 2xx answer; 0 = none
    int group;                  //  QN_MESH_GROUP_* to publish after a 2xx answer
                                //  (argument 0 names the group); 0 = none
    qn_ha_post_fn *post;        //  Or NULL
    qn_ha_arg_t args [QN_HA_MAX_ARGS];
} qn_ha_api_t;

//  One request's SQL parameters, built from the arguments.
typedef struct {
    char *vals [QN_HA_MAX_SQL]; //  Owned; NULL = SQL NULL
    const char *casts [QN_HA_MAX_SQL];
    int n;
    char *wake_queue;           //  Owned copy of the queue to wake, or NULL
    char *group;                //  Owned copy of the group of a group hint, or NULL
} qn_ha_req_t;

//  Appends one SQL parameter (a copy of val, or SQL NULL) with its cast.
void qn_ha_emit (qn_ha_req_t *req, const char *val, size_t len, const char *cast);

//  Frees what the request's parameters own.
void qn_ha_req_free (qn_ha_req_t *req);

//  Validates one argument and appends its SQL parameter(s). Returns 0, or
//  -1 after answering 400.
int qn_ha_arg (qn_http_ctx_t *ctx, qn_ha_req_t *req, const qn_ha_arg_t *arg, const qn_json_doc_t *doc, qn_buf_t *tmp);

#endif
