/*  test/unit/test_wire_json.c - tests for wire/json_parse.c and wire/json_write.c
    Golden token trees, every strict prefix, tables of invalid and valid
    inputs, lookups, unescaping, writer round trips and integer edges.
    Every input is copied to a malloc'd block of exactly its size, so an
    over-read past the end trips ASan.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "wire/json.h"

//  A literal with its length, embedded NULs included.
#define S(lit) lit, sizeof (lit) - 1

typedef struct {
    qn_json_doc_t doc;
    char *copy;                 //  Owned: the exact-size copy being parsed
} fixture_t;

static int
s_setup (void **state)
{
    fixture_t *fx = qn_zalloc (sizeof *fx);
    qn_json_doc_init (&fx->doc);
    *state = fx;
    return 0;
}

static int
s_teardown (void **state)
{
    fixture_t *fx = *state;
    qn_json_doc_free (&fx->doc);
    free (fx->copy);
    free (fx);
    return 0;
}

//  Parses a copy of [s, s+len) that ends exactly at the end of its block.
static int
s_parse (fixture_t *fx, const char *s, size_t len, int max_depth)
{
    free (fx->copy);
    fx->copy = malloc (len? len: 1);
    assert_non_null (fx->copy);
    if (len)
        memcpy (fx->copy, s, len);
    return qn_json_parse (&fx->doc, fx->copy, len, max_depth);
}

//  Checks structural invariants of a successful parse: spans inside the
//  input, `next` skipping whole subtrees, sizes matching children, keys
//  being strings. Returns the number of problems found.
static int
s_check_tree (const qn_json_doc_t *doc)
{
    int bad = 0;
    if (doc->count == 0 || doc->toks [0].next != doc->count)
        bad++;
    for (uint32_t i = 0; i < doc->count; i++) {
        const qn_json_tok_t *t = &doc->toks [i];
        if ((size_t) t->start + t->len > doc->len || t->len == 0 || t->next <= i)
            bad++;
        if (t->type == QN_JSON_ARRAY || t->type == QN_JSON_OBJECT) {
            uint32_t k = i + 1, n = 0;
            while (k < t->next) {
                if (t->type == QN_JSON_OBJECT) {
                    if (doc->toks [k].type != QN_JSON_STRING)
                        bad++;
                    k++;
                }
                k = doc->toks [k].next;
                n++;
            }
            if (n != t->size || k != t->next)
                bad++;
        }
        else
        if (t->next != i + 1)
            bad++;
    }
    return bad;
}

//  Renders the token array as "o0+18/2>7 s1+3>2 ..." (type, start, len,
//  size for containers, 'e' for escaped strings, next).
static void
s_dump (const qn_json_doc_t *doc, qn_buf_t *out)
{
    static const char letters [] = "?nft#sao";
    for (uint32_t i = 0; i < doc->count; i++) {
        const qn_json_tok_t *t = &doc->toks [i];
        qn_buf_printf (out, "%s%c%u+%u", i? " ": "", letters [t->type], t->start, t->len);
        if (t->type == QN_JSON_ARRAY || t->type == QN_JSON_OBJECT)
            qn_buf_printf (out, "/%u", t->size);
        if (t->has_escapes)
            qn_buf_putc (out, 'e');
        qn_buf_printf (out, ">%u", t->next);
    }
}


//  --------------------------------------------------------------------------
//  Golden token trees

static void
test_json_golden_trees (void **state)
{
    fixture_t *fx = *state;
    static const struct {
        const char *json;
        const char *tree;
    } golden [] = {
        { "{\"a\":[1,2],\"b\":{}}",
          "o0+18/2>7 s1+3>2 a5+5/2>5 #6+1>4 #8+1>5 s11+3>6 o15+2/0>7" },
        { "[[],[[]],{}]",
          "a0+12/3>5 a1+2/0>2 a4+4/1>4 a5+2/0>4 o9+2/0>5" },
        { "{\"k\":{\"x\":[null,true]},\"z\":\"\\u00e9\"}",
          "o0+36/2>9 s1+3>2 o5+17/1>7 s6+3>4 a10+11/2>7 n11+4>6 t16+4>7 s23+3>8 s27+8e>9" },
        { "\"a\\\"b\"", "s0+6e>1" },
        { " 42 ", "#1+2>1" },
        { "\t[ false , -1.5e+3 ,\"\" ]\n",
          "a1+23/3>4 f3+5>2 #11+7>3 s20+2>4" },
        { "{ \"a\" : { } , \"b\" : [ [ ] ] }",
          "o0+29/2>6 s2+3>2 o8+3/0>3 s14+3>4 a20+7/1>6 a22+3/0>6" },
        { "null", "n0+4>1" },
    };
    for (size_t i = 0; i < sizeof golden / sizeof golden [0]; i++) {
        const char *json = golden [i].json;
        assert_int_equal (s_parse (fx, json, strlen (json), 0), 0);
        assert_int_equal (s_check_tree (&fx->doc), 0);
        qn_buf_t dump = QN_BUF_INIT;
        s_dump (&fx->doc, &dump);
        assert_string_equal (dump.data, golden [i].tree);
        qn_buf_free (&dump);
    }
}

//  Every strict prefix of a document whose root is a container, string or
//  literal is incomplete and must fail; the whole document must pass.
static void
test_json_every_prefix_fails (void **state)
{
    fixture_t *fx = *state;
    static const char *docs [] = {
        "{\"a\":[1,2],\"b\":{}}",
        "{\"k\":{\"x\":[null,true]},\"z\":\"\\u00e9 \\ud83d\\ude00 \xe2\x82\xac\"}",
        "[\"a\\\\b\",-12.5e-3,true,false,null,{},[[]],\"\xf0\x9f\x98\x80\"]",
        "\"\\ud83d\\ude00 and \\\" and \xc3\xa9\"",
        "{ \"pretty\" : [ 1 , 2 ] , \"x\" : { \"y\" : \"z\" } }",
        "[0,-0,0.5,1e10,1E-1,-3.25e+2]",
        "true",
        "false",
        "null",
    };
    for (size_t i = 0; i < sizeof docs / sizeof docs [0]; i++) {
        size_t len = strlen (docs [i]);
        for (size_t cut = 0; cut < len; cut++) {
            if (s_parse (fx, docs [i], cut, 0) != -1)
                fail_msg ("prefix %zu of doc %zu parsed: %.*s", cut, i, (int) cut, docs [i]);
            assert_int_equal (fx->doc.count, 0);
            assert_true (fx->doc.err [0] != 0);
        }
        assert_int_equal (s_parse (fx, docs [i], len, 0), 0);
        assert_int_equal (s_check_tree (&fx->doc), 0);
    }
}


//  --------------------------------------------------------------------------
//  Invalid and valid input tables

typedef struct {
    const char *json;
    size_t len;
    int max_depth;
    const char *why;
} invalid_t;

static const invalid_t s_invalid [] = {
    { S(""), 0, "empty input" },
    { S(" \t\r\n"), 0, "whitespace only" },
    { S("[1,]"), 0, "trailing comma in array" },
    { S("{\"a\":1,}"), 0, "trailing comma in object" },
    { S("['a']"), 0, "single-quoted string" },
    { S("{'a':1}"), 0, "single-quoted key" },
    { S("01"), 0, "leading zero" },
    { S("-01"), 0, "negative leading zero" },
    { S("00"), 0, "double zero" },
    { S("[01]"), 0, "leading zero in array" },
    { S("-"), 0, "bare minus" },
    { S("1."), 0, "no fraction digits" },
    { S(".5"), 0, "no integer part" },
    { S("-.5"), 0, "no integer part, negative" },
    { S("1.e5"), 0, "dot before exponent" },
    { S("1e"), 0, "empty exponent" },
    { S("1e+"), 0, "signed empty exponent" },
    { S("1e5.0"), 0, "fraction after exponent" },
    { S("+1"), 0, "plus sign" },
    { S("0x10"), 0, "hex number" },
    { S("NaN"), 0, "NaN" },
    { S("Infinity"), 0, "Infinity" },
    { S("-Infinity"), 0, "-Infinity" },
    { S("[1 2]"), 0, "missing comma" },
    { S("{\"a\" 1}"), 0, "missing colon" },
    { S("{\"a\":}"), 0, "missing value" },
    { S("{1:2}"), 0, "number key" },
    { S("{\"a\":1 \"b\":2}"), 0, "missing comma between members" },
    { S("[1,,2]"), 0, "double comma" },
    { S("[,]"), 0, "comma only" },
    { S("[\"a\":1]"), 0, "colon in array" },
    { S("["), 0, "unclosed array" },
    { S("{"), 0, "unclosed object" },
    { S("[[]"), 0, "unclosed nested array" },
    { S("{\"a\":1"), 0, "unclosed object after value" },
    { S("{\"a\""), 0, "unclosed object after key" },
    { S("{\"a\":"), 0, "unclosed object after colon" },
    { S("{\"a\":[}"), 0, "mismatched close" },
    { S("[}"), 0, "array closed by brace" },
    { S("{]"), 0, "object closed by bracket" },
    { S("]"), 0, "stray close bracket" },
    { S("}"), 0, "stray close brace" },
    { S("{\"a\":1}}"), 0, "extra close" },
    { S("1 2"), 0, "two root numbers" },
    { S("{} {}"), 0, "two root objects" },
    { S("[] x"), 0, "garbage after root" },
    { S("1 ,"), 0, "comma after root" },
    { S("\"abc"), 0, "unclosed string" },
    { S("\"\\\""), 0, "escaped quote leaves string open" },
    { S("\"\\x\""), 0, "bad escape \\x" },
    { S("\"\\U0041\""), 0, "upper-case \\U" },
    { S("\"\\u\""), 0, "empty \\u" },
    { S("\"\\u12\""), 0, "short \\u" },
    { S("\"\\u12G4\""), 0, "non-hex \\u" },
    { S("\"\\ud800\""), 0, "lone high surrogate" },
    { S("\"\\udc00\""), 0, "lone low surrogate" },
    { S("\"\\ud800\\u0041\""), 0, "high surrogate then BMP escape" },
    { S("\"\\ud800x\""), 0, "high surrogate then text" },
    { S("\"\\ud800\\\\\""), 0, "high surrogate then backslash escape" },
    { S("\"\\udbff\\udbff\""), 0, "two high surrogates" },
    { S("\"\\ude00\\ud83d\""), 0, "reversed pair" },
    { S("\"\xc0\xaf\""), 0, "overlong 2-byte" },
    { S("\"\xc1\xbf\""), 0, "overlong C1" },
    { S("\"\xe0\x80\xaf\""), 0, "overlong 3-byte" },
    { S("\"\xf0\x80\x80\xaf\""), 0, "overlong 4-byte" },
    { S("\"\xed\xa0\x80\""), 0, "UTF-8 encoded high surrogate" },
    { S("\"\xed\xbf\xbf\""), 0, "UTF-8 encoded low surrogate" },
    { S("\"\xf4\x90\x80\x80\""), 0, "above U+10FFFF" },
    { S("\"\xf5\x80\x80\x80\""), 0, "lead byte F5" },
    { S("\"\xff\""), 0, "byte FF" },
    { S("\"\x80\""), 0, "stray continuation" },
    { S("\"\xc3\""), 0, "truncated 2-byte" },
    { S("\"\xe2\x82\""), 0, "truncated 3-byte" },
    { S("\"\xf0\x9f\x98\""), 0, "truncated 4-byte" },
    { S("\"\xc3\x28\""), 0, "bad continuation" },
    { S("\"\xe2\x28\xa1\""), 0, "bad second byte of 3" },
    { S("\"a long ascii prefix \xc3\""), 0, "truncated after fast path" },
    { S("\xc3\xa9"), 0, "raw UTF-8 outside a string" },
    { S("\xef\xbb\xbf[]"), 0, "byte order mark" },
    { S("\"a\0b\""), 0, "NUL in string" },
    { S("[1]\0"), 0, "NUL after root" },
    { S("\0"), 0, "NUL alone" },
    { S("[\0]"), 0, "NUL in array" },
    { S("\"\x01\""), 0, "control char in string" },
    { S("\"a\tb\""), 0, "raw tab in string" },
    { S("\"a\nb\""), 0, "raw newline in string" },
    { S("\"0123456789\x1f\""), 0, "control char after fast path" },
    { S("[1,\v2]"), 0, "vertical tab is not whitespace" },
    { S("[1,\f2]"), 0, "form feed is not whitespace" },
    { S("tru"), 0, "truncated true" },
    { S("truex"), 0, "true then garbage" },
    { S("nul"), 0, "truncated null" },
    { S("True"), 0, "capitalised literal" },
    { S("null1"), 0, "null then digit" },
    { S("/* c */ 1"), 0, "block comment" },
    { S("[1] // c"), 0, "line comment" },
    { S("[\"\xe2\x82\xac\" \"x\"]"), 0, "missing comma after string" },
    { S("[[[[1]]]]"), 3, "nesting deeper than 3" },
    { S("{\"a\":{\"b\":{}}}"), 2, "object nesting deeper than 2" },
};

