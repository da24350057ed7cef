/*  test/unit/test_wire_http.c - HTTP/1.1 request framing and responses
    Drives the parser the way the acceptor does: each read is fed from an
    exact-size heap block (so ASan catches a read past it), unconsumed bytes
    are fed again after _next. Pipelined and chunked inputs are split at
    every offset and fed byte by byte; the requests must come out the same.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "wire/http_api.h"

#define S_MAX_GOT  8

//  What the driver saw of one request; strings are owned copies
typedef struct {
    char method [16];
    char *target;
    char *body;
    size_t body_len;
    bool keep_alive;
    bool expect_continue;
    int http_minor;
    uint32_t header_count;
    char *host;                 //  Value of the Host header, or NULL
} got_t;

//  Outcome of feeding one input
typedef struct {
    got_t got [S_MAX_GOT];
    size_t count;               //  Requests completed
    int continues;              //  QN_HTTP_CONTINUE seen
    int error_status;           //  0 when no error
    bool idle_at_end;           //  Everything consumed, no request pending
} run_t;

static void
s_run_free (run_t *run)
{
    for (size_t i = 0; i < run->count; i++) {
        free (run->got [i].target);
        free (run->got [i].body);
        free (run->got [i].host);
    }
    memset (run, 0, sizeof *run);
}

static void
s_record (run_t *run, qn_http_parser_t *parser)
{
    assert_true (run->count < S_MAX_GOT);
    qn_http_request_t *req = qn_http_parser_request (parser);
    got_t *got = &run->got [run->count++];
    memcpy (got->method, req->method, sizeof got->method);
    got->target = qn_strndup (req->target.data, req->target.len);
    got->body = qn_strndup (req->body.data, req->body.len);
    got->body_len = req->body.len;
    got->keep_alive = req->keep_alive;
    got->expect_continue = req->expect_continue;
    got->http_minor = req->http_minor;
    got->header_count = req->header_count;
    const qn_http_header_t *host = qn_http_request_header (req, "host");
    got->host = host? qn_strndup (host->value, host->value_len): NULL;
}

//  Feeds one read from an exact-size copy, handling every request in it.
//  Returns false once the parser reported an error.
static bool
s_feed_read (qn_http_parser_t *parser, const char *data, size_t len, run_t *run)
{
    char *copy = qn_malloc (len);
    if (len)
        memcpy (copy, data, len);
    size_t offset = 0;
    bool ok = true;
    while (true) {
        size_t consumed = 12345;
        qn_http_rc_t rc = qn_http_parser_feed (parser, copy + offset, len - offset, &consumed);
        assert_true (consumed <= len - offset);
        offset += consumed;
        if (rc == QN_HTTP_REQUEST) {
            assert_false (qn_http_parser_in_request (parser));
            s_record (run, parser);
            qn_http_parser_next (parser);
        }
        else
        if (rc == QN_HTTP_CONTINUE)
            run->continues++;
        else
        if (rc == QN_HTTP_NEED_MORE) {
            assert_int_equal (offset, len);
            break;
        }
        else {
            assert_int_equal (rc, QN_HTTP_ERROR);
            run->error_status = qn_http_parser_error_status (parser);
            assert_true (strlen (qn_http_parser_error (parser)) > 0);
            assert_false (qn_http_parser_in_request (parser));
            ok = false;
            break;
        }
    }
    free (copy);
    return ok;
}

//  Feeds input cut at `cut` (one read before it, one after; cut 0 or len
//  means one read), or byte by byte when bytewise.
static void
s_run (const qn_http_limits_t *limits, const char *input, size_t len, size_t cut,
       bool bytewise, run_t *run)
{
    memset (run, 0, sizeof *run);
    qn_http_parser_t *parser = qn_http_parser_new (limits);
    if (bytewise) {
        for (size_t i = 0; i < len; i++)
            if (!s_feed_read (parser, input + i, 1, run))
                break;
    }
    else
    if (s_feed_read (parser, input, cut, run))
        s_feed_read (parser, input + cut, len - cut, run);
    run->idle_at_end = run->error_status == 0 && !qn_http_parser_in_request (parser);
    qn_http_parser_destroy (&parser);
    assert_null (parser);
}

static void
s_assert_same_run (const run_t *a, const run_t *b)
{
    assert_int_equal (a->count, b->count);
    assert_int_equal (a->continues, b->continues);
    assert_int_equal (a->error_status, b->error_status);
    assert_int_equal (a->idle_at_end, b->idle_at_end);
    for (size_t i = 0; i < a->count; i++) {
        assert_string_equal (a->got [i].method, b->got [i].method);
        assert_string_equal (a->got [i].target, b->got [i].target);
        assert_int_equal (a->got [i].body_len, b->got [i].body_len);
        assert_memory_equal (a->got [i].body, b->got [i].body, a->got [i].body_len);
        assert_int_equal (a->got [i].keep_alive, b->got [i].keep_alive);
        assert_int_equal (a->got [i].header_count, b->got [i].header_count);
        if (a->got [i].host)
            assert_string_equal (a->got [i].host, b->got [i].host);
        else
            assert_null (b->got [i].host);
    }
}

//  Runs input whole into `whole`, then checks that every split and a
//  byte-by-byte feed give the same result.
static void
s_run_everywhere (const qn_http_limits_t *limits, const char *input, run_t *whole)
{
    size_t len = strlen (input);
    s_run (limits, input, len, len, false, whole);
    for (size_t cut = 0; cut <= len; cut++) {
        run_t split;
        s_run (limits, input, len, cut, false, &split);
        s_assert_same_run (whole, &split);
        s_run_free (&split);
    }
    run_t bytewise;
    s_run (limits, input, len, 0, true, &bytewise);
    s_assert_same_run (whole, &bytewise);
    s_run_free (&bytewise);
}

//  Expects input to fail with `status` and no request, whole and byte by
//  byte; names the input when it does not.
static void
s_assert_error (const qn_http_limits_t *limits, const char *input, size_t len, int status)
{
    for (int bytewise = 0; bytewise < 2; bytewise++) {
        run_t run;
        s_run (limits, input, len, bytewise? 0: len, bytewise, &run);
        if (run.error_status != status || run.count != 0) {
            print_error ("input \"%.*s\" (%s): status %d, %zu requests; expected %d\n",
                         (int) len, input, bytewise? "bytewise": "whole",
                         run.error_status, run.count, status);
            fail ();
        }
        s_run_free (&run);
    }
}

//  ---------------------------------------------------------------------

static void
test_http_simple_get (void **state)
{
    (void) state;
    const char *input = "GET /api/v1/pop/queue/q?batch=10 HTTP/1.1\r\n"
                        "Host: localhost:6632\r\n"
                        "User-Agent: test  \r\n"
                        "X-Empty:\r\n"
                        "ACCEPT:\t*/*\r\n"
                        "X-Token_1!#$%&'*+-.^`|~: a\tb \x80\xff\r\n"
                        "\r\n";
    qn_http_parser_t *parser = qn_http_parser_new (NULL);
    assert_false (qn_http_parser_in_request (parser));
    size_t len = strlen (input);
    char *copy = qn_malloc (len);
    memcpy (copy, input, len);
    size_t consumed;
    assert_int_equal (qn_http_parser_feed (parser, copy, len, &consumed), QN_HTTP_REQUEST);
    assert_int_equal (consumed, len);

    qn_http_request_t *req = qn_http_parser_request (parser);
    assert_string_equal (req->method, "GET");
    assert_int_equal (req->target.len, strlen ("/api/v1/pop/queue/q?batch=10"));
    assert_string_equal (req->target.data, "/api/v1/pop/queue/q?batch=10");
    assert_int_equal (req->http_minor, 1);
    assert_true (req->keep_alive);
    assert_false (req->expect_continue);
    assert_int_equal (req->body.len, 0);
    assert_int_equal (req->header_count, 5);
    assert_int_equal (req->headers [0].name_len, 4);
    assert_memory_equal (req->headers [0].name, "Host", 4);

    const qn_http_header_t *h = qn_http_request_header (req, "user-agent");
    assert_non_null (h);
    assert_int_equal (h->value_len, 4);             //  trailing whitespace trimmed
    assert_string_equal (h->value, "test");         //  and NUL-terminated
    h = qn_http_request_header (req, "x-empty");
    assert_non_null (h);
    assert_int_equal (h->value_len, 0);
    assert_string_equal (h->value, "");
    h = qn_http_request_header (req, "Accept");
    assert_non_null (h);
    assert_string_equal (h->value, "*/*");
    h = qn_http_request_header (req, "x-token_1!#$%&'*+-.^`|~");
    assert_non_null (h);
    assert_string_equal (h->value, "a\tb \x80\xff");       //  HTAB and obs-text are fine
    assert_null (qn_http_request_header (req, "content-length"));
    assert_null (qn_http_request_header (req, "hos"));

    //  Until _next, the request stays ready and nothing more is consumed
    assert_int_equal (qn_http_parser_feed (parser, copy, len, &consumed), QN_HTTP_REQUEST);
    assert_int_equal (consumed, 0);
    qn_http_parser_next (parser);
    assert_int_equal (qn_http_parser_feed (parser, NULL, 0, &consumed), QN_HTTP_NEED_MORE);
    assert_int_equal (consumed, 0);
    free (copy);
    qn_http_parser_destroy (&parser);
    qn_http_parser_destroy (&parser);               //  takes NULL
}

