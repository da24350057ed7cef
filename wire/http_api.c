/*  wire/http_api.c - HTTP/1.1 request framing over llhttp, response serialiser
    Feeds bytes through llhttp (all lenient flags off) and collects one
    request at a time into storage the parser owns. llhttp is paused at two
    points of every request: when the headers are complete, so we know
    exactly where the head ends (for the 431 limit, the 413 check and
    100-continue), and when the message is complete, so pipelined bytes
    after it stay unconsumed. Between requests llhttp is re-initialised.

    Besides llhttp's own checks, every byte that frames the message (request
    line, headers, chunk-size lines, trailers; everything but body data) is
    checked here: CR only before LF, LF only after CR, no NUL, no obs-fold.
    llhttp 8.1 accepts a bare LF in some places; a front proxy might not, so
    we refuse it rather than let the two disagree about where a request ends.

    Pure: no sockets, threads or logging. Fails by returning QN_HTTP_ERROR
    with a status and a short text; the error is sticky until _next.
*/
#include "wire/http_api.h"

#include <llhttp.h>
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    S_IDLE,                     //  Between requests (leading CRLFs allowed)
    S_HEAD,                     //  Request line and headers
    S_BODY,                     //  Headers done: body, chunk framing, trailers
    S_READY,                    //  A complete request waits for _next
    S_ERROR                     //  Sticky until _next
} state_t;

typedef enum {
    PAUSE_NONE,
    PAUSE_HEADERS,              //  llhttp paused in on_headers_complete
    PAUSE_MESSAGE               //  llhttp paused in on_message_complete
} pause_t;

//  A header while it is parsed: offsets, because head moves as it grows
typedef struct {
    size_t name_off;
    size_t name_len;
    size_t value_off;
    size_t value_len;
} span_t;

//  Header arrays larger than this are released by _next
#define S_KEEP_HEADERS  32

struct _qn_http_parser_t {
    llhttp_t llhttp;            //  Owned; data points back to us
    qn_http_limits_t limits;    //  Copied, defaults filled in
    qn_http_request_t request;  //  Owned storage of the current request
    state_t state;
    pause_t pause;              //  Why the last llhttp_execute paused
    span_t *spans;              //  Owned, span_cap entries
    uint32_t span_cap;
    uint32_t span_count;        //  Headers parsed so far
    uint32_t headers_cap;       //  Entries allocated in request.headers
    bool in_field;              //  Inside a header name (llhttp may split it)
    size_t field_len;           //  Length of that name so far
    bool continue_due;          //  Report QN_HTTP_CONTINUE at the headers pause
    size_t head_bytes;          //  Request line + headers bytes so far
    size_t trailer_bytes;       //  Trailer names + values so far
    uint32_t trailer_count;
    const char *scan_from;      //  Framing bytes from here are not checked yet
    char scan_prev;             //  Last framing byte checked
    int error_status;           //  0, or the HTTP status of the error
    const char *error_text;     //  Static string
};

static int s_on_message_begin (llhttp_t *llhttp);
static int s_on_url (llhttp_t *llhttp, const char *at, size_t len);
static int s_on_header_field (llhttp_t *llhttp, const char *at, size_t len);
static int s_on_header_field_complete (llhttp_t *llhttp);
static int s_on_header_value (llhttp_t *llhttp, const char *at, size_t len);
static int s_on_header_value_complete (llhttp_t *llhttp);
static int s_on_headers_complete (llhttp_t *llhttp);
static int s_on_chunk_header (llhttp_t *llhttp);
static int s_on_body (llhttp_t *llhttp, const char *at, size_t len);
static int s_on_message_complete (llhttp_t *llhttp);

static const llhttp_settings_t s_settings = {
    .on_message_begin = s_on_message_begin,
    .on_url = s_on_url,
    .on_header_field = s_on_header_field,
    .on_header_field_complete = s_on_header_field_complete,
    .on_header_value = s_on_header_value,
    .on_header_value_complete = s_on_header_value_complete,
    .on_headers_complete = s_on_headers_complete,
    .on_chunk_header = s_on_chunk_header,
    .on_body = s_on_body,
    .on_message_complete = s_on_message_complete
};