static void
test_json_invalid_inputs (void **state)
{
    fixture_t *fx = *state;
    size_t n = sizeof s_invalid / sizeof s_invalid [0];
    assert_true (n >= 60);
    for (size_t i = 0; i < n; i++) {
        const invalid_t *c = &s_invalid [i];
        if (s_parse (fx, c->json, c->len, c->max_depth) != -1)
            fail_msg ("accepted invalid input #%zu (%s)", i, c->why);
        assert_true (strlen (fx->doc.err) > 0);
        assert_int_equal (fx->doc.count, 0);
        assert_true (fx->doc.err_off <= c->len);
    }
}

typedef struct {
    const char *json;
    size_t len;
    uint32_t tokens;            //  Expected token count
    int root;                   //  Expected root type
} valid_t;

static const valid_t s_valid [] = {
    { S("[]"), 1, QN_JSON_ARRAY },
    { S("{}"), 1, QN_JSON_OBJECT },
    { S("[[]]"), 2, QN_JSON_ARRAY },
    { S("[[[]],[{}],{}]"), 6, QN_JSON_ARRAY },
    { S("{\"\":{}}"), 3, QN_JSON_OBJECT },
    { S(" \t\r\n[ \t\r\n1 \t\r\n, \t\r\n2 \t\r\n] \t\r\n"), 3, QN_JSON_ARRAY },
    { S("{ \"a\" : 1 , \"b\" : [ ] }"), 5, QN_JSON_OBJECT },
    { S("{\"a\":{\"a\":{\"a\":{}}}}"), 7, QN_JSON_OBJECT },
    { S("{\"a\":1,\"a\":2}"), 5, QN_JSON_OBJECT },
    { S("[1,[2,[3,[4]]]]"), 8, QN_JSON_ARRAY },
    { S("[null,true,false]"), 4, QN_JSON_ARRAY },
    { S("0"), 1, QN_JSON_NUMBER },
    { S("-0"), 1, QN_JSON_NUMBER },
    { S("-0.0e-0"), 1, QN_JSON_NUMBER },
    { S("1E+2"), 1, QN_JSON_NUMBER },
    { S("1e-2"), 1, QN_JSON_NUMBER },
    { S("123456789012345678901234567890"), 1, QN_JSON_NUMBER },
    { S("1e999999"), 1, QN_JSON_NUMBER },
    { S("-1.7976931348623157e308"), 1, QN_JSON_NUMBER },
    { S("true"), 1, QN_JSON_TRUE },
    { S("false"), 1, QN_JSON_FALSE },
    { S(" null "), 1, QN_JSON_NULL },
    { S("\"\""), 1, QN_JSON_STRING },
    { S("\"\\u0000\""), 1, QN_JSON_STRING },
    { S("\"\\ud83d\\ude00\""), 1, QN_JSON_STRING },
    { S("\"\\uDBFF\\uDFFF\""), 1, QN_JSON_STRING },
    { S("\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u0041\""), 1, QN_JSON_STRING },
    { S("\"\\u00e9\\u20AC\\uFFFF\""), 1, QN_JSON_STRING },
    { S("\"/\""), 1, QN_JSON_STRING },
    { S("\"\x7f\""), 1, QN_JSON_STRING },
    { S("\"\xc2\x80\xdf\xbf\""), 1, QN_JSON_STRING },
    { S("\"\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xef\xbf\xbf\""), 1, QN_JSON_STRING },
    { S("\"\xf0\x90\x80\x80\xf4\x8f\xbf\xbf\""), 1, QN_JSON_STRING },
    { S("[\"a string longer than eight bytes with \\\\ and \xc3\xa9 and \xe2\x82\xac\"]"),
      2, QN_JSON_ARRAY },
    { S("{\"k\\u0000\":1}"), 3, QN_JSON_OBJECT },
    { S("[\"\",\"\",\"\"]"), 4, QN_JSON_ARRAY },
    { S("{\"a\":[{\"b\":[{}]}],\"c\":\"d\"}"), 9, QN_JSON_OBJECT },
    { S("\"\"\r\n"), 1, QN_JSON_STRING },
};

