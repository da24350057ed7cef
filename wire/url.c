/*  wire/url.c - request-target parsing
    One heap block per url holds the decoded path, the decoded segments and
    the decoded query parameters; every string in it is NUL-terminated and
    nothing in it contains a NUL. Decoding never grows a string, so the
    block's size is known from the target's length before any decoding.
    Pure: no I/O. Fails by returning -1 with the url left empty.
*/
#include "wire/url.h"
#include "base/buf.h"

#include <assert.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static int
s_hex (char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int
qn_url_decode (char *dst, const char *src, size_t len, bool plus_is_space)
{
    assert (len <= INT_MAX);
    size_t out = 0;
    for (size_t i = 0; i < len; i++) {
        char c = src [i];
        if (c == '%') {
            if (len - i < 3)
                return -1;
            int hi = s_hex (src [i + 1]);
            int lo = s_hex (src [i + 2]);
            if (hi < 0 || lo < 0)
                return -1;
            c = (char) (hi * 16 + lo);
            i += 2;
        }
        else
        if (c == '+' && plus_is_space)
            c = ' ';
        //  out <= i, so decoding in place never overwrites unread input
        dst [out++] = c;
    }
    return (int) out;
}

//  Decodes src into *cursor as a NUL-terminated string and advances the
//  cursor. Returns the decoded length, or -1 for a bad escape or a NUL.
static int
s_decode_string (char **cursor, const char *src, size_t len, bool plus_is_space)
{
    char *dst = *cursor;
    int out = qn_url_decode (dst, src, len, plus_is_space);
    if (out < 0 || memchr (dst, 0, (size_t) out))
        return -1;
    dst [out] = 0;
    *cursor = dst + out + 1;
    return out;
}

//  True if a '/'-separated component of the decoded path is "..". Checks
//  the decoded path so that "%2e%2e" and "..%2f" are caught as well.
static bool
s_has_dot_dot (const char *path, size_t len)
{
    size_t start = 0;
    for (size_t i = 0; i <= len; i++)
        if (i == len || path [i] == '/') {
            if (i - start == 2 && path [start] == '.' && path [start + 1] == '.')
                return true;
            start = i + 1;
        }
    return false;
}

//  Decodes the path and its segments. raw starts with '/'.
static int
s_parse_path (qn_url_t *url, const char *raw, size_t len, char **cursor)
{
    //  A trailing '/' ends an empty segment that is dropped: "/a/" == "/a"
    if (len > 1 && raw [len - 1] == '/')
        len--;
    int path_len = s_decode_string (cursor, raw, len, false);
    if (path_len < 0)
        return -1;
    url->path = *cursor - path_len - 1;
    if (s_has_dot_dot (url->path, (size_t) path_len))
        return -1;
    if (len == 1)
        return 0;               //  "/": no segments

    //  Split the raw path, so "%2F" stays inside its segment
    const char *seg = raw + 1;
    const char *end = raw + len;
    while (true) {
        const char *slash = memchr (seg, '/', (size_t) (end - seg));
        const char *seg_end = slash? slash: end;
        if (url->seg_count == QN_URL_MAX_SEGMENTS)
            return -1;
        int seg_len = s_decode_string (cursor, seg, (size_t) (seg_end - seg), false);
        if (seg_len < 0)
            return -1;
        url->segments [url->seg_count] = *cursor - seg_len - 1;
        url->seg_len [url->seg_count] = (size_t) seg_len;
        url->seg_count++;
        if (!slash)
            return 0;
        seg = slash + 1;
    }
}

//  Decodes "name=value&..." pairs in order; empty pairs are skipped and
//  pairs beyond QN_URL_MAX_PARAMS ignored.
static int
s_parse_query (qn_url_t *url, const char *raw, size_t len, char **cursor)
{
    const char *end = raw + len;
    const char *pair = raw;
    while (pair < end && url->param_count < QN_URL_MAX_PARAMS) {
        const char *amp = memchr (pair, '&', (size_t) (end - pair));
        const char *pair_end = amp? amp: end;
        if (pair_end > pair) {
            const char *eq = memchr (pair, '=', (size_t) (pair_end - pair));
            const char *name_end = eq? eq: pair_end;
            const char *value = eq? eq + 1: pair_end;
            qn_query_param_t *param = &url->params [url->param_count];
            int name_len = s_decode_string (cursor, pair, (size_t) (name_end - pair), true);
            if (name_len < 0)
                return -1;
            param->name = *cursor - name_len - 1;
            param->name_len = (size_t) name_len;
            int value_len = s_decode_string (cursor, value, (size_t) (pair_end - value), true);
            if (value_len < 0)
                return -1;
            param->value = *cursor - value_len - 1;
            param->value_len = (size_t) value_len;
            url->param_count++;
        }
        pair = pair_end + 1;
    }
    return 0;
}

int
qn_url_parse (qn_url_t *url, const char *target, size_t len)
{
    assert (url);
    memset (url, 0, sizeof *url);
    if (!target || len == 0 || target [0] != '/' || len > INT_MAX)
        return -1;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char) target [i];
        if (c <= ' ' || c == 0x7f || c == '#')
            return -1;
    }
    const char *query = memchr (target, '?', len);
    size_t path_len = query? (size_t) (query - target): len;
    size_t query_len = query? len - path_len - 1: 0;

    //  Decoding never grows: the path and each segment fit in their raw
    //  bytes plus a NUL; each parameter in its raw pair plus two NULs
    size_t size = (path_len + 1)
                + (path_len + QN_URL_MAX_SEGMENTS)
                + (query_len + 2 * QN_URL_MAX_PARAMS);
    url->storage = qn_malloc (size);
    char *cursor = url->storage;
    if (s_parse_path (url, target, path_len, &cursor)
    ||  (query && s_parse_query (url, query + 1, query_len, &cursor))) {
        qn_url_free (url);
        return -1;
    }
    assert (cursor <= url->storage + size);
    return 0;
}