//  Records the first error; returns -1 so llhttp stops (HPE_USER or
//  HPE_CB_*), and the feed loop reports the status recorded here.
static int
s_fail (qn_http_parser_t *self, int status, const char *text)
{
    if (self->error_status == 0) {
        self->error_status = status;
        self->error_text = text;
    }
    return -1;
}

//  ASCII case-insensitive comparison of two byte strings.
static bool
s_ieq (const char *a, size_t a_len, const char *b, size_t b_len)
{
    if (a_len != b_len)
        return false;
    for (size_t i = 0; i < a_len; i++) {
        char ca = a [i] >= 'A' && a [i] <= 'Z'? a [i] + 32: a [i];
        char cb = b [i] >= 'A' && b [i] <= 'Z'? b [i] + 32: b [i];
        if (ca != cb)
            return false;
    }
    return true;
}

//  Checks bytes that frame the message: a CR must be followed by LF, an LF
//  preceded by CR, no NUL, and no line may start with SP or HT (obs-fold).
//  Carries the last byte across calls so a CRLF may be split between feeds.
static bool
s_framing_ok (qn_http_parser_t *self, const char *from, const char *to)
{
    char prev = self->scan_prev;
    for (const char *c = from; c < to; c++) {
        if (*c == 0
        ||  (prev == '\r') != (*c == '\n')
        ||  (prev == '\n' && (*c == ' ' || *c == '\t')))
            return false;
        prev = *c;
    }
    self->scan_prev = prev;
    return true;
}

//  RFC 9110 tchar: the bytes a header name may contain
static bool
s_is_tchar (char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return c && strchr ("!#$%&'*+-.^_`|~", c) != NULL;
}

static int
s_on_message_begin (llhttp_t *llhttp)
{
    qn_http_parser_t *self = llhttp->data;
    self->state = S_HEAD;
    return 0;
}

static int
s_on_url (llhttp_t *llhttp, const char *at, size_t len)
{
    qn_http_parser_t *self = llhttp->data;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char) at [i] < 0x20 || at [i] == 0x7f)
            return s_fail (self, 400, "bad request target");
    qn_buf_append (&self->request.target, at, len);
    return 0;
}

//  Trailers (after the headers) are counted against the limits, not kept.
static int
s_on_trailer (qn_http_parser_t *self, size_t len, bool new_field)
{
    self->trailer_bytes += len;
    if (new_field && ++self->trailer_count > self->limits.max_headers)
        return s_fail (self, 431, "too many trailers");
    if (self->head_bytes + self->trailer_bytes > self->limits.max_header_bytes)
        return s_fail (self, 431, "trailers too large");
    return 0;
}

static int
s_on_header_field (llhttp_t *llhttp, const char *at, size_t len)
{
    qn_http_parser_t *self = llhttp->data;
    //  llhttp 8.1 accepts a space inside a name ("Bad Name: x")
    for (size_t i = 0; i < len; i++)
        if (!s_is_tchar (at [i]))
            return s_fail (self, 400, "bad header name");
    bool new_field = !self->in_field;
    self->in_field = true;
    self->field_len = new_field? len: self->field_len + len;
    if (self->state == S_BODY)
        return s_on_trailer (self, len, new_field);
    if (new_field) {
        if (self->span_count >= self->limits.max_headers)
            return s_fail (self, 431, "too many headers");
        if (self->span_count == self->span_cap) {
            self->span_cap = self->span_cap? self->span_cap * 2: 16;
            self->spans = qn_realloc (self->spans, self->span_cap * sizeof (span_t));
        }
        span_t *span = &self->spans [self->span_count];
        memset (span, 0, sizeof *span);
        span->name_off = self->request.head.len;
    }
    qn_buf_append (&self->request.head, at, len);
    self->spans [self->span_count].name_len += len;
    return 0;
}