static void
test_json_valid_inputs (void **state)
{
    fixture_t *fx = *state;
    size_t n = sizeof s_valid / sizeof s_valid [0];
    assert_true (n >= 30);
    for (size_t i = 0; i < n; i++) {
        const valid_t *c = &s_valid [i];
        if (s_parse (fx, c->json, c->len, 0) != 0)
            fail_msg ("rejected valid input #%zu: %s", i, fx->doc.err);
        assert_int_equal (fx->doc.count, c->tokens);
        assert_int_equal (qn_json_type (&fx->doc, 0), c->root);
        assert_int_equal (s_check_tree (&fx->doc), 0);
    }
}

static void
test_json_error_messages (void **state)
{
    fixture_t *fx = *state;
    assert_int_equal (s_parse (fx, S(""), 0), -1);
    assert_string_equal (fx->doc.err, "empty input");
    assert_int_equal (s_parse (fx, S("[1,x]"), 0), -1);
    assert_non_null (strstr (fx->doc.err, "unexpected character 'x' at offset 3"));
    assert_int_equal (fx->doc.err_off, 3);
    assert_int_equal (s_parse (fx, S("[1,\0]"), 0), -1);
    assert_non_null (strstr (fx->doc.err, "0x00"));
    assert_int_equal (fx->doc.err_off, 3);
    assert_int_equal (s_parse (fx, S("[1"), 0), -1);
    assert_non_null (strstr (fx->doc.err, "end of input"));
    assert_int_equal (s_parse (fx, S("\"ab\xc0\xaf\""), 0), -1);
    assert_non_null (strstr (fx->doc.err, "UTF-8"));
    assert_int_equal (fx->doc.err_off, 3);
    assert_int_equal (s_parse (fx, S("\"\\ud800\""), 0), -1);
    assert_non_null (strstr (fx->doc.err, "surrogate"));
    assert_int_equal (s_parse (fx, S("007"), 0), -1);
    assert_non_null (strstr (fx->doc.err, "leading zero"));
    assert_int_equal (s_parse (fx, S("[[1]]"), 1), -1);
    assert_non_null (strstr (fx->doc.err, "nesting deeper than 1"));
    assert_int_equal (fx->doc.err_off, 1);
}


