/*  wire/http_api.h - HTTP/1.1 request framing and response serialisation
    Pure codec over bytes: no sockets, threads or logging. The acceptor owns
    the socket and feeds what it reads; this file owns the llhttp state and
    the storage of the request being parsed (target, header block, body).

    Framing is strict so that request smuggling is impossible: llhttp runs
    with every lenient flag off, and on top of it this codec rejects bare LF
    and CR, NUL and obs-fold line folding outside bodies, Transfer-Encoding
    other than a single "chunked" (501) or on HTTP/1.0 (400), HTTP versions
    other than 1.0/1.1, and methods we do not serve (501). Conflicting or
    duplicate Content-Length, CL together with TE, bad chunk sizes: 400.
    Upgrade headers are ignored (the request is served as plain HTTP/1.1).

    Known llhttp 8.1 limitation: a chunk extension with a value followed by
    another extension ("3;a=1;b\r\n") is rejected as a bad chunk size.
*/
#ifndef QN_WIRE_HTTP_API_H
#define QN_WIRE_HTTP_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

#define QN_HTTP_DEFAULT_MAX_BODY_BYTES      (16u * 1024 * 1024)
#define QN_HTTP_DEFAULT_MAX_HEADER_BYTES    (16u * 1024)
#define QN_HTTP_DEFAULT_MAX_HEADERS         100u
//  Buffers larger than this are released when the parser moves to the next
//  request, so idle keep-alive connections stay cheap.
#define QN_HTTP_IDLE_KEEP_BYTES             (64u * 1024)
//  What the caller writes after QN_HTTP_CONTINUE.
#define QN_HTTP_100_CONTINUE                "HTTP/1.1 100 Continue\r\n\r\n"

//  A zero field means "use the default" above.
typedef struct {
    size_t max_body_bytes;      //  413 beyond this (at headers when Content-Length
                                //  is known, and while receiving chunked bodies)
    size_t max_header_bytes;    //  431 beyond this (request line + headers + trailers)
    uint32_t max_headers;       //  431 beyond this count (headers, then trailers)
} qn_http_limits_t;

typedef struct {
    const char *name;           //  Not owned: points into the request's head
    size_t name_len;
    const char *value;          //  Not owned: points into the request's head;
    size_t value_len;           //  surrounding whitespace trimmed
} qn_http_header_t;

typedef struct {
    char method [16];           //  "GET", "POST", ...
    qn_buf_t target;            //  Owned: raw request target, e.g. "/api/v1/pop/queue/q?batch=10"
    qn_buf_t head;              //  Owned: storage for header names and values
    qn_http_header_t *headers;  //  Owned array, header_count entries
    uint32_t header_count;
    qn_buf_t body;              //  Owned: de-chunked body
    bool keep_alive;            //  Per HTTP/1.1 rules (Connection: close, HTTP/1.0 without keep-alive)
    bool expect_continue;       //  HTTP/1.1 request carried "Expect: 100-continue"
    int http_minor;             //  0 or 1
} qn_http_request_t;

typedef enum {
    QN_HTTP_NEED_MORE = 0,      //  All input consumed, no complete request yet
    QN_HTTP_REQUEST = 1,        //  A complete request is ready; bytes after it are NOT consumed
    QN_HTTP_CONTINUE = 2,       //  Headers complete with "Expect: 100-continue" and a body still
                                //  to come: write QN_HTTP_100_CONTINUE and feed the rest again
                                //  (reported once per request)
    QN_HTTP_ERROR = -1          //  Malformed or over a limit: reply with the error status, then close
} qn_http_rc_t;

typedef struct _qn_http_parser_t qn_http_parser_t;

//  Creates a request parser; limits may be NULL for the defaults. Never fails.
qn_http_parser_t *qn_http_parser_new (const qn_http_limits_t *limits);

//  Destroys the parser and everything it holds; takes NULL; sets *self_p to NULL.
void qn_http_parser_destroy (qn_http_parser_t **self_p);

//  Feeds bytes; *consumed says how many were used. With pipelined input,
//  returns QN_HTTP_REQUEST after the first complete request and leaves the
//  rest unconsumed: the caller handles the request, calls _next, then feeds
//  the rest. While a request is ready (before _next), feeding consumes
//  nothing and returns QN_HTTP_REQUEST again; after an error it consumes
//  nothing and returns QN_HTTP_ERROR again.
qn_http_rc_t qn_http_parser_feed (qn_http_parser_t *self, const char *data, size_t len,
                                  size_t *consumed);

//  The parsed request; complete only after QN_HTTP_REQUEST, until _next.
qn_http_request_t *qn_http_parser_request (qn_http_parser_t *self);

//  Moves the body buffer into *out (zero-copy hand-off to another thread);
//  *out is overwritten, not freed. The request's body is left empty.
void qn_http_request_take_body (qn_http_request_t *req, qn_buf_t *out);

//  Resets for the next request on the same connection and releases buffers
//  larger than QN_HTTP_IDLE_KEEP_BYTES. Also clears a sticky error.
void qn_http_parser_next (qn_http_parser_t *self);

//  Releases every buffer the parser holds. Call only between requests (when
//  _in_request is false and no request is waiting), e.g. on idle connections.
void qn_http_parser_trim (qn_http_parser_t *self);

//  After QN_HTTP_ERROR: 400, 413, 431 or 501; 0 when there is no error.
int qn_http_parser_error_status (qn_http_parser_t *self);

//  After QN_HTTP_ERROR: a short lowercase text, e.g. "duplicate content-length".
const char *qn_http_parser_error (qn_http_parser_t *self);

//  True while a request has started but is not complete (for slow-request
//  timeouts). False while idle, once a request is ready, and after an error.
bool qn_http_parser_in_request (qn_http_parser_t *self);

//  Case-insensitive header lookup; the first match, NULL if absent.
const qn_http_header_t *qn_http_request_header (const qn_http_request_t *req, const char *name);

//  Bytes currently held by the parser (for memory accounting).
size_t qn_http_parser_memory (qn_http_parser_t *self);

//  Appends a full HTTP/1.1 response to out: status line with the standard
//  reason phrase, Content-Type (if non-NULL), Content-Length, the CORS
//  headers, "Connection: close" or "Connection: keep-alive", extra_headers
//  (pre-formatted "Name: v\r\n" lines, may be NULL), a blank line, the body.
//  A 1xx, 204 or 304 carries no Content-Length and no body.
void qn_http_response (qn_buf_t *out, int status, const char *content_type,
                       const char *extra_headers, const char *body, size_t body_len,
                       bool keep_alive);

//  Standard reason phrase for a status code; "Unknown" for codes not listed.
const char *qn_http_reason (int status);

#endif