void
qn_url_free (qn_url_t *url)
{
    assert (url);
    free (url->storage);
    memset (url, 0, sizeof *url);
}

const char *
qn_url_param (const qn_url_t *url, const char *name, size_t *len)
{
    assert (url);
    assert (name);
    size_t name_len = strlen (name);
    for (uint32_t i = 0; i < url->param_count; i++) {
        const qn_query_param_t *param = &url->params [i];
        if (param->name_len == name_len && memcmp (param->name, name, name_len) == 0) {
            if (len)
                *len = param->value_len;
            return param->value;
        }
    }
    return NULL;
}

//  Parses an optionally signed decimal int64; false if anything else.
static bool
s_parse_int64 (const char *s, size_t len, int64_t *out)
{
    size_t i = 0;
    bool negative = s [0] == '-';
    if (s [0] == '-' || s [0] == '+')
        i++;
    if (i == len)
        return false;
    uint64_t limit = negative? (uint64_t) INT64_MAX + 1: (uint64_t) INT64_MAX;
    uint64_t value = 0;
    for (; i < len; i++) {
        if (s [i] < '0' || s [i] > '9')
            return false;
        uint64_t digit = (uint64_t) (s [i] - '0');
        if (value > (limit - digit) / 10)
            return false;
        value = value * 10 + digit;
    }
    //  -(INT64_MAX + 1) is computed without signed overflow
    *out = negative? (int64_t) (0 - value): (int64_t) value;
    return true;
}

int64_t
qn_url_param_int (const qn_url_t *url, const char *name, int64_t dflt, bool *bad)
{
    if (bad)
        *bad = false;
    size_t len;
    const char *value = qn_url_param (url, name, &len);
    if (!value || len == 0)
        return dflt;
    int64_t result;
    if (!s_parse_int64 (value, len, &result)) {
        if (bad)
            *bad = true;
        return dflt;
    }
    return result;
}

bool
qn_url_param_bool (const qn_url_t *url, const char *name, bool dflt)
{
    size_t len;
    const char *value = qn_url_param (url, name, &len);
    if (!value || len == 0)
        return dflt;
    return (len == 4 && memcmp (value, "true", 4) == 0)
        || (len == 1 && value [0] == '1');
}