//  --------------------------------------------------------------------------
//  Limits: nesting, size, big numbers, reuse

static char *
s_nested (int depth, size_t *len)
{
    char *s = qn_malloc ((size_t) depth * 2);
    memset (s, '[', (size_t) depth);
    memset (s + depth, ']', (size_t) depth);
    *len = (size_t) depth * 2;
    return s;
}

static void
test_json_deep_nesting (void **state)
{
    fixture_t *fx = *state;
    size_t len;
    char *s = s_nested (100000, &len);
    assert_int_equal (s_parse (fx, s, len, 100000), 0);
    assert_int_equal (fx->doc.count, 100000);
    assert_int_equal (fx->doc.toks [0].next, 100000);
    assert_int_equal (fx->doc.toks [99999].len, 2);
    assert_int_equal (s_parse (fx, s, len, 99999), -1);
    assert_int_equal (fx->doc.err_off, 99999);
    //  Unclosed at full depth
    assert_int_equal (s_parse (fx, s, len - 1, 100000), -1);
    free (s);

    s = s_nested (QN_JSON_DEFAULT_DEPTH, &len);
    assert_int_equal (s_parse (fx, s, len, 0), 0);
    free (s);
    s = s_nested (QN_JSON_DEFAULT_DEPTH + 1, &len);
    assert_int_equal (s_parse (fx, s, len, 0), -1);
    assert_non_null (strstr (fx->doc.err, "nesting"));
    free (s);

    //  Deep objects: {"a":{"a":...1...}}
    qn_buf_t b = QN_BUF_INIT;
    for (int i = 0; i < 5000; i++)
        qn_buf_puts (&b, "{\"a\":");
    qn_buf_putc (&b, '1');
    for (int i = 0; i < 5000; i++)
        qn_buf_putc (&b, '}');
    assert_int_equal (s_parse (fx, b.data, b.len, 5000), 0);
    assert_int_equal (fx->doc.count, 10001);
    assert_int_equal (s_check_tree (&fx->doc), 0);
    assert_int_equal (s_parse (fx, b.data, b.len, 4999), -1);
    qn_buf_free (&b);
}

static void
test_json_too_large (void **state)
{
    fixture_t *fx = *state;
    //  The size check comes before any byte is read
    char tiny [] = "[]";
    assert_int_equal (qn_json_parse (&fx->doc, tiny, (size_t) QN_JSON_MAX_LEN + 1, 0), -1);
    assert_non_null (strstr (fx->doc.err, "too large"));
    assert_int_equal (qn_json_parse (&fx->doc, tiny, 2, 0), 0);
}

static void
test_json_big_numbers (void **state)
{
    fixture_t *fx = *state;
    char digits [402];
    digits [0] = '9';
    memset (digits + 1, '7', 399);
    assert_int_equal (s_parse (fx, digits, 400, 0), 0);
    int64_t i;
    double d;
    assert_int_equal (qn_json_int (&fx->doc, 0, &i), -1);
    assert_int_equal (qn_json_number (&fx->doc, 0, &d), -1);   //  Overflows a double

    digits [0] = '-';
    digits [1] = '0';
    digits [2] = '.';
    assert_int_equal (s_parse (fx, digits, 400, 0), 0);
    assert_int_equal (qn_json_number (&fx->doc, 0, &d), 0);
    assert_true (d < -0.777 && d > -0.778);

    assert_int_equal (s_parse (fx, S("[1e400,1e-400,1.5,-2.5E3,1e999999999999]"), 0), 0);
    assert_int_equal (qn_json_number (&fx->doc, 1, &d), -1);
    assert_int_equal (qn_json_number (&fx->doc, 2, &d), 0);
    assert_true (d == 0.0);
    assert_int_equal (qn_json_number (&fx->doc, 3, &d), 0);
    assert_true (d == 1.5);
    assert_int_equal (qn_json_number (&fx->doc, 4, &d), 0);
    assert_true (d == -2500.0);
    assert_int_equal (qn_json_number (&fx->doc, 5, &d), -1);
    assert_int_equal (qn_json_number (&fx->doc, 0, &d), -1);  //  Array
}