//  Names and values are stored NUL-terminated, so callers may treat them
//  as C strings.
static int
s_on_header_field_complete (llhttp_t *llhttp)
{
    qn_http_parser_t *self = llhttp->data;
    bool empty = !self->in_field || self->field_len == 0;
    self->in_field = false;
    if (empty)
        return s_fail (self, 400, "bad header name");
    if (self->state == S_BODY)
        return 0;
    qn_buf_putc (&self->request.head, 0);
    self->spans [self->span_count].value_off = self->request.head.len;
    return 0;
}

static int
s_on_header_value (llhttp_t *llhttp, const char *at, size_t len)
{
    qn_http_parser_t *self = llhttp->data;
    //  llhttp refuses CR, LF and NUL already; a header injected into a
    //  value must never reach the application, so check again, and refuse
    //  the other control bytes too (RFC 9110 field-vchar; HTAB is allowed)
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char) at [i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return s_fail (self, 400, "bad header value");
    }
    if (self->state == S_BODY)
        return s_on_trailer (self, len, false);
    qn_buf_append (&self->request.head, at, len);
    self->spans [self->span_count].value_len += len;
    return 0;
}

static int
s_on_header_value_complete (llhttp_t *llhttp)
{
    qn_http_parser_t *self = llhttp->data;
    if (self->state == S_BODY)
        return 0;
    span_t *span = &self->spans [self->span_count];
    qn_buf_putc (&self->request.head, 0);
    //  llhttp skips leading whitespace but keeps trailing whitespace
    const char *value = self->request.head.data + span->value_off;
    while (span->value_len
    &&    (value [span->value_len - 1] == ' ' || value [span->value_len - 1] == '\t'))
        span->value_len--;
    self->request.head.data [span->value_off + span->value_len] = 0;
    self->span_count++;
    return 0;
}

static bool
s_method_served (uint8_t method)
{
    switch (method) {
        case HTTP_GET:
        case HTTP_HEAD:
        case HTTP_POST:
        case HTTP_PUT:
        case HTTP_DELETE:
        case HTTP_OPTIONS:
        case HTTP_PATCH:
            return true;
        default:
            return false;
    }
}

//  Turns header offsets into pointers, now that head will not move again.
static void
s_publish_headers (qn_http_parser_t *self)
{
    qn_http_request_t *req = &self->request;
    if (self->span_count > self->headers_cap) {
        self->headers_cap = self->span_cap;
        req->headers = qn_realloc (req->headers, self->headers_cap * sizeof (qn_http_header_t));
    }
    for (uint32_t i = 0; i < self->span_count; i++) {
        req->headers [i].name = req->head.data + self->spans [i].name_off;
        req->headers [i].name_len = self->spans [i].name_len;
        req->headers [i].value = req->head.data + self->spans [i].value_off;
        req->headers [i].value_len = self->spans [i].value_len;
    }
    req->header_count = self->span_count;
}

//  Only a single "chunked" coding is accepted: anything else is a coding
//  we cannot decode (501); chunked twice or an empty value is invalid (400).
static int
s_check_transfer_encoding (qn_http_parser_t *self)
{
    const qn_http_request_t *req = &self->request;
    uint32_t count = 0;
    for (uint32_t i = 0; i < req->header_count; i++) {
        const qn_http_header_t *h = &req->headers [i];
        if (!s_ieq (h->name, h->name_len, "transfer-encoding", 17))
            continue;
        if (h->value_len == 0)
            return s_fail (self, 400, "bad transfer-encoding");
        if (!s_ieq (h->value, h->value_len, "chunked", 7))
            return s_fail (self, 501, "unsupported transfer-encoding");
        count++;
    }
    if (count > 1)
        return s_fail (self, 400, "duplicate transfer-encoding");
    if (count && req->http_minor == 0)
        return s_fail (self, 400, "transfer-encoding in http/1.0");
    return 0;
}