static void
test_http_post_content_length (void **state)
{
    (void) state;
    run_t run;
    s_run_everywhere (NULL, "POST /api/v1/push HTTP/1.1\r\n"
                            "Host: h\r\n"
                            "Content-Type: application/json\r\n"
                            "Content-Length: 27\r\n"
                            "\r\n"
                            "{\"items\":[{\"q\":\"a\\r\\n\"}]}\r\n", &run);
    assert_int_equal (run.count, 1);
    assert_string_equal (run.got [0].method, "POST");
    assert_int_equal (run.got [0].body_len, 27);
    assert_string_equal (run.got [0].body, "{\"items\":[{\"q\":\"a\\r\\n\"}]}\r\n");
    assert_true (run.idle_at_end);
    s_run_free (&run);
}

static void
test_http_keep_alive (void **state)
{
    (void) state;
    struct {
        const char *input;
        bool keep_alive;
        int http_minor;
    } cases [] = {
        { "GET / HTTP/1.1\r\n\r\n", true, 1 },
        { "GET / HTTP/1.1\r\nConnection: close\r\n\r\n", false, 1 },
        { "GET / HTTP/1.1\r\nConnection: Keep-Alive, Close\r\n\r\n", false, 1 },
        { "GET / HTTP/1.0\r\n\r\n", false, 0 },
        { "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true, 0 },
        { "POST / HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx", true, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        run_t run;
        s_run (NULL, cases [i].input, strlen (cases [i].input), strlen (cases [i].input), false, &run);
        assert_int_equal (run.count, 1);
        assert_int_equal (run.got [0].keep_alive, cases [i].keep_alive);
        assert_int_equal (run.got [0].http_minor, cases [i].http_minor);
        s_run_free (&run);
    }
}

static void
test_http_pipelined_two (void **state)
{
    (void) state;
    run_t run;
    s_run_everywhere (NULL, "GET /first HTTP/1.1\r\nHost: a\r\n\r\n"
                            "POST /second HTTP/1.1\r\nHost: b\r\nContent-Length: 5\r\n\r\nhello", &run);
    assert_int_equal (run.count, 2);
    assert_string_equal (run.got [0].target, "/first");
    assert_string_equal (run.got [0].host, "a");
    assert_int_equal (run.got [0].body_len, 0);
    assert_string_equal (run.got [1].target, "/second");
    assert_string_equal (run.got [1].host, "b");
    assert_string_equal (run.got [1].body, "hello");
    assert_true (run.idle_at_end);
    s_run_free (&run);
}

static void
test_http_pipelined_three (void **state)
{
    (void) state;
    run_t run;
    s_run_everywhere (NULL, "POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
                            "POST /b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                            "4\r\nwiki\r\n5\r\npedia\r\n0\r\n\r\n"
                            "\r\n"              //  a stray CRLF between requests is allowed
                            "DELETE /c?x=1 HTTP/1.1\r\nConnection: close\r\n\r\n", &run);
    assert_int_equal (run.count, 3);
    assert_string_equal (run.got [0].method, "POST");
    assert_string_equal (run.got [0].body, "abc");
    assert_string_equal (run.got [1].target, "/b");
    assert_int_equal (run.got [1].body_len, 9);
    assert_string_equal (run.got [1].body, "wikipedia");
    assert_true (run.got [1].keep_alive);
    assert_string_equal (run.got [2].method, "DELETE");
    assert_string_equal (run.got [2].target, "/c?x=1");
    assert_false (run.got [2].keep_alive);
    s_run_free (&run);
}

static void
test_http_chunked_extensions_trailers (void **state)
{
    (void) state;
    run_t run;
    s_run_everywhere (NULL, "POST /chunked HTTP/1.1\r\n"
                            "Host: h\r\n"
                            "Transfer-Encoding: Chunked\r\n"
                            "Trailer: X-Checksum\r\n"
                            "\r\n"
                            "5;name=value\r\nhello\r\n"
                            "1;a;b\r\n \r\n"
                            "A;q=\"quoted; x\"\r\nworld\r\n!!!\r\n"
                            "0;last\r\n"
                            "X-Checksum: abc\t\r\n"
                            "X-Other: 1\r\n"
                            "\r\n"
                            "GET /after HTTP/1.1\r\n\r\n", &run);
    assert_int_equal (run.count, 2);
    assert_int_equal (run.got [0].body_len, 16);
    assert_string_equal (run.got [0].body, "hello world\r\n!!!");
    assert_int_equal (run.got [0].header_count, 3);     //  trailers are not headers
    assert_string_equal (run.got [1].target, "/after");
    s_run_free (&run);
}

static void
test_http_expect_continue (void **state)
{
    (void) state;
    const char *head = "PUT /up HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 4\r\n\r\n";
    qn_http_parser_t *parser = qn_http_parser_new (NULL);
    size_t consumed;
    assert_int_equal (qn_http_parser_feed (parser, head, strlen (head), &consumed), QN_HTTP_CONTINUE);
    assert_int_equal (consumed, strlen (head));
    assert_true (qn_http_parser_in_request (parser));
    assert_true (qn_http_parser_request (parser)->expect_continue);
    assert_int_equal (qn_http_parser_feed (parser, "ab", 2, &consumed), QN_HTTP_NEED_MORE);
    assert_int_equal (consumed, 2);
    assert_int_equal (qn_http_parser_feed (parser, "cd", 2, &consumed), QN_HTTP_REQUEST);
    assert_string_equal (qn_http_parser_request (parser)->body.data, "abcd");
    qn_http_parser_destroy (&parser);

    //  Body sent along with the head: CONTINUE still comes once, first
    run_t run;
    s_run_everywhere (NULL, "POST /a HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\nbody"
                            "POST /b HTTP/1.1\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n"
                            "2\r\nhi\r\n0\r\n\r\n", &run);
    assert_int_equal (run.count, 2);
    assert_int_equal (run.continues, 2);
    assert_true (run.got [0].expect_continue);
    assert_string_equal (run.got [0].body, "body");
    assert_string_equal (run.got [1].body, "hi");
    s_run_free (&run);

    //  No body to come, or HTTP/1.0: no CONTINUE
    const char *no_continue [] = {
        "POST /a HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n",
        "GET /a HTTP/1.1\r\nExpect: 100-continue\r\n\r\n",
        "POST /a HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx",
        "POST /a HTTP/1.1\r\nExpect: something-else\r\nContent-Length: 1\r\n\r\nx",
    };
    for (size_t i = 0; i < sizeof no_continue / sizeof no_continue [0]; i++) {
        s_run (NULL, no_continue [i], strlen (no_continue [i]), strlen (no_continue [i]), false, &run);
        assert_int_equal (run.count, 1);
        assert_int_equal (run.continues, 0);
        s_run_free (&run);
    }
}

static void
test_http_body_limit (void **state)
{
    (void) state;
    qn_http_limits_t limits = { .max_body_bytes = 10 };
    //  Refused at the headers, before any body byte arrives
    const char *head = "POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 11\r\n\r\n";
    s_assert_error (&limits, head, strlen (head), 413);

    run_t run;
    const char *at_limit = "POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789";
    s_run (&limits, at_limit, strlen (at_limit), 0, false, &run);
    assert_int_equal (run.count, 1);
    s_run_free (&run);

    //  Chunked: refused once the chunks add up past the limit
    const char *chunked = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                          "6\r\n012345\r\n5\r\n67890\r\n0\r\n\r\n";
    s_assert_error (&limits, chunked, strlen (chunked), 413);
    const char *huge_chunk = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nfffffff\r\n";
    s_assert_error (&limits, huge_chunk, strlen (huge_chunk), 413);
    const char *chunked_ok = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                             "6\r\n012345\r\n4\r\n6789\r\n0\r\n\r\n";
    s_run_everywhere (&limits, chunked_ok, &run);
    assert_int_equal (run.count, 1);
    assert_string_equal (run.got [0].body, "0123456789");
    s_run_free (&run);
}

static void
test_http_header_limits (void **state)
{
    (void) state;
    qn_http_limits_t limits = { .max_headers = 3, .max_header_bytes = 64 };
    const char *three = "GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";
    run_t run;
    s_run_everywhere (&limits, three, &run);
    assert_int_equal (run.count, 1);
    assert_int_equal (run.got [0].header_count, 3);
    s_run_free (&run);
    const char *four = "GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n";
    s_assert_error (&limits, four, strlen (four), 431);

    //  Exactly max_header_bytes is fine, one more is not
    qn_buf_t input = QN_BUF_INIT;
    qn_buf_puts (&input, "GET / HTTP/1.1\r\nX: ");
    while (input.len < 64 - 4)
        qn_buf_putc (&input, 'v');
    qn_buf_puts (&input, "\r\n\r\n");
    assert_int_equal (input.len, 64);
    s_run_everywhere (&limits, input.data, &run);
    assert_int_equal (run.count, 1);
    s_run_free (&run);
    qn_buf_reset (&input);
    qn_buf_puts (&input, "GET / HTTP/1.1\r\nX: ");
    while (input.len < 64 - 3)
        qn_buf_putc (&input, 'v');
    qn_buf_puts (&input, "\r\n\r\n");
    s_assert_error (&limits, input.data, input.len, 431);

    //  A head that never ends, whitespace that llhttp skips included
    qn_buf_reset (&input);
    qn_buf_puts (&input, "GET / HTTP/1.1\r\nX:");
    for (int i = 0; i < 200; i++)
        qn_buf_putc (&input, ' ');
    s_assert_error (&limits, input.data, input.len, 431);
    qn_buf_free (&input);

    //  Defaults: 100 headers of 16 KiB in all
    qn_buf_t many = QN_BUF_INIT;
    qn_buf_puts (&many, "GET / HTTP/1.1\r\n");
    for (int i = 0; i < 101; i++)
        qn_buf_printf (&many, "H%d: v\r\n", i);
    qn_buf_puts (&many, "\r\n");
    s_assert_error (NULL, many.data, many.len, 431);
    qn_buf_reset (&many);
    qn_buf_puts (&many, "GET / HTTP/1.1\r\nCookie: ");
    for (int i = 0; i < 16 * 1024; i++)
        qn_buf_putc (&many, 'c');
    qn_buf_puts (&many, "\r\n\r\n");
    s_assert_error (NULL, many.data, many.len, 431);
    qn_buf_free (&many);

    //  Trailers count too
    const char *trailers = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n"
                           "T1: 1\r\nT2: 2\r\nT3: 3\r\nT4: 4\r\n\r\n";
    s_assert_error (&limits, trailers, strlen (trailers), 431);
}

static void
test_http_bad_requests (void **state)
{
    (void) state;
    struct {
        const char *input;
        int status;
    } cases [] = {
        //  Framing conflicts: the request smuggling classics
        { "POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400 },
        { "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n", 400 },
        { "POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400 },
        { "POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc", 400 },
        { "POST / HTTP/1.1\r\nContent-Length: 3, 3\r\n\r\nabc", 400 },
        { "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400 },
        { "POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\nx", 400 },
        { "POST / HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n", 400 },
        { "POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", 400 },
        { "POST / HTTP/1.1\r\nContent-Length : 1\r\n\r\nx", 400 },
        { "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400 },
        { "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", 400 },
        { "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501 },
        { "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501 },
        { "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400 },
        { "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400 },
        { "POST / HTTP/1.1\r\nTransfer-Encoding:\r\n\r\n", 400 },
        //  Chunk framing
        { "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400 },
        { "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n", 400 },
        { "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n", 400 },
        { "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n", 400 },
        { "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\n0\n\n", 400 },
        { "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\n", 400 },
        { "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: a\r\n b\r\n\r\n", 400 },
        //  Header injection and line endings
        { "GET / HTTP/1.1\r\nX: a\rb\r\n\r\n", 400 },
        { "GET / HTTP/1.1\r\nX: a\nInjected: b\r\n\r\n", 400 },
        { "GET / HTTP/1.1\r\nX: a\r\n folded\r\n\r\n", 400 },
        { "GET / HTTP/1.1\r\nX: a\r\n\tfolded\r\n\r\n", 400 },
        { "GET / HTTP/1.1\nHost: x\n\n", 400 },
        { "GET / HTTP/1.1\r\nHost: x\r\n\n", 400 },
        { "GET / HTTP/1.1\r\n X: a\r\n\r\n", 400 },
        { "GET / HTTP/1.1\r\nBad Name: a\r\n\r\n", 400 },
        { "GET / HTTP/1.1\r\n: a\r\n\r\n", 400 },
        { "GET / HTTP/1.1\r\nX: a\x01b\r\n\r\n", 400 },
        { "GET / HTTP/1.1\r\nX: a\x7f\r\n\r\n", 400 },
        { "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nBad Name: 1\r\n\r\n", 400 },
        { "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n: 1\r\n\r\n", 400 },
        { "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: \x01\r\n\r\n", 400 },
        //  Request line
        { "GET\r\n\r\n", 400 },
        { "GET /\r\n\r\n", 400 },
        { "GET / HTTP/1.1 extra\r\n\r\n", 400 },
        { "GET /a b HTTP/1.1\r\n\r\n", 400 },
        { "GET /a\tb HTTP/1.1\r\n\r\n", 400 },
        { "GET /a\x7f HTTP/1.1\r\n\r\n", 400 },
        { "GET / HTTP/1.2\r\n\r\n", 400 },
        { "GET / HTTP/2.0\r\n\r\n", 400 },
        { "GET / HTTP/0.9\r\n\r\n", 400 },
        { "GET / FTP/1.1\r\n\r\n", 400 },
        { "get / HTTP/1.1\r\n\r\n", 400 },
        { "FOO / HTTP/1.1\r\n\r\n", 400 },
        { " GET / HTTP/1.1\r\n\r\n", 400 },
        { "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 400 },     //  TLS on the plain port
        //  Methods we do not serve
        { "CONNECT example.com:443 HTTP/1.1\r\n\r\n", 501 },
        { "TRACE / HTTP/1.1\r\n\r\n", 501 },
        { "PROPFIND / HTTP/1.1\r\n\r\n", 501 },
        { "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 501 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++)
        s_assert_error (NULL, cases [i].input, strlen (cases [i].input), cases [i].status);
    //  NUL bytes in a header value, a name, the target
    const char nul_value [] = "GET / HTTP/1.1\r\nX: a\0b\r\n\r\n";
    s_assert_error (NULL, nul_value, sizeof nul_value - 1, 400);
    const char nul_name [] = "GET / HTTP/1.1\r\nX\0: a\r\n\r\n";
    s_assert_error (NULL, nul_name, sizeof nul_name - 1, 400);
    const char nul_target [] = "GET /a\0b HTTP/1.1\r\n\r\n";
    s_assert_error (NULL, nul_target, sizeof nul_target - 1, 400);
    const char nul_between [] = "GET / HTTP/1.1\r\n\r\n\0";
    run_t run;
    s_run (NULL, nul_between, sizeof nul_between - 1, sizeof nul_between - 1, false, &run);
    assert_int_equal (run.count, 1);
    assert_int_equal (run.error_status, 400);
    s_run_free (&run);
}

static void
test_http_error_is_sticky (void **state)
{
    (void) state;
    qn_http_parser_t *parser = qn_http_parser_new (NULL);
    assert_int_equal (qn_http_parser_error_status (parser), 0);
    const char *bad = "GET / HTTP/1.1\r\nX: a\rb\r\n\r\n";
    size_t consumed;
    assert_int_equal (qn_http_parser_feed (parser, bad, strlen (bad), &consumed), QN_HTTP_ERROR);
    assert_int_equal (qn_http_parser_error_status (parser), 400);
    const char *good = "GET / HTTP/1.1\r\n\r\n";
    assert_int_equal (qn_http_parser_feed (parser, good, strlen (good), &consumed), QN_HTTP_ERROR);
    assert_int_equal (consumed, 0);
    //  _next clears it (the acceptor closes instead; this is for reuse)
    qn_http_parser_next (parser);
    assert_int_equal (qn_http_parser_error_status (parser), 0);
    assert_string_equal (qn_http_parser_error (parser), "");
    assert_int_equal (qn_http_parser_feed (parser, good, strlen (good), &consumed), QN_HTTP_REQUEST);
    qn_http_parser_destroy (&parser);
}

static void
test_http_in_request (void **state)
{
    (void) state;
    qn_http_parser_t *parser = qn_http_parser_new (NULL);
    size_t consumed;
    assert_int_equal (qn_http_parser_feed (parser, "\r\n", 2, &consumed), QN_HTTP_NEED_MORE);
    assert_false (qn_http_parser_in_request (parser));
    assert_int_equal (qn_http_parser_feed (parser, "G", 1, &consumed), QN_HTTP_NEED_MORE);
    assert_true (qn_http_parser_in_request (parser));
    const char *rest = "ET / HTTP/1.1\r\nContent-Length: 2\r\n\r\n";
    assert_int_equal (qn_http_parser_feed (parser, rest, strlen (rest), &consumed), QN_HTTP_NEED_MORE);
    assert_true (qn_http_parser_in_request (parser));
    assert_int_equal (qn_http_parser_feed (parser, "ok", 2, &consumed), QN_HTTP_REQUEST);
    assert_false (qn_http_parser_in_request (parser));
    qn_http_parser_next (parser);
    assert_false (qn_http_parser_in_request (parser));
    qn_http_parser_destroy (&parser);
}

static void
test_http_upgrade_ignored (void **state)
{
    (void) state;
    run_t run;
    s_run_everywhere (NULL, "GET /ws HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
                            "POST /next HTTP/1.1\r\nConnection: upgrade\r\nUpgrade: h2c\r\n"
                            "Content-Length: 2\r\n\r\nhi"
                            "GET /last HTTP/1.1\r\n\r\n", &run);
    assert_int_equal (run.count, 3);
    assert_string_equal (run.got [0].target, "/ws");
    assert_string_equal (run.got [1].body, "hi");
    assert_string_equal (run.got [2].target, "/last");
    s_run_free (&run);
}

static void
test_http_methods (void **state)
{
    (void) state;
    const char *methods [] = { "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH" };
    for (size_t i = 0; i < sizeof methods / sizeof methods [0]; i++) {
        char input [64];
        snprintf (input, sizeof input, "%s /x HTTP/1.1\r\n\r\n", methods [i]);
        run_t run;
        s_run (NULL, input, strlen (input), strlen (input), false, &run);
        assert_int_equal (run.count, 1);
        assert_string_equal (run.got [0].method, methods [i]);
        s_run_free (&run);
    }
}

static void
test_http_take_body (void **state)
{
    (void) state;
    qn_http_parser_t *parser = qn_http_parser_new (NULL);
    const char *input = "POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"
                        "POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nbye";
    size_t len = strlen (input);
    size_t consumed;
    assert_int_equal (qn_http_parser_feed (parser, input, len, &consumed), QN_HTTP_REQUEST);
    qn_http_request_t *req = qn_http_parser_request (parser);
    char *block = req->body.data;
    qn_buf_t body;
    qn_http_request_take_body (req, &body);
    assert_ptr_equal (body.data, block);            //  handed over, not copied
    assert_int_equal (body.len, 5);
    assert_string_equal (body.data, "hello");
    assert_null (req->body.data);
    assert_int_equal (req->body.len, 0);
    qn_http_parser_next (parser);

    size_t offset = consumed;
    assert_int_equal (qn_http_parser_feed (parser, input + offset, len - offset, &consumed), QN_HTTP_REQUEST);
    assert_int_equal (offset + consumed, len);
    assert_string_equal (qn_http_parser_request (parser)->body.data, "bye");
    qn_http_parser_destroy (&parser);
    //  The taken block outlives the parser
    assert_string_equal (body.data, "hello");
    qn_buf_free (&body);
}

static void
test_http_memory_after_large_body (void **state)
{
    (void) state;
    qn_http_parser_t *parser = qn_http_parser_new (NULL);
    size_t idle = qn_http_parser_memory (parser);
    assert_true (idle < 1024);

    size_t body_len = 1024 * 1024;
    qn_buf_t input = QN_BUF_INIT;
    qn_buf_printf (&input, "POST / HTTP/1.1\r\nContent-Length: %zu\r\n\r\n", body_len);
    for (size_t i = 0; i < body_len; i++)
        qn_buf_putc (&input, (char) ('a' + i % 26));
    size_t consumed;
    assert_int_equal (qn_http_parser_feed (parser, input.data, input.len, &consumed), QN_HTTP_REQUEST);
    assert_int_equal (qn_http_parser_request (parser)->body.len, body_len);
    assert_true (qn_http_parser_memory (parser) >= body_len);
    qn_http_parser_next (parser);
    assert_true (qn_http_parser_memory (parser) < 4096);

    //  Chunked, fed in small reads
    qn_buf_reset (&input);
    qn_buf_puts (&input, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
    for (int i = 0; i < 64; i++) {
        qn_buf_puts (&input, "4000\r\n");
        for (int j = 0; j < 0x4000; j++)
            qn_buf_putc (&input, 'x');
        qn_buf_puts (&input, "\r\n");
    }
    qn_buf_puts (&input, "0\r\n\r\n");
    size_t offset = 0;
    qn_http_rc_t rc = QN_HTTP_NEED_MORE;
    while (rc == QN_HTTP_NEED_MORE && offset < input.len) {
        size_t read = input.len - offset < 1500? input.len - offset: 1500;
        rc = qn_http_parser_feed (parser, input.data + offset, read, &consumed);
        offset += consumed;
    }
    assert_int_equal (rc, QN_HTTP_REQUEST);
    assert_int_equal (offset, input.len);
    assert_int_equal (qn_http_parser_request (parser)->body.len, 64 * 0x4000);
    qn_http_parser_next (parser);
    assert_true (qn_http_parser_memory (parser) < 4096);

    //  Small buffers are kept for reuse; trim releases them too
    const char *small = "POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi";
    assert_int_equal (qn_http_parser_feed (parser, small, strlen (small), &consumed), QN_HTTP_REQUEST);
    qn_http_parser_next (parser);
    assert_true (qn_http_parser_memory (parser) > idle);
    qn_http_parser_trim (parser);
    assert_int_equal (qn_http_parser_memory (parser), idle);
    qn_buf_free (&input);
    qn_http_parser_destroy (&parser);
}

static void
test_http_response_golden (void **state)
{
    (void) state;
    qn_buf_t out = QN_BUF_INIT;
    const char *json = "{\"ok\":true}";
    qn_http_response (&out, 200, "application/json", NULL, json, strlen (json), true);
    assert_string_equal (out.data,
        "HTTP/1.1 200 OK\r\n"
        "Content-Type: application/json\r\n"
        "Content-Length: 11\r\n"
        "Access-Control-Allow-Origin: *\r\n"
        "Access-Control-Allow-Methods: GET, POST, PUT, DELETE, OPTIONS\r\n"
        "Access-Control-Allow-Headers: Content-Type, Authorization\r\n"
        "Access-Control-Max-Age: 86400\r\n"
        "Connection: keep-alive\r\n"
        "\r\n"
        "{\"ok\":true}");

    //  Appends: a 204 after it, without Content-Length or body
    size_t first = out.len;
    qn_http_response (&out, 204, NULL, NULL, "ignored", 7, true);
    assert_string_equal (out.data + first,
        "HTTP/1.1 204 No Content\r\n"
        "Access-Control-Allow-Origin: *\r\n"
        "Access-Control-Allow-Methods: GET, POST, PUT, DELETE, OPTIONS\r\n"
        "Access-Control-Allow-Headers: Content-Type, Authorization\r\n"
        "Access-Control-Max-Age: 86400\r\n"
        "Connection: keep-alive\r\n"
        "\r\n");

    qn_buf_reset (&out);
    const char *error = "{\"error\":\"not found\"}";
    qn_http_response (&out, 404, "application/json", "X-Request-Id: 7\r\nRetry-After: 1\r\n",
                      error, strlen (error), false);
    assert_string_equal (out.data,
        "HTTP/1.1 404 Not Found\r\n"
        "Content-Type: application/json\r\n"
        "Content-Length: 21\r\n"
        "Access-Control-Allow-Origin: *\r\n"
        "Access-Control-Allow-Methods: GET, POST, PUT, DELETE, OPTIONS\r\n"
        "Access-Control-Allow-Headers: Content-Type, Authorization\r\n"
        "Access-Control-Max-Age: 86400\r\n"
        "Connection: close\r\n"
        "X-Request-Id: 7\r\n"
        "Retry-After: 1\r\n"
        "\r\n"
        "{\"error\":\"not found\"}");

    qn_buf_reset (&out);
    qn_http_response (&out, 304, NULL, NULL, NULL, 0, true);
    assert_null (strstr (out.data, "Content-Length"));
    qn_buf_reset (&out);
    qn_http_response (&out, 500, NULL, NULL, NULL, 0, false);
    assert_non_null (strstr (out.data, "HTTP/1.1 500 Internal Server Error\r\n"));
    assert_non_null (strstr (out.data, "\r\nContent-Length: 0\r\n"));
    qn_buf_free (&out);

    assert_string_equal (qn_http_reason (413), "Payload Too Large");
    assert_string_equal (qn_http_reason (431), "Request Header Fields Too Large");
    assert_string_equal (qn_http_reason (501), "Not Implemented");
    assert_string_equal (qn_http_reason (299), "Unknown");
}

//  The serialised response is itself well-framed HTTP: check it parses back
//  with the same framing rules (a request line stands in for the status line).
static void
test_http_response_framing (void **state)
{
    (void) state;
    qn_buf_t out = QN_BUF_INIT;
    qn_http_response (&out, 201, "text/plain", NULL, "created", 7, true);
    const char *head_end = strstr (out.data, "\r\n\r\n");
    assert_non_null (head_end);
    assert_string_equal (head_end + 4, "created");
    for (const char *c = out.data; c < head_end; c++)
        if (*c == '\n')
            assert_int_equal (c [-1], '\r');
    qn_buf_free (&out);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_http_simple_get),
        cmocka_unit_test (test_http_post_content_length),
        cmocka_unit_test (test_http_keep_alive),
        cmocka_unit_test (test_http_pipelined_two),
        cmocka_unit_test (test_http_pipelined_three),
        cmocka_unit_test (test_http_chunked_extensions_trailers),
        cmocka_unit_test (test_http_expect_continue),
        cmocka_unit_test (test_http_body_limit),
        cmocka_unit_test (test_http_header_limits),
        cmocka_unit_test (test_http_bad_requests),
        cmocka_unit_test (test_http_error_is_sticky),
        cmocka_unit_test (test_http_in_request),
        cmocka_unit_test (test_http_upgrade_ignored),
        cmocka_unit_test (test_http_methods),
        cmocka_unit_test (test_http_take_body),
        cmocka_unit_test (test_http_memory_after_large_body),
        cmocka_unit_test (test_http_response_golden),
        cmocka_unit_test (test_http_response_framing),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