static void
test_json_int_edges (void **state)
{
    fixture_t *fx = *state;
    const char *json = "[9223372036854775807,9223372036854775808,"
                       "-9223372036854775808,-9223372036854775809,"
                       "0,-0,12,-12,1.0,1e3,18446744073709551616,"
                       "99999999999999999999,\"1\",true,null]";
    assert_int_equal (s_parse (fx, json, strlen (json), 0), 0);

    int64_t v = 42;
    assert_int_equal (qn_json_int (&fx->doc, qn_json_child (&fx->doc, 0, 0), &v), 0);
    assert_true (v == INT64_MAX);
    assert_int_equal (qn_json_int (&fx->doc, qn_json_child (&fx->doc, 0, 1), &v), -1);
    assert_int_equal (qn_json_int (&fx->doc, qn_json_child (&fx->doc, 0, 2), &v), 0);
    assert_true (v == INT64_MIN);
    assert_int_equal (qn_json_int (&fx->doc, qn_json_child (&fx->doc, 0, 3), &v), -1);
    assert_int_equal (qn_json_int (&fx->doc, qn_json_child (&fx->doc, 0, 4), &v), 0);
    assert_true (v == 0);
    assert_int_equal (qn_json_int (&fx->doc, qn_json_child (&fx->doc, 0, 5), &v), 0);
    assert_true (v == 0);
    assert_int_equal (qn_json_int (&fx->doc, qn_json_child (&fx->doc, 0, 6), &v), 0);
    assert_true (v == 12);
    assert_int_equal (qn_json_int (&fx->doc, qn_json_child (&fx->doc, 0, 7), &v), 0);
    assert_true (v == -12);
    for (uint32_t i = 8; i < 15; i++)
        assert_int_equal (qn_json_int (&fx->doc, qn_json_child (&fx->doc, 0, i), &v), -1);
    assert_int_equal (qn_json_int (&fx->doc, -1, &v), -1);
    assert_int_equal (qn_json_int (&fx->doc, 1000, &v), -1);
    double d;
    assert_int_equal (qn_json_number (&fx->doc, qn_json_child (&fx->doc, 0, 9), &d), 0);
    assert_true (d == 1000.0);
}

static void
test_json_reuse (void **state)
{
    fixture_t *fx = *state;
    qn_buf_t b = QN_BUF_INIT;
    qn_buf_putc (&b, '[');
    for (int i = 0; i < 10000; i++)
        qn_buf_printf (&b, "%s{\"id\":%d,\"payload\":{\"v\":\"x%d\"}}", i? ",": "", i, i);
    qn_buf_putc (&b, ']');
    assert_int_equal (s_parse (fx, b.data, b.len, 0), 0);
    assert_int_equal (fx->doc.count, 1 + 10000 * 7);
    assert_int_equal (qn_json_size (&fx->doc, 0), 10000);
    assert_int_equal (s_check_tree (&fx->doc), 0);
    int n = 0;
    for (int t = qn_json_first (&fx->doc, 0); t >= 0; t = qn_json_next_sibling (&fx->doc, 0, t)) {
        int64_t id;
        assert_int_equal (qn_json_int (&fx->doc, qn_json_get (&fx->doc, t, "id"), &id), 0);
        assert_int_equal (id, n);
        n++;
    }
    assert_int_equal (n, 10000);
    uint32_t cap = fx->doc.cap;
    qn_buf_free (&b);

    //  A failed parse leaves no tokens; the next one reuses the array
    assert_int_equal (s_parse (fx, S("[1,"), 0), -1);
    assert_int_equal (fx->doc.count, 0);
    assert_int_equal (s_parse (fx, S("[1,2]"), 0), 0);
    assert_int_equal (fx->doc.count, 3);
    assert_int_equal (fx->doc.cap, cap);

    //  Freed and re-initialised docs work again
    qn_json_doc_free (&fx->doc);
    qn_json_doc_init (&fx->doc);
    assert_int_equal (s_parse (fx, S("{\"a\":[]}"), 0), 0);
    assert_int_equal (fx->doc.count, 3);
}

//  Mutates valid documents byte by byte; the parser must never crash or
//  over-read, and whatever it accepts must be a consistent tree.
static void
test_json_mutations (void **state)
{
    fixture_t *fx = *state;
    static const char *docs [] = {
        "{\"a\":[1,2.5e-3,\"x\\u00e9\\ud83d\\ude00\"],\"b\":{\"c\":null,\"d\":[true,false]}}",
        "[\"0123456789abcdef\\n\xe2\x82\xac\xf0\x9f\x98\x80\",-0,{}]",
    };
    static const uint8_t subst [] = {
        '"', '\\', '[', ']', '{', '}', ',', ':', '0', '-', 'e', '.', 'u',
        ' ', 'd', 0x00, 0x1f, 0x80, 0xbf, 0xc3, 0xed, 0xf0, 0xff
    };
    char buf [128];
    for (size_t d = 0; d < sizeof docs / sizeof docs [0]; d++) {
        size_t len = strlen (docs [d]);
        assert_true (len < sizeof buf);
        for (size_t pos = 0; pos < len; pos++) {
            for (size_t k = 0; k < sizeof subst; k++) {
                memcpy (buf, docs [d], len);
                buf [pos] = (char) subst [k];
                if (s_parse (fx, buf, len, 0) == 0) {
                    assert_int_equal (s_check_tree (&fx->doc), 0);
                    assert_true (qn_utf8_valid (buf, len));
                }
                //  And with the byte deleted
                memcpy (buf, docs [d], pos);
                memcpy (buf + pos, docs [d] + pos + 1, len - pos - 1);
                if (s_parse (fx, buf, len - 1, 0) == 0)
                    assert_int_equal (s_check_tree (&fx->doc), 0);
            }
        }
    }
}


//  --------------------------------------------------------------------------
//  Lookups and value access