//  Validates the head, then pauses llhttp so the feed loop learns exactly
//  where the head ends.
static int
s_on_headers_complete (llhttp_t *llhttp)
{
    qn_http_parser_t *self = llhttp->data;
    qn_http_request_t *req = &self->request;
    self->state = S_BODY;
    self->in_field = false;
    if (llhttp->http_major != 1 || llhttp->http_minor > 1)
        return s_fail (self, 400, "unsupported http version");
    if (!s_method_served (llhttp->method))
        return s_fail (self, 501, "method not implemented");
    snprintf (req->method, sizeof req->method, "%s", llhttp_method_name (llhttp->method));
    req->http_minor = llhttp->http_minor;
    s_publish_headers (self);
    if (s_check_transfer_encoding (self))
        return -1;
    if ((llhttp->flags & F_CONTENT_LENGTH)
    &&  llhttp->content_length > self->limits.max_body_bytes)
        return s_fail (self, 413, "body too large");

    const qn_http_header_t *expect = qn_http_request_header (req, "expect");
    req->expect_continue = req->http_minor >= 1 && expect
                        && s_ieq (expect->value, expect->value_len, "100-continue", 12);
    bool has_body = (llhttp->flags & F_CHUNKED) || llhttp->content_length > 0;
    self->continue_due = req->expect_continue && has_body;
    if (llhttp->flags & F_CONTENT_LENGTH) {
        //  Reserve what the client announced, but not more than an idle
        //  buffer may keep: a client must send bytes to make us hold them
        size_t reserve = (size_t) llhttp->content_length;
        qn_buf_reserve (&req->body, reserve < QN_HTTP_IDLE_KEEP_BYTES? reserve: QN_HTTP_IDLE_KEEP_BYTES);
    }
    //  We never switch protocols: an Upgrade request is served as HTTP/1.1
    llhttp->upgrade = 0;
    self->pause = PAUSE_HEADERS;
    return HPE_PAUSED;
}

//  llhttp stores the size of the chunk that starts in content_length.
static int
s_on_chunk_header (llhttp_t *llhttp)
{
    qn_http_parser_t *self = llhttp->data;
    if (llhttp->content_length > self->limits.max_body_bytes - self->request.body.len)
        return s_fail (self, 413, "body too large");
    return 0;
}

static int
s_on_body (llhttp_t *llhttp, const char *at, size_t len)
{
    qn_http_parser_t *self = llhttp->data;
    qn_http_request_t *req = &self->request;
    //  The chunk framing before this piece of body must be clean
    if (!s_framing_ok (self, self->scan_from, at))
        return s_fail (self, 400, "bad line ending");
    self->scan_from = at + len;
    self->scan_prev = 0;
    if (len > self->limits.max_body_bytes - req->body.len)
        return s_fail (self, 413, "body too large");
    qn_buf_append (&req->body, at, len);
    return 0;
}

static int
s_on_message_complete (llhttp_t *llhttp)
{
    qn_http_parser_t *self = llhttp->data;
    self->request.keep_alive = llhttp_should_keep_alive (llhttp) != 0;
    self->pause = PAUSE_MESSAGE;
    return HPE_PAUSED;
}

//  Releases a buffer that grew large, keeps a small one for reuse.
static void
s_shrink (qn_buf_t *buf)
{
    if (buf->cap > QN_HTTP_IDLE_KEEP_BYTES)
        qn_buf_free (buf);
    else
        qn_buf_reset (buf);
}

//  Releases the header arrays.
static void
s_free_headers (qn_http_parser_t *self)
{
    free (self->spans);
    self->spans = NULL;
    self->span_cap = 0;
    free (self->request.headers);
    self->request.headers = NULL;
    self->headers_cap = 0;
}

