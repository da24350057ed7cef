/*  wire/json_write.c - compact JSON writer
    Appends compact JSON to a qn_buf_t and places commas itself (qn_jw_t
    keeps one bit per open container). Strings are escaped per RFC 8259,
    copying runs of bytes that need no escape in one append; doubles are
    written with the fewest digits that read back the same value, and
    non-finite ones as null. The parser is in wire/json_parse.c; both are
    declared in wire/json.h. Pure: no I/O, no globals besides a constant
    table.
*/
#include "wire/json.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Bytes the writer must escape: ", \ and everything below 0x20.
static const uint8_t s_jw_esc [256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    ['"'] = 1, ['\\'] = 1
};

//  --------------------------------------------------------------------------
//  Writer

void
qn_jw_init (qn_jw_t *w, qn_buf_t *out)
{
    memset (w, 0, sizeof *w);
    w->out = out;
}

//  Emits the separator a new value needs at the current depth.
static void
s_jw_pre (qn_jw_t *w)
{
    if (w->after_key) {
        w->after_key = 0;
        return;
    }
    if (w->need_comma [w->depth])
        qn_buf_putc (w->out, ',');
    w->need_comma [w->depth] = 1;
}

static void
s_jw_open (qn_jw_t *w, char c)
{
    s_jw_pre (w);
    assert (w->depth + 1 < QN_JW_MAX_DEPTH);
    qn_buf_putc (w->out, c);
    w->need_comma [++w->depth] = 0;
}

static void
s_jw_close (qn_jw_t *w, char c)
{
    assert (w->depth > 0 && !w->after_key);
    w->depth--;
    qn_buf_putc (w->out, c);
}

//  Appends s as a quoted, escaped JSON string, copying unescaped runs whole.
static void
s_jw_escape (qn_buf_t *out, const char *s, size_t len)
{
    static const char hex [] = "0123456789abcdef";
    qn_buf_reserve (out, len + 2);
    qn_buf_putc (out, '"');
    size_t i = 0;
    while (i < len) {
        size_t run = i;
        while (run < len && !s_jw_esc [(uint8_t) s [run]])
            run++;
        qn_buf_append (out, s + i, run - i);
        if (run == len)
            break;
        uint8_t c = (uint8_t) s [run];
        char esc [7] = { '\\', 0, 0, 0, 0, 0, 0 };
        size_t elen = 2;
        switch (c) {
            case '"':  esc [1] = '"'; break;
            case '\\': esc [1] = '\\'; break;
            case '\b': esc [1] = 'b'; break;
            case '\f': esc [1] = 'f'; break;
            case '\n': esc [1] = 'n'; break;
            case '\r': esc [1] = 'r'; break;
            case '\t': esc [1] = 't'; break;
            default:
                memcpy (esc + 1, "u00", 3);
                esc [4] = hex [c >> 4];
                esc [5] = hex [c & 15];
                elen = 6;
        }
        qn_buf_append (out, esc, elen);
        i = run + 1;
    }
    qn_buf_putc (out, '"');
}

void
qn_jw_obj (qn_jw_t *w)
{
    s_jw_open (w, '{');
}

void
qn_jw_obj_end (qn_jw_t *w)
{
    s_jw_close (w, '}');
}

void
qn_jw_arr (qn_jw_t *w)
{
    s_jw_open (w, '[');
}

void
qn_jw_arr_end (qn_jw_t *w)
{
    s_jw_close (w, ']');
}

void
qn_jw_key (qn_jw_t *w, const char *key)
{
    assert (!w->after_key);
    s_jw_pre (w);
    s_jw_escape (w->out, key, strlen (key));
    qn_buf_putc (w->out, ':');
    w->after_key = 1;
}

void
qn_jw_str (qn_jw_t *w, const char *s)
{
    if (!s)
        qn_jw_null (w);
    else
        qn_jw_strn (w, s, strlen (s));
}

void
qn_jw_strn (qn_jw_t *w, const char *s, size_t len)
{
    s_jw_pre (w);
    s_jw_escape (w->out, s, len);
}

void
qn_jw_int (qn_jw_t *w, int64_t v)
{
    s_jw_pre (w);
    qn_buf_printf (w->out, "%" PRId64, v);
}

void
qn_jw_uint (qn_jw_t *w, uint64_t v)
{
    s_jw_pre (w);
    qn_buf_printf (w->out, "%" PRIu64, v);
}

void
qn_jw_double (qn_jw_t *w, double v)
{
    if (!isfinite (v)) {
        qn_jw_null (w);
        return;
    }
    //  %g never writes a bare "." or a leading "+", so its output is JSON
    char tmp [40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf (tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod (tmp, NULL) == v)
            break;
    }
    s_jw_pre (w);
    qn_buf_puts (w->out, tmp);
}

void
qn_jw_bool (qn_jw_t *w, bool v)
{
    s_jw_pre (w);
    qn_buf_puts (w->out, v? "true": "false");
}

void
qn_jw_null (qn_jw_t *w)
{
    s_jw_pre (w);
    qn_buf_append (w->out, "null", 4);
}

void
qn_jw_raw (qn_jw_t *w, const char *json, size_t len)
{
    s_jw_pre (w);
    qn_buf_append (w->out, json, len);
}

void
qn_jw_kstr (qn_jw_t *w, const char *k, const char *v)
{
    qn_jw_key (w, k);
    qn_jw_str (w, v);
}

void
qn_jw_kint (qn_jw_t *w, const char *k, int64_t v)
{
    qn_jw_key (w, k);
    qn_jw_int (w, v);
}

void
qn_jw_kuint (qn_jw_t *w, const char *k, uint64_t v)
{
    qn_jw_key (w, k);
    qn_jw_uint (w, v);
}

void
qn_jw_kdouble (qn_jw_t *w, const char *k, double v)
{
    qn_jw_key (w, k);
    qn_jw_double (w, v);
}

void
qn_jw_kbool (qn_jw_t *w, const char *k, bool v)
{
    qn_jw_key (w, k);
    qn_jw_bool (w, v);
}

void
qn_jw_knull (qn_jw_t *w, const char *k)
{
    qn_jw_key (w, k);
    qn_jw_null (w);
}

void
qn_jw_kraw (qn_jw_t *w, const char *k, const char *json, size_t len)
{
    qn_jw_key (w, k);
    qn_jw_raw (w, json, len);
}

void
qn_json_error_body (qn_buf_t *out, const char *msg)
{
    qn_jw_t w;
    qn_jw_init (&w, out);
    qn_jw_obj (&w);
    qn_jw_kstr (&w, "error", msg? msg: "");
    qn_jw_obj_end (&w);
}
