/*  actors/http/reply.c - the HTTP codec's answer and body helpers
    Error bodies, empty answers, the mapping of database errors to HTTP
    statuses and the parsing of JSON request bodies, all on
    qn_http_reply_raw (codec.c). Part of codec_http (actors/http/codec.h).
*/
#include "actors/http/codec.h"
#include "wire/json.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void
qn_http_reply_json (qn_http_ctx_t *ctx, int status, const char *json, size_t len)
{
    qn_http_reply_raw (ctx, status, "application/json", NULL, json, len);
}

void
qn_http_reply_error (qn_http_ctx_t *ctx, int status, const char *msg)
{
    qn_buf_t body = QN_BUF_INIT;
    qn_json_error_body (&body, msg);
    qn_http_reply_json (ctx, status, body.data, body.len);
    qn_buf_free (&body);
}

void
qn_http_reply_errorf (qn_http_ctx_t *ctx, int status, const char *fmt, ...)
{
    char msg [512];
    va_list ap;
    va_start (ap, fmt);
    vsnprintf (msg, sizeof msg, fmt, ap);
    va_end (ap);
    qn_http_reply_error (ctx, status, msg);
}

void
qn_http_reply_empty (qn_http_ctx_t *ctx, int status)
{
    qn_http_reply_raw (ctx, status, NULL, NULL, NULL, 0);
}

void
qn_http_reply_pg_error (qn_http_ctx_t *ctx, const qn_pg_result_t *res)
{
    const char *s = res->sqlstate;
    if (res->timed_out) {
        qn_http_reply_error (ctx, 503, "database did not answer in time");
        return;
    }
    //  Connection, resource and operator classes: the database is the
    //  problem, the client may retry. Data and integrity classes: the
    //  request is. Our own SQLSTATEs "QN4xx" carry the HTTP status.
    int status = 500;
    if (!strncmp (s, "08", 2) || !strncmp (s, "57", 2) || !strncmp (s, "53", 2))
        status = 503;
    else
    if (!strncmp (s, "22", 2) || !strncmp (s, "23", 2))
        status = 400;
    if (!strcmp (s, "23505") || !strncmp (s, "40", 2))
        status = 409;
    if (s [0] == 'Q' && s [1] == 'N' && s [2] == '4'
    &&  s [3] >= '0' && s [3] <= '9' && s [4] >= '0' && s [4] <= '9')
        status = 400 + (s [3] - '0') * 10 + (s [4] - '0');
    if (status == 500)
        qn_warn ("database error: sqlstate=%s message=%s", s, res->message ? res->message : "");
    qn_http_reply_error (ctx, status, res->message && res->message [0] ? res->message
                                                                        : "database error");
}

int
qn_http_parse_body (qn_http_ctx_t *ctx, qn_json_doc_t *doc)
{
    if (!ctx->body_len) {
        qn_http_reply_error (ctx, 400, "Empty request body");
        return -1;
    }
    if (qn_json_parse (doc, ctx->body, ctx->body_len, 64)) {
        qn_http_reply_errorf (ctx, 400, "Invalid JSON: %s", doc->err);
        return -1;
    }
    return 0;
}