qn_http_parser_t *
qn_http_parser_new (const qn_http_limits_t *limits)
{
    qn_http_parser_t *self = qn_zalloc (sizeof *self);
    if (limits)
        self->limits = *limits;
    if (!self->limits.max_body_bytes)
        self->limits.max_body_bytes = QN_HTTP_DEFAULT_MAX_BODY_BYTES;
    if (!self->limits.max_header_bytes)
        self->limits.max_header_bytes = QN_HTTP_DEFAULT_MAX_HEADER_BYTES;
    if (!self->limits.max_headers)
        self->limits.max_headers = QN_HTTP_DEFAULT_MAX_HEADERS;
    qn_buf_init (&self->request.target);
    qn_buf_init (&self->request.head);
    qn_buf_init (&self->request.body);
    qn_http_parser_next (self);
    return self;
}

void
qn_http_parser_destroy (qn_http_parser_t **self_p)
{
    assert (self_p);
    qn_http_parser_t *self = *self_p;
    if (!self)
        return;
    qn_buf_free (&self->request.target);
    qn_buf_free (&self->request.head);
    qn_buf_free (&self->request.body);
    s_free_headers (self);
    free (self);
    *self_p = NULL;
}

//  Ends the feed with an error; the first recorded error wins.
static qn_http_rc_t
s_error (qn_http_parser_t *self, int status, const char *text)
{
    s_fail (self, status, text);
    self->state = S_ERROR;
    return QN_HTTP_ERROR;
}

//  Maps an llhttp error to a status, unless a callback recorded one.
static qn_http_rc_t
s_llhttp_error (qn_http_parser_t *self, llhttp_errno_t err)
{
    switch (err) {
        case HPE_PAUSED_H2_UPGRADE:
            return s_error (self, 501, "http/2 not supported");
        case HPE_INVALID_METHOD:
            return s_error (self, 400, "bad method");
        case HPE_INVALID_URL:
            return s_error (self, 400, "bad request target");
        case HPE_INVALID_CONSTANT:
        case HPE_INVALID_VERSION:
            return s_error (self, 400, "bad request line");
        case HPE_UNEXPECTED_CONTENT_LENGTH:
        case HPE_INVALID_CONTENT_LENGTH:
            return s_error (self, 400, "bad content-length");
        case HPE_INVALID_TRANSFER_ENCODING:
            return s_error (self, 400, "bad transfer-encoding");
        case HPE_INVALID_CHUNK_SIZE:
        case HPE_STRICT:
            return s_error (self, 400, "bad chunk");
        case HPE_CR_EXPECTED:
        case HPE_LF_EXPECTED:
            return s_error (self, 400, "bad line ending");
        case HPE_INVALID_HEADER_TOKEN:
        case HPE_UNEXPECTED_SPACE:
            return s_error (self, 400, "bad header");
        default:
            return s_error (self, 400, "malformed request");
    }
}

//  Runs llhttp over the input, slice by slice: while in the head, a slice
//  never goes past max_header_bytes. A pause at the end of the headers
//  resumes at once (after reporting CONTINUE if due), and the next slice
//  runs even when empty, so a request without a body completes.
qn_http_rc_t
qn_http_parser_feed (qn_http_parser_t *self, const char *data, size_t len, size_t *consumed)
{
    assert (self);
    assert (consumed);
    *consumed = 0;
    if (self->state == S_ERROR)
        return QN_HTTP_ERROR;
    if (self->state == S_READY)
        return QN_HTTP_REQUEST;
    if (!data) {
        assert (len == 0);
        data = "";
    }
    size_t pos = 0;
    bool run_empty = false;
    while (pos < len || run_empty) {
        run_empty = false;
        size_t slice = len - pos;
        bool in_head = self->state == S_IDLE || self->state == S_HEAD;
        if (in_head) {
            size_t room = self->limits.max_header_bytes - self->head_bytes;
            if (room == 0)
                return s_error (self, 431, "request head too large");
            if (slice > room)
                slice = room;
        }
        const char *start = data + pos;
        self->scan_from = start;
        self->pause = PAUSE_NONE;
        llhttp_errno_t err = llhttp_execute (&self->llhttp, start, slice);
        const char *stop = start + slice;
        if (err == HPE_PAUSED && self->pause != PAUSE_NONE)
            stop = llhttp_get_error_pos (&self->llhttp);
        else
        if (err != HPE_OK)
            return s_llhttp_error (self, err);
        if (!s_framing_ok (self, self->scan_from, stop))
            return s_error (self, 400, "bad line ending");
        if (in_head)
            self->head_bytes += (size_t) (stop - start);
        pos = (size_t) (stop - data);
        *consumed = pos;
        if (self->pause == PAUSE_MESSAGE) {
            self->state = S_READY;
            return QN_HTTP_REQUEST;
        }
        if (self->pause == PAUSE_HEADERS) {
            llhttp_resume (&self->llhttp);
            run_empty = true;
            if (self->continue_due) {
                self->continue_due = false;
                return QN_HTTP_CONTINUE;
            }
        }
    }
    return QN_HTTP_NEED_MORE;
}