static const char s_lookup_doc [] =
    "{\"name\":\"orders\",\"n\":3,\"list\":[10,20,30],"
    "\"nested\":{\"a\":{\"b\":true}},\"esc\\u0041pe\":null,\"e\":\"\","
    "\"empty\":[],\"f\":false,\"n\":4}";

static void
test_json_lookups (void **state)
{
    fixture_t *fx = *state;
    qn_json_doc_t *doc = &fx->doc;
    assert_int_equal (s_parse (fx, S(s_lookup_doc), 0), 0);
    assert_int_equal (qn_json_size (doc, 0), 9);

    int t = qn_json_get (doc, 0, "name");
    assert_true (qn_json_str_eq (doc, t, "orders"));
    assert_false (qn_json_str_eq (doc, t, "order"));
    assert_false (qn_json_str_eq (doc, t, "orders!"));
    int64_t v;
    assert_int_equal (qn_json_int (doc, qn_json_get (doc, 0, "n"), &v), 0);
    assert_int_equal (v, 3);           //  First match wins
    assert_true (qn_json_is_null (doc, qn_json_get (doc, 0, "escApe")));
    assert_int_equal (qn_json_get (doc, 0, "esc\\u0041pe"), -1);
    assert_int_equal (qn_json_get (doc, 0, "missing"), -1);
    assert_int_equal (qn_json_get (doc, 0, ""), -1);
    assert_true (qn_json_str_eq (doc, qn_json_get (doc, 0, "e"), ""));
    bool b = true;
    assert_int_equal (qn_json_bool (doc, qn_json_get (doc, 0, "f"), &b), 0);
    assert_false (b);
    assert_int_equal (qn_json_bool (doc, qn_json_get (doc, 0, "n"), &b), -1);

    //  Nested paths and raw spans
    int nested = qn_json_get (doc, 0, "nested");
    int inner = qn_json_get (doc, qn_json_get (doc, nested, "a"), "b");
    assert_int_equal (qn_json_bool (doc, inner, &b), 0);
    assert_true (b);
    size_t len;
    const char *raw = qn_json_raw (doc, nested, &len);
    assert_int_equal (len, strlen ("{\"a\":{\"b\":true}}"));
    assert_memory_equal (raw, "{\"a\":{\"b\":true}}", len);
    assert_ptr_equal (raw, fx->copy + (strstr (s_lookup_doc, "{\"a\"") - s_lookup_doc));
    raw = qn_json_raw (doc, 0, &len);
    assert_ptr_equal (raw, fx->copy);
    assert_int_equal (len, sizeof s_lookup_doc - 1);
    assert_null (qn_json_raw (doc, 10000, &len));
    assert_int_equal (len, 0);

    //  Arrays: child, iteration, bounds
    int list = qn_json_get (doc, 0, "list");
    assert_int_equal (qn_json_type (doc, list), QN_JSON_ARRAY);
    assert_int_equal (qn_json_int (doc, qn_json_child (doc, list, 1), &v), 0);
    assert_int_equal (v, 20);
    assert_int_equal (qn_json_child (doc, list, 3), -1);
    int64_t sum = 0;
    int n = 0;
    for (int e = qn_json_first (doc, list); e >= 0; e = qn_json_next_sibling (doc, list, e)) {
        assert_int_equal (qn_json_int (doc, e, &v), 0);
        sum += v;
        n++;
    }
    assert_int_equal (n, 3);
    assert_int_equal (sum, 60);
    int empty = qn_json_get (doc, 0, "empty");
    assert_int_equal (qn_json_first (doc, empty), -1);
    assert_int_equal (qn_json_child (doc, empty, 0), -1);
    assert_int_equal (qn_json_size (doc, empty), 0);

    //  Objects: child gives values, iteration gives keys
    assert_true (qn_json_str_eq (doc, qn_json_child (doc, 0, 0), "orders"));
    assert_int_equal (qn_json_child (doc, 0, 3), nested);
    assert_int_equal (qn_json_child (doc, 0, 9), -1);
    const char *keys [] = { "name", "n", "list", "nested", "escApe", "e", "empty", "f", "n" };
    n = 0;
    for (int k = qn_json_first (doc, 0); k >= 0; k = qn_json_next_sibling (doc, 0, k)) {
        assert_true (n < 9);
        assert_true (qn_json_str_eq (doc, k, keys [n]));
        assert_int_equal (qn_json_child (doc, 0, (uint32_t) n), k + 1);
        n++;
    }
    assert_int_equal (n, 9);

    //  Wrong types and out-of-range indices
    assert_int_equal (qn_json_get (doc, list, "a"), -1);
    assert_int_equal (qn_json_get (doc, -1, "a"), -1);
    assert_int_equal (qn_json_get (doc, 10000, "a"), -1);
    assert_int_equal (qn_json_first (doc, t), -1);
    assert_int_equal (qn_json_child (doc, t, 0), -1);
    assert_int_equal (qn_json_next_sibling (doc, list, list), -1);
    assert_int_equal (qn_json_next_sibling (doc, list, 0), -1);
    assert_int_equal (qn_json_next_sibling (doc, list, 10000), -1);
    assert_int_equal (qn_json_type (doc, -1), -1);
    assert_int_equal (qn_json_type (doc, 10000), -1);
    assert_int_equal (qn_json_size (doc, t), -1);
    assert_false (qn_json_is_null (doc, t));
    assert_false (qn_json_is_null (doc, -5));
    assert_false (qn_json_str_eq (doc, list, "x"));
    assert_false (qn_json_str_eq (doc, t, NULL));
    double d;
    assert_int_equal (qn_json_number (doc, t, &d), -1);
    assert_int_equal (qn_json_bool (doc, 10000, &b), -1);
}

