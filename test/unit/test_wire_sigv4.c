/*  test/unit/test_wire_sigv4.c - AWS Signature Version 4
    Vectors: AWS's Signature Version 4 test suite (get-vanilla,
    get-vanilla-query-order-key-case, post-x-www-form-urlencoded,
    get-space), AWS's S3 GET Object example, and two requests signed by the
    AWS SDK for JavaScript v3 (@smithy/signature-v4): an SQS JSON 1.0
    request and an S3 multipart part upload with an encoded key and query.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "wire/sigv4.h"

#define SUITE_SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

#define H(n, v) { n, sizeof n - 1, v, sizeof v - 1 }

static void
s_expect (const qn_sigv4_request_t *r, const char *secret, const char *want)
{
    char sig [65];
    qn_sigv4_signature (r, secret, sig);
    assert_string_equal (sig, want);
    assert_true (qn_sigv4_equal (sig, want));
}

static void
test_suite_get_vanilla (void **state)
{
    (void) state;
    qn_http_header_t h [] = { H ("Host", "example.amazonaws.com"), H ("X-Amz-Date", "20150830T123600Z") };
    qn_sigv4_request_t r = {
        .method = "GET", .path = "/", .query = "", .headers = h, .header_count = 2,
        .signed_headers = "host;x-amz-date", .payload_hash = EMPTY_SHA256,
        .amz_date = "20150830T123600Z", .region = "us-east-1", .service = "service"
    };
    qn_buf_t c = QN_BUF_INIT;
    qn_sigv4_canonical_request (&r, &c);
    assert_string_equal (c.data, "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
                                 "host;x-amz-date\n" EMPTY_SHA256);
    qn_buf_free (&c);
    s_expect (&r, SUITE_SECRET, "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
    char auth [512];
    assert_int_equal (qn_sigv4_authorization (&r, "AKIDEXAMPLE", SUITE_SECRET, auth, sizeof auth), 0);
    assert_string_equal (auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
                               "SignedHeaders=host;x-amz-date, "
                               "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
    //  Parsing the header we built gives its parts back.
    qn_sigv4_auth_t a;
    assert_int_equal (qn_sigv4_parse_authorization (auth, strlen (auth), &a), 0);
    assert_string_equal (a.access_key, "AKIDEXAMPLE");
    assert_string_equal (a.date, "20150830");
    assert_string_equal (a.region, "us-east-1");
    assert_string_equal (a.service, "service");
    assert_string_equal (a.signed_headers, "host;x-amz-date");
    assert_string_equal (a.signature, "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
    assert_int_equal (qn_sigv4_authorization (&r, "AKIDEXAMPLE", SUITE_SECRET, auth, 40), -1);
}

static void
test_suite_query_order_and_form (void **state)
{
    (void) state;
    qn_http_header_t h [] = { H ("Host", "example.amazonaws.com"), H ("X-Amz-Date", "20150830T123600Z") };
    qn_sigv4_request_t r = {
        .method = "GET", .path = "/", .query = "Param2=value2&Param1=value1", .headers = h,
        .header_count = 2, .signed_headers = "host;x-amz-date", .payload_hash = EMPTY_SHA256,
        .amz_date = "20150830T123600Z", .region = "us-east-1", .service = "service"
    };
    s_expect (&r, SUITE_SECRET, "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");

    qn_http_header_t f [] = {
        H ("Content-Type", "application/x-www-form-urlencoded"),
        H ("Host", "example.amazonaws.com"), H ("X-Amz-Date", "20150830T123600Z")
    };
    char body_hash [65];
    qn_sigv4_sha256_hex ("Param1=value1", 13, body_hash);
    qn_sigv4_request_t p = {
        .method = "POST", .path = "/", .headers = f, .header_count = 3,
        .signed_headers = "content-type;host;x-amz-date", .payload_hash = body_hash,
        .amz_date = "20150830T123600Z", .region = "us-east-1", .service = "service"
    };
    s_expect (&p, SUITE_SECRET, "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a");
}

static void
test_suite_paths (void **state)
{
    (void) state;
    qn_http_header_t h [] = { H ("Host", "example.amazonaws.com"), H ("X-Amz-Date", "20150830T123600Z") };
    qn_sigv4_request_t r = {
        .method = "GET", .path = "/example space/", .headers = h, .header_count = 2,
        .signed_headers = "host;x-amz-date", .payload_hash = EMPTY_SHA256,
        .amz_date = "20150830T123600Z", .region = "us-east-1", .service = "service"
    };
    s_expect (&r, SUITE_SECRET, "652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741");
    //  Normalisation: empty, "." and ".." segments; a path as sent is
    //  encoded once more ("%20" -> "%2520") outside S3.
    const char *cases [][2] = {
        { "//", "/" }, { "/./", "/" }, { "//example//", "/example/" },
        { "/example/..", "/" }, { "/a/b/../c", "/a/c" }, { "/a%20b", "/a%2520b" },
        { "", "/" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        r.path = cases [i][0];
        qn_buf_t c = QN_BUF_INIT;
        qn_sigv4_canonical_request (&r, &c);
        char want [128];
        snprintf (want, sizeof want, "GET\n%s\n", cases [i][1]);
        assert_memory_equal (c.data, want, strlen (want));
        qn_buf_free (&c);
    }
}

static void
test_s3_get_object_example (void **state)
{
    (void) state;
    qn_http_header_t h [] = {
        H ("Host", "examplebucket.s3.amazonaws.com"), H ("Range", "bytes=0-9"),
        H ("x-amz-content-sha256", EMPTY_SHA256), H ("x-amz-date", "20130524T000000Z")
    };
    qn_sigv4_request_t r = {
        .method = "GET", .path = "/test.txt", .headers = h, .header_count = 4,
        .signed_headers = "host;range;x-amz-content-sha256;x-amz-date", .payload_hash = EMPTY_SHA256,
        .amz_date = "20130524T000000Z", .region = "us-east-1", .service = "s3", .s3 = true
    };
    s_expect (&r, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
              "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

static void
test_sdk_signed_requests (void **state)
{
    (void) state;
    //  S3 part upload: the key is sent encoded and S3 does not encode again;
    //  the query is decoded and re-encoded ("a%2Fb%2Bc" stays, "+" is a plus).
    qn_http_header_t s3h [] = {
        H ("host", "127.0.0.1:4569"), H ("x-amz-content-sha256", "UNSIGNED-PAYLOAD"),
        H ("x-amz-date", "20261201T180000Z")
    };
    qn_sigv4_request_t s3 = {
        .method = "PUT", .path = "/bucket/prefix/queue%3Dorders/dt%3D2026-12-01/part-0.parquet",
        .query = "partNumber=2&uploadId=a/b%2Bc", .headers = s3h, .header_count = 3,
        .signed_headers = "host;x-amz-content-sha256;x-amz-date", .payload_hash = "UNSIGNED-PAYLOAD",
        .amz_date = "20261201T180000Z", .region = "eu-west-1", .service = "s3", .s3 = true
    };
    s_expect (&s3, SUITE_SECRET, "7d117f50f6516d712cf34f6bb360ab38b74e1560c7b0cc4a614761074a31afd8");

    //  SQS JSON 1.0, with headers in another order and case, one value
    //  with inner and outer spaces that the SDK did not have (so: a
    //  different signature), then the SDK's own.
    const char *body = "{\"QueueUrl\":\"http://127.0.0.1:9324/000000000000/q1\",\"MessageBody\":\"hi\"}";
    char hash [65];
    qn_sigv4_sha256_hex (body, strlen (body), hash);
    assert_string_equal (hash, "067653f82ae92d412b8ef7d6a93fe868d2fd5a0a903e851c103accb0c4af488b");
    qn_http_header_t sq [] = {
        H ("X-Amz-Target", "AmazonSQS.SendMessage"), H ("Content-Type", "application/x-amz-json-1.0"),
        H ("X-Amz-Date", "20261201T180000Z"), H ("Host", "127.0.0.1:9324"), H ("Content-Length", "71")
    };
    qn_sigv4_request_t r = {
        .method = "POST", .path = "/", .headers = sq, .header_count = 5,
        .signed_headers = "content-type;host;x-amz-date;x-amz-target", .payload_hash = hash,
        .amz_date = "20261201T180000Z", .region = "eu-west-1", .service = "sqs"
    };
    s_expect (&r, SUITE_SECRET, "282d41a6bf3c95d58122b9f36779fb0410feda3163e2c566098b4519fec35efd");
    //  Trimming: "  AmazonSQS.SendMessage " signs as the trimmed value.
    qn_http_header_t sp [] = {
        H ("X-Amz-Target", "  AmazonSQS.SendMessage "), H ("Content-Type", "application/x-amz-json-1.0"),
        H ("X-Amz-Date", "20261201T180000Z"), H ("Host", "127.0.0.1:9324")
    };
    r.headers = sp;
    r.header_count = 4;
    s_expect (&r, SUITE_SECRET, "282d41a6bf3c95d58122b9f36779fb0410feda3163e2c566098b4519fec35efd");
    //  A wrong secret, body or region gives another signature.
    char sig [65];
    qn_sigv4_signature (&r, "not-the-secret", sig);
    assert_false (qn_sigv4_equal (sig, "282d41a6bf3c95d58122b9f36779fb0410feda3163e2c566098b4519fec35efd"));
    r.region = "us-east-1";
    qn_sigv4_signature (&r, SUITE_SECRET, sig);
    assert_false (qn_sigv4_equal (sig, "282d41a6bf3c95d58122b9f36779fb0410feda3163e2c566098b4519fec35efd"));
}

static void
test_parse_refuses (void **state)
{
    (void) state;
    const char *sig = "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31";
    char ok [300];
    snprintf (ok, sizeof ok, "AWS4-HMAC-SHA256 Credential=AK/20150830/us-east-1/sqs/aws4_request,"
              "SignedHeaders=host;x-amz-date,%s", sig);
    qn_sigv4_auth_t a;
    assert_int_equal (qn_sigv4_parse_authorization (ok, strlen (ok), &a), 0);
    assert_string_equal (a.service, "sqs");
    const char *bad [] = {
        "",
        "AWS4-HMAC-SHA1 Credential=AK/20150830/us-east-1/sqs/aws4_request, SignedHeaders=host, Signature=00",
        "AWS4-HMAC-SHA256 Credential=AK/20150830/us-east-1/sqs/aws4_request, SignedHeaders=host",
        "AWS4-HMAC-SHA256 Credential=AK/2015083/us-east-1/sqs/aws4_request, SignedHeaders=host, "
            "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
        "AWS4-HMAC-SHA256 Credential=AK/20150830/us-east-1/sqs/aws5_request, SignedHeaders=host, "
            "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
        "AWS4-HMAC-SHA256 Credential=AK/20150830/us-east-1/sqs/x/aws4_request, SignedHeaders=host, "
            "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
        "AWS4-HMAC-SHA256 Credential=AK/20150830/us-east-1/sqs/aws4_request, SignedHeaders=host, "
            "Signature=5FA00FA31553B73EBF1942676E86291E8372FF2A2260956D9B8AAE1D763FBF31",
        "AWS4-HMAC-SHA256 Credential=AK/20150830/us-east-1/sqs/aws4_request, SignedHeaders=host, "
            "Signature=5fa00fa3",
        "AWS4-HMAC-SHA256 Credential=/20150830/us-east-1/sqs/aws4_request, SignedHeaders=host, "
            "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
        "AWS4-HMAC-SHA256 Foo=bar, Credential=AK/20150830/us-east-1/sqs/aws4_request, SignedHeaders=host, "
            "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
        "AWS4-HMAC-SHA256 Credential",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++)
        assert_int_equal (qn_sigv4_parse_authorization (bad [i], strlen (bad [i]), &a), -1);
    //  Every prefix of a good header is refused, never read past its end.
    for (size_t n = 0; n + 1 < strlen (ok); n++)
        if (n < strlen (ok) - 64)
            assert_int_equal (qn_sigv4_parse_authorization (ok, n, &a), -1);
    assert_false (qn_sigv4_equal ("abc", "abc"));       //  Only full signatures compare equal
}

//  Request time: X-Amz-Date first, else the HTTP Date header (spec §3.3).
static void
test_request_time (void **state)
{
    (void) state;
    char out [17];
    const char *x = "20261130T100940Z";
    assert_int_equal (qn_sigv4_request_time (x, 16, NULL, 0, out), 1796033380);
    assert_string_equal (out, x);
    const char *d = "Mon, 30 Nov 2026 10:09:40 GMT";
    assert_int_equal (qn_sigv4_request_time (NULL, 0, d, strlen (d), out), 1796033380);
    assert_string_equal (out, x);
    //  X-Amz-Date wins over Date
    assert_int_equal (qn_sigv4_request_time ("20150830T123600Z", 16, d, strlen (d), out), 1440938160);
    assert_string_equal (out, "20150830T123600Z");
    const char *leap = "Thu, 29 Feb 2024 23:59:59 GMT";
    assert_int_equal (qn_sigv4_request_time (NULL, 0, leap, strlen (leap), out), 1709251199);
    assert_string_equal (out, "20240229T235959Z");
    //  refused: malformed X-Amz-Date (Date not tried), bad Date forms, none
    assert_int_equal (qn_sigv4_request_time ("20261130 100940Z", 16, d, strlen (d), out), -1);
    assert_int_equal (qn_sigv4_request_time ("20261330T100940Z", 16, NULL, 0, out), -1);
    assert_int_equal (qn_sigv4_request_time ("20261130T100940", 15, NULL, 0, out), -1);
    const char *bad [] = {
        "Mon, 30 Nov 2026 10:09:40 UTC", "Mon, 30 Foo 2026 10:09:40 GMT", "Mon, 31 Nov 2026 10:09:40 GMT",
        "Mon, 30 Nov 2026 24:09:40 GMT", "Mon 30 Nov 2026 10:09:40 GMT ", "Fri, 29 Feb 2026 10:09:40 GMT",
        "Mon, 30 Nov 2026 10:09:4x GMT", "Monday, 30-Nov-26 10:09:40 GMT", ""
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++)
        assert_int_equal (qn_sigv4_request_time (NULL, 0, bad [i], strlen (bad [i]), out), -1);
    assert_int_equal (qn_sigv4_request_time (NULL, 0, NULL, 0, out), -1);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_suite_get_vanilla),
        cmocka_unit_test (test_suite_query_order_and_form),
        cmocka_unit_test (test_suite_paths),
        cmocka_unit_test (test_s3_get_object_example),
        cmocka_unit_test (test_sdk_signed_requests),
        cmocka_unit_test (test_parse_refuses),
        cmocka_unit_test (test_request_time),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