qn_http_request_t *
qn_http_parser_request (qn_http_parser_t *self)
{
    assert (self);
    return &self->request;
}

void
qn_http_request_take_body (qn_http_request_t *req, qn_buf_t *out)
{
    assert (req);
    assert (out);
    *out = req->body;
    qn_buf_init (&req->body);
}

void
qn_http_parser_next (qn_http_parser_t *self)
{
    assert (self);
    llhttp_init (&self->llhttp, HTTP_REQUEST, &s_settings);
    self->llhttp.data = self;
    qn_http_request_t *req = &self->request;
    s_shrink (&req->target);
    s_shrink (&req->head);
    s_shrink (&req->body);
    if (self->span_cap > S_KEEP_HEADERS)
        s_free_headers (self);
    memset (req->method, 0, sizeof req->method);
    req->header_count = 0;
    req->keep_alive = false;
    req->expect_continue = false;
    req->http_minor = 0;
    self->state = S_IDLE;
    self->pause = PAUSE_NONE;
    self->span_count = 0;
    self->in_field = false;
    self->field_len = 0;
    self->continue_due = false;
    self->head_bytes = 0;
    self->trailer_bytes = 0;
    self->trailer_count = 0;
    self->scan_from = NULL;
    self->scan_prev = 0;
    self->error_status = 0;
    self->error_text = NULL;
}

void
qn_http_parser_trim (qn_http_parser_t *self)
{
    assert (self);
    assert (self->state == S_IDLE);
    qn_buf_free (&self->request.target);
    qn_buf_free (&self->request.head);
    qn_buf_free (&self->request.body);
    s_free_headers (self);
}

int
qn_http_parser_error_status (qn_http_parser_t *self)
{
    assert (self);
    return self->error_status;
}

const char *
qn_http_parser_error (qn_http_parser_t *self)
{
    assert (self);
    return self->error_text? self->error_text: "";
}

bool
qn_http_parser_in_request (qn_http_parser_t *self)
{
    assert (self);
    return self->state == S_HEAD || self->state == S_BODY;
}

const qn_http_header_t *
qn_http_request_header (const qn_http_request_t *req, const char *name)
{
    assert (req);
    assert (name);
    size_t name_len = strlen (name);
    for (uint32_t i = 0; i < req->header_count; i++)
        if (s_ieq (req->headers [i].name, req->headers [i].name_len, name, name_len))
            return &req->headers [i];
    return NULL;
}

size_t
qn_http_parser_memory (qn_http_parser_t *self)
{
    assert (self);
    return sizeof *self
         + self->request.target.cap
         + self->request.head.cap
         + self->request.body.cap
         + self->span_cap * sizeof (span_t)
         + self->headers_cap * sizeof (qn_http_header_t);
}

//  ---------------------------------------------------------------------
//  Response serialiser

#define S_CORS_HEADERS \
    "Access-Control-Allow-Origin: *\r\n" \
    "Access-Control-Allow-Methods: GET, POST, PUT, DELETE, OPTIONS\r\n" \
    "Access-Control-Allow-Headers: Content-Type, Authorization\r\n" \
    "Access-Control-Max-Age: 86400\r\n"