static void
test_json_str_unescape (void **state)
{
    fixture_t *fx = *state;
    qn_json_doc_t *doc = &fx->doc;
    assert_int_equal (s_parse (fx, S("[\"a\\\"b\\\\c\\/d\\be\\ff\\ng\\rh\\ti"
                                     "\\u0041\\u00e9\\u20ac\\ud83d\\ude00\\uDBFF\\uDFFF\","
                                     "\"x\\u0000y\",\"plain \xc3\xa9\",\"\",1,"
                                     "\"long run of plain text then \\n\"]"), 0), 0);
    const char want [] = "a\"b\\c/d\be\ff\ng\rh\tiA\xc3\xa9\xe2\x82\xac"
                         "\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf";
    qn_buf_t out = QN_BUF_INIT;
    qn_buf_puts (&out, "pre:");
    assert_int_equal (qn_json_str (doc, 1, &out), 0);
    assert_int_equal (out.len, 4 + sizeof want - 1);
    assert_memory_equal (out.data, "pre:", 4);
    assert_memory_equal (out.data + 4, want, sizeof want - 1);
    assert_int_equal (out.data [out.len], 0);
    assert_true (qn_json_str_eq (doc, 1, want));
    assert_false (qn_json_str_eq (doc, 1, "a\"b"));

    //  Embedded NUL: kept, counted, reported
    qn_buf_reset (&out);
    assert_int_equal (qn_json_str (doc, 2, &out), 1);
    assert_int_equal (out.len, 3);
    assert_memory_equal (out.data, "x\0y", 4);
    assert_false (qn_json_str_eq (doc, 2, "x"));
    assert_false (qn_json_str_eq (doc, 2, "xy"));

    qn_buf_reset (&out);
    assert_int_equal (qn_json_str (doc, 3, &out), 0);
    assert_string_equal (out.data, "plain \xc3\xa9");
    assert_true (qn_json_str_eq (doc, 3, "plain \xc3\xa9"));

    qn_buf_reset (&out);
    assert_int_equal (qn_json_str (doc, 4, &out), 0);
    assert_int_equal (out.len, 0);
    assert_non_null (out.data);
    assert_string_equal (out.data, "");
    assert_true (qn_json_str_eq (doc, 4, ""));
    assert_false (qn_json_str_eq (doc, 4, "a"));

    assert_int_equal (qn_json_str (doc, 5, &out), -1);
    assert_int_equal (qn_json_str (doc, 0, &out), -1);
    assert_int_equal (qn_json_str (doc, 99, &out), -1);

    qn_buf_reset (&out);
    assert_int_equal (qn_json_str (doc, 6, &out), 0);
    assert_string_equal (out.data, "long run of plain text then \n");
    assert_true (qn_json_str_eq (doc, 6, "long run of plain text then \n"));
    assert_false (qn_json_str_eq (doc, 6, "long run of plain text then \n!"));
    assert_false (qn_json_str_eq (doc, 6, "long run of plain text then "));
    qn_buf_free (&out);
}


//  --------------------------------------------------------------------------
//  Writer

static void
test_jw_exact_output (void **state)
{
    (void) state;
    qn_buf_t out = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &out);
    qn_jw_obj (&w);
    qn_jw_kint (&w, "a", 1);
    qn_jw_key (&w, "b");
    qn_jw_arr (&w);
    qn_jw_bool (&w, true);
    qn_jw_null (&w);
    qn_jw_str (&w, "x");
    qn_jw_str (&w, NULL);
    qn_jw_arr (&w);
    qn_jw_arr_end (&w);
    qn_jw_obj (&w);
    qn_jw_obj_end (&w);
    qn_jw_arr_end (&w);
    qn_jw_key (&w, "c");
    qn_jw_obj (&w);
    qn_jw_obj_end (&w);
    qn_jw_kraw (&w, "p", "{\"k\": [1, 2]}", 13);
    qn_jw_kbool (&w, "f", false);
    qn_jw_knull (&w, "z");
    qn_jw_kstr (&w, "q\"", "\t\x01");
    qn_jw_kuint (&w, "u", UINT64_MAX);
    qn_jw_kint (&w, "m", INT64_MIN);
    qn_jw_kdouble (&w, "d", 0.1);
    qn_jw_kdouble (&w, "nan", NAN);
    qn_jw_kdouble (&w, "inf", -INFINITY);
    qn_jw_obj_end (&w);
    assert_string_equal (out.data,
        "{\"a\":1,\"b\":[true,null,\"x\",null,[],{}],\"c\":{},"
        "\"p\":{\"k\": [1, 2]},\"f\":false,\"z\":null,\"q\\\"\":\"\\t\\u0001\","
        "\"u\":18446744073709551615,\"m\":-9223372036854775808,\"d\":0.1,"
        "\"nan\":null,\"inf\":null}");
    assert_int_equal (w.depth, 0);

    //  Top-level sequence of scalars is comma-separated too
    qn_buf_reset (&out);
    qn_jw_init (&w, &out);
    qn_jw_arr (&w);
    qn_jw_raw (&w, "1", 1);
    qn_jw_uint (&w, 2);
    qn_jw_int (&w, -3);
    qn_jw_double (&w, 2.5);
    qn_jw_arr_end (&w);
    assert_string_equal (out.data, "[1,2,-3,2.5]");
    qn_buf_free (&out);
}