const char *
qn_http_reason (int status)
{
    switch (status) {
        case 100: return "Continue";
        case 101: return "Switching Protocols";
        case 200: return "OK";
        case 201: return "Created";
        case 202: return "Accepted";
        case 203: return "Non-Authoritative Information";
        case 204: return "No Content";
        case 205: return "Reset Content";
        case 206: return "Partial Content";
        case 300: return "Multiple Choices";
        case 301: return "Moved Permanently";
        case 302: return "Found";
        case 303: return "See Other";
        case 304: return "Not Modified";
        case 307: return "Temporary Redirect";
        case 308: return "Permanent Redirect";
        case 400: return "Bad Request";
        case 401: return "Unauthorized";
        case 402: return "Payment Required";
        case 403: return "Forbidden";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 406: return "Not Acceptable";
        case 407: return "Proxy Authentication Required";
        case 408: return "Request Timeout";
        case 409: return "Conflict";
        case 410: return "Gone";
        case 411: return "Length Required";
        case 412: return "Precondition Failed";
        case 413: return "Payload Too Large";
        case 414: return "URI Too Long";
        case 415: return "Unsupported Media Type";
        case 416: return "Range Not Satisfiable";
        case 417: return "Expectation Failed";
        case 421: return "Misdirected Request";
        case 422: return "Unprocessable Entity";
        case 423: return "Locked";
        case 424: return "Failed Dependency";
        case 425: return "Too Early";
        case 426: return "Upgrade Required";
        case 428: return "Precondition Required";
        case 429: return "Too Many Requests";
        case 431: return "Request Header Fields Too Large";
        case 451: return "Unavailable For Legal Reasons";
        case 500: return "Internal Server Error";
        case 501: return "Not Implemented";
        case 502: return "Bad Gateway";
        case 503: return "Service Unavailable";
        case 504: return "Gateway Timeout";
        case 505: return "HTTP Version Not Supported";
        case 507: return "Insufficient Storage";
        default:  return "Unknown";
    }
}

void
qn_http_response (qn_buf_t *out, int status, const char *content_type,
                  const char *extra_headers, const char *body, size_t body_len,
                  bool keep_alive)
{
    assert (out);
    assert (status >= 100 && status <= 999);
    //  RFC 9110: 1xx, 204 and 304 responses never carry content
    bool has_body = status >= 200 && status != 204 && status != 304;
    size_t extra_len = extra_headers? strlen (extra_headers): 0;
    qn_buf_reserve (out, 320 + extra_len + (has_body? body_len: 0)
                         + (content_type? strlen (content_type): 0));
    //  By hand, not printf: every answer of the broker passes here.
    char num [24];
    size_t n = sizeof num;
    unsigned code = (unsigned) status;
    do
        num [--n] = (char) ('0' + code % 10);
    while ((code /= 10) && n);
    qn_buf_puts (out, "HTTP/1.1 ");
    qn_buf_append (out, num + n, sizeof num - n);
    qn_buf_putc (out, ' ');
    qn_buf_puts (out, qn_http_reason (status));
    qn_buf_puts (out, "\r\n");
    if (content_type) {
        qn_buf_puts (out, "Content-Type: ");
        qn_buf_puts (out, content_type);
        qn_buf_puts (out, "\r\n");
    }
    if (has_body) {
        size_t v = body_len;
        n = sizeof num;
        do
            num [--n] = (char) ('0' + v % 10);
        while ((v /= 10) && n);
        qn_buf_puts (out, "Content-Length: ");
        qn_buf_append (out, num + n, sizeof num - n);
        qn_buf_puts (out, "\r\n");
    }
    qn_buf_puts (out, S_CORS_HEADERS);
    qn_buf_puts (out, keep_alive? "Connection: keep-alive\r\n": "Connection: close\r\n");
    if (extra_len)
        qn_buf_append (out, extra_headers, extra_len);
    qn_buf_puts (out, "\r\n");
    if (has_body && body_len) {
        assert (body);
        qn_buf_append (out, body, body_len);
    }
}