static void
test_jw_round_trip (void **state)
{
    fixture_t *fx = *state;
    qn_json_doc_t *doc = &fx->doc;
    //  Every byte below 0x80 (NUL and all controls included), then UTF-8
    char all [128];
    for (int i = 0; i < 128; i++)
        all [i] = (char) i;
    const char *utf8 = "h\xc3\xa9llo \xe2\x82\xac \xf0\x9d\x84\x9e \xef\xbf\xbf";
    const double doubles [] = {
        0.1, 1.0 / 3, -2.5, 1e300, -1e-300, 5e-324, 123456.789,
        9007199254740993.0, 0.0, -0.0, 1.7976931348623157e308
    };
    qn_buf_t out = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &out);
    qn_jw_obj (&w);
    qn_jw_key (&w, "all");
    qn_jw_strn (&w, all, sizeof all);
    qn_jw_kstr (&w, "utf8", utf8);
    qn_jw_kstr (&w, "k\n\"ey\\", "v");
    qn_jw_kint (&w, "min", INT64_MIN);
    qn_jw_kint (&w, "max", INT64_MAX);
    qn_jw_kuint (&w, "umax", UINT64_MAX);
    qn_jw_key (&w, "doubles");
    qn_jw_arr (&w);
    for (size_t i = 0; i < sizeof doubles / sizeof doubles [0]; i++)
        qn_jw_double (&w, doubles [i]);
    qn_jw_arr_end (&w);
    qn_jw_kbool (&w, "t", true);
    qn_jw_knull (&w, "z");
    qn_jw_kraw (&w, "raw", "[1,{\"x\":\"y\"}]", 13);
    qn_jw_obj_end (&w);

    assert_int_equal (s_parse (fx, out.data, out.len, 0), 0);
    assert_int_equal (s_check_tree (doc), 0);

    qn_buf_t s = QN_BUF_INIT;
    assert_int_equal (qn_json_str (doc, qn_json_get (doc, 0, "all"), &s), 1);
    assert_int_equal (s.len, sizeof all);
    assert_memory_equal (s.data, all, sizeof all);
    qn_buf_reset (&s);
    assert_int_equal (qn_json_str (doc, qn_json_get (doc, 0, "utf8"), &s), 0);
    assert_string_equal (s.data, utf8);
    assert_true (qn_json_str_eq (doc, qn_json_get (doc, 0, "k\n\"ey\\"), "v"));
    int64_t v;
    assert_int_equal (qn_json_int (doc, qn_json_get (doc, 0, "min"), &v), 0);
    assert_true (v == INT64_MIN);
    assert_int_equal (qn_json_int (doc, qn_json_get (doc, 0, "max"), &v), 0);
    assert_true (v == INT64_MAX);
    size_t len;
    const char *raw = qn_json_raw (doc, qn_json_get (doc, 0, "umax"), &len);
    assert_int_equal (len, 20);
    assert_memory_equal (raw, "18446744073709551615", 20);
    int arr = qn_json_get (doc, 0, "doubles");
    assert_int_equal (qn_json_size (doc, arr), sizeof doubles / sizeof doubles [0]);
    for (uint32_t i = 0; i < sizeof doubles / sizeof doubles [0]; i++) {
        double d;
        assert_int_equal (qn_json_number (doc, qn_json_child (doc, arr, i), &d), 0);
        assert_true (d == doubles [i]);
        assert_true (!signbit (d) == !signbit (doubles [i]));
    }
    bool b;
    assert_int_equal (qn_json_bool (doc, qn_json_get (doc, 0, "t"), &b), 0);
    assert_true (b);
    assert_true (qn_json_is_null (doc, qn_json_get (doc, 0, "z")));
    raw = qn_json_raw (doc, qn_json_get (doc, 0, "raw"), &len);
    assert_int_equal (len, 13);
    assert_memory_equal (raw, "[1,{\"x\":\"y\"}]", 13);

    //  0.1 is written in its shortest form
    raw = qn_json_raw (doc, qn_json_child (doc, arr, 0), &len);
    assert_int_equal (len, 3);
    assert_memory_equal (raw, "0.1", 3);
    qn_buf_free (&s);
    qn_buf_free (&out);
}

static void
test_jw_error_body (void **state)
{
    fixture_t *fx = *state;
    qn_buf_t out = QN_BUF_INIT;
    qn_json_error_body (&out, "bad \"queue\"\n");
    assert_string_equal (out.data, "{\"error\":\"bad \\\"queue\\\"\\n\"}");
    assert_int_equal (s_parse (fx, out.data, out.len, 0), 0);
    assert_true (qn_json_str_eq (&fx->doc, qn_json_get (&fx->doc, 0, "error"),
                                 "bad \"queue\"\n"));
    qn_buf_reset (&out);
    qn_json_error_body (&out, NULL);
    assert_string_equal (out.data, "{\"error\":\"\"}");
    qn_buf_free (&out);
}

static void
test_utf8_valid (void **state)
{
    (void) state;
    static const struct {
        const char *s;
        size_t len;
        bool ok;
    } cases [] = {
        { S(""), true },
        { S("orders"), true },
        { S("caf\xc3\xa9-\xe2\x82\xac-\xf0\x9f\x98\x80"), true },
        { S("\xf4\x8f\xbf\xbf"), true },
        { S("\xed\x9f\xbf"), true },
        { S("a\0b"), false },
        { S("\xc0\xaf"), false },
        { S("\xe0\x80\xaf"), false },
        { S("\xf0\x80\x80\xaf"), false },
        { S("\xed\xa0\x80"), false },
        { S("\xf4\x90\x80\x80"), false },
        { S("\xf8\x88\x80\x80\x80"), false },
        { S("\x80"), false },
        { S("abc\xc3"), false },
        { S("\xe2\x82"), false },
        { S("\xff"), false },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        char *copy = qn_malloc (cases [i].len);
        memcpy (copy, cases [i].s, cases [i].len);
        if (qn_utf8_valid (copy, cases [i].len) != cases [i].ok)
            fail_msg ("utf8 case %zu", i);
        free (copy);
    }
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_json_golden_trees, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_json_every_prefix_fails, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_json_invalid_inputs, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_json_valid_inputs, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_json_error_messages, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_json_deep_nesting, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_json_too_large, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_json_big_numbers, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_json_int_edges, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_json_reuse, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_json_mutations, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_json_lookups, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_json_str_unescape, s_setup, s_teardown),
        cmocka_unit_test (test_jw_exact_output),
        cmocka_unit_test_setup_teardown (test_jw_round_trip, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_jw_error_body, s_setup, s_teardown),
        cmocka_unit_test (test_utf8_valid),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
