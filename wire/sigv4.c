/*  wire/sigv4.c - AWS Signature Version 4 (see sigv4.h)
*/
#include "wire/sigv4.h"

#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char s_hex [] = "0123456789abcdef";

static void
s_to_hex (const unsigned char *bytes, size_t len, char *out)
{
    for (size_t i = 0; i < len; i++) {
        out [2 * i] = s_hex [bytes [i] >> 4];
        out [2 * i + 1] = s_hex [bytes [i] & 15];
    }
    out [2 * len] = 0;
}

void
qn_sigv4_sha256_hex (const void *data, size_t len, char out_hex [65])
{
    unsigned char md [SHA256_DIGEST_LENGTH];
    SHA256 (data, len, md);
    s_to_hex (md, sizeof md, out_hex);
}

bool
qn_sigv4_equal (const char *a_hex, const char *b_hex)
{
    size_t la = strlen (a_hex), lb = strlen (b_hex);
    unsigned diff = (unsigned) (la ^ lb);
    size_t n = la < lb ? la : lb;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char) a_hex [i] ^ (unsigned char) b_hex [i];
    return diff == 0 && la == 64;
}

static bool
s_unreserved (unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
        || c == '-' || c == '_' || c == '.' || c == '~';
}

static void
s_encode (qn_buf_t *out, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char) s [i];
        if (s_unreserved (c))
            qn_buf_putc (out, (char) c);
        else
            qn_buf_printf (out, "%%%02X", c);
    }
}

static int
s_hexval (char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

//  Percent-decodes s (a malformed escape stays as it is; '+' stays '+').
static void
s_decode (qn_buf_t *out, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        int hi, lo;
        if (s [i] == '%' && i + 2 < len
        &&  (hi = s_hexval (s [i + 1])) >= 0 && (lo = s_hexval (s [i + 2])) >= 0) {
            qn_buf_putc (out, (char) (hi * 16 + lo));
            i += 2;
        }
        else
            qn_buf_putc (out, s [i]);
    }
}

// ------------------------------------------------------------ canonical URI
static void
s_canonical_uri (const qn_sigv4_request_t *r, qn_buf_t *out)
{
    const char *path = r->path && r->path [0] ? r->path : "/";
    if (r->s3) {
        qn_buf_puts (out, path);
        return;
    }
    size_t len = strlen (path);
    //  Segments kept after removing "", "." and "..": offsets into path.
    size_t cap = len / 2 + 2, count = 0;
    size_t *starts = malloc (cap * sizeof *starts);
    size_t *lens = malloc (cap * sizeof *lens);
    if (!starts || !lens)
        abort ();
    size_t i = 0;
    while (i < len) {
        while (i < len && path [i] == '/')
            i++;
        size_t s = i;
        while (i < len && path [i] != '/')
            i++;
        size_t n = i - s;
        if (n == 0 || (n == 1 && path [s] == '.'))
            continue;
        if (n == 2 && path [s] == '.' && path [s + 1] == '.') {
            if (count)
                count--;
            continue;
        }
        starts [count] = s;
        lens [count] = n;
        count++;
    }
    for (size_t k = 0; k < count; k++) {
        qn_buf_putc (out, '/');
        s_encode (out, path + starts [k], lens [k]);
    }
    if (count == 0 || (len > 0 && path [len - 1] == '/'))
        qn_buf_putc (out, '/');
    free (starts);
    free (lens);
}

// ------------------------------------------------------------ canonical query
typedef struct {
    char *name;
    char *value;
} s_pair_t;

static int
s_pair_cmp (const void *a_, const void *b_)
{
    const s_pair_t *a = a_, *b = b_;
    int c = strcmp (a->name, b->name);
    return c ? c : strcmp (a->value, b->value);
}

static char *
s_reencode (const char *s, size_t len)
{
    qn_buf_t raw = QN_BUF_INIT, enc = QN_BUF_INIT;
    s_decode (&raw, s, len);
    s_encode (&enc, raw.data ? raw.data : "", raw.len);
    qn_buf_free (&raw);
    if (!enc.data)
        return qn_strdup ("");
    return qn_buf_detach (&enc, NULL);
}

static void
s_canonical_query (const char *query, qn_buf_t *out)
{
    if (!query || !query [0])
        return;
    size_t len = strlen (query), cap = 8, count = 0;
    s_pair_t *pairs = qn_malloc (cap * sizeof *pairs);
    size_t i = 0;
    while (i <= len) {
        size_t s = i;
        while (i < len && query [i] != '&')
            i++;
        if (i > s) {
            const char *eq = memchr (query + s, '=', i - s);
            size_t nlen = eq ? (size_t) (eq - (query + s)) : i - s;
            if (count == cap) {
                cap *= 2;
                pairs = qn_realloc (pairs, cap * sizeof *pairs);
            }
            pairs [count].name = s_reencode (query + s, nlen);
            pairs [count].value = eq ? s_reencode (eq + 1, (size_t) (query + i - eq - 1))
                                     : qn_strdup ("");
            count++;
        }
        i++;
    }
    qsort (pairs, count, sizeof *pairs, s_pair_cmp);
    for (size_t k = 0; k < count; k++) {
        if (k)
            qn_buf_putc (out, '&');
        qn_buf_printf (out, "%s=%s", pairs [k].name, pairs [k].value);
        free (pairs [k].name);
        free (pairs [k].value);
    }
    free (pairs);
}

// ------------------------------------------------------------ canonical headers
//  Appends the value trimmed, inner runs of spaces and tabs as one space.
static void
s_trimall (qn_buf_t *out, const char *v, size_t len)
{
    size_t a = 0, b = len;
    while (a < b && (v [a] == ' ' || v [a] == '\t'))
        a++;
    while (b > a && (v [b - 1] == ' ' || v [b - 1] == '\t'))
        b--;
    bool space = false;
    for (size_t i = a; i < b; i++) {
        if (v [i] == ' ' || v [i] == '\t') {
            if (!space)
                qn_buf_putc (out, ' ');
            space = true;
        }
        else {
            qn_buf_putc (out, v [i]);
            space = false;
        }
    }
}

static void
s_canonical_headers (const qn_sigv4_request_t *r, qn_buf_t *out)
{
    const char *list = r->signed_headers ? r->signed_headers : "";
    const char *p = list;
    while (*p) {
        const char *e = strchr (p, ';');
        size_t n = e ? (size_t) (e - p) : strlen (p);
        if (n) {
            for (size_t k = 0; k < n; k++) {
                char c = p [k];
                qn_buf_putc (out, (char) (c >= 'A' && c <= 'Z' ? c + 32 : c));
            }
            qn_buf_putc (out, ':');
            bool first = true;
            for (uint32_t h = 0; h < r->header_count; h++) {
                const qn_http_header_t *hd = &r->headers [h];
                if (hd->name_len != n || strncasecmp (hd->name, p, n))
                    continue;
                if (!first)
                    qn_buf_putc (out, ',');
                s_trimall (out, hd->value, hd->value_len);
                first = false;
            }
            qn_buf_putc (out, '\n');
        }
        if (!e)
            break;
        p = e + 1;
    }
}

void
qn_sigv4_canonical_request (const qn_sigv4_request_t *r, qn_buf_t *out)
{
    qn_buf_printf (out, "%s\n", r->method);
    s_canonical_uri (r, out);
    qn_buf_putc (out, '\n');
    s_canonical_query (r->query, out);
    qn_buf_putc (out, '\n');
    s_canonical_headers (r, out);
    qn_buf_putc (out, '\n');
    for (const char *c = r->signed_headers ? r->signed_headers : ""; *c; c++)
        qn_buf_putc (out, (char) (*c >= 'A' && *c <= 'Z' ? *c + 32 : *c));
    qn_buf_printf (out, "\n%s", r->payload_hash ? r->payload_hash : "");
}

// ------------------------------------------------------------ signing
static void
s_hmac (const void *key, size_t key_len, const void *data, size_t len, unsigned char out [32])
{
    unsigned int out_len = 32;
    HMAC (EVP_sha256 (), key, (int) key_len, data, len, out, &out_len);
}

void
qn_sigv4_signature (const qn_sigv4_request_t *r, const char *secret, char out_hex [65])
{
    qn_buf_t canonical = QN_BUF_INIT;
    qn_sigv4_canonical_request (r, &canonical);
    char canonical_hash [65];
    qn_sigv4_sha256_hex (canonical.data, canonical.len, canonical_hash);
    qn_buf_free (&canonical);

    char date [9] = "";
    snprintf (date, sizeof date, "%.8s", r->amz_date ? r->amz_date : "");
    qn_buf_t sts = QN_BUF_INIT;
    qn_buf_printf (&sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s",
                   r->amz_date ? r->amz_date : "", date, r->region, r->service, canonical_hash);

    qn_buf_t k0 = QN_BUF_INIT;
    qn_buf_printf (&k0, "AWS4%s", secret);
    unsigned char k [32], sig [32];
    s_hmac (k0.data, k0.len, date, strlen (date), k);
    s_hmac (k, 32, r->region, strlen (r->region), k);
    s_hmac (k, 32, r->service, strlen (r->service), k);
    s_hmac (k, 32, "aws4_request", 12, k);
    s_hmac (k, 32, sts.data, sts.len, sig);
    s_to_hex (sig, sizeof sig, out_hex);
    OPENSSL_cleanse (k0.data, k0.len);
    OPENSSL_cleanse (k, sizeof k);
    qn_buf_free (&k0);
    qn_buf_free (&sts);
}

int
qn_sigv4_authorization (const qn_sigv4_request_t *r, const char *access_key,
                        const char *secret, char *out, size_t cap)
{
    char sig [65];
    qn_sigv4_signature (r, secret, sig);
    int n = snprintf (out, cap, "AWS4-HMAC-SHA256 Credential=%s/%.8s/%s/%s/aws4_request, "
                      "SignedHeaders=%s, Signature=%s",
                      access_key, r->amz_date ? r->amz_date : "", r->region, r->service,
                      r->signed_headers ? r->signed_headers : "", sig);
    return n < 0 || (size_t) n >= cap ? -1 : 0;
}

// ------------------------------------------------------------ parsing
//  Copies [s, s + n) into dst of size cap; -1 when it does not fit or is empty.
static int
s_copy (char *dst, size_t cap, const char *s, size_t n)
{
    if (n == 0 || n >= cap)
        return -1;
    memcpy (dst, s, n);
    dst [n] = 0;
    return 0;
}

int
qn_sigv4_parse_authorization (const char *value, size_t len, qn_sigv4_auth_t *out)
{
    memset (out, 0, sizeof *out);
    static const char algo [] = "AWS4-HMAC-SHA256";
    size_t alen = sizeof algo - 1;
    if (len <= alen || memcmp (value, algo, alen) || (value [alen] != ' ' && value [alen] != '\t'))
        return -1;
    bool have_cred = false, have_signed = false, have_sig = false;
    size_t i = alen;
    while (i < len) {
        while (i < len && (value [i] == ' ' || value [i] == '\t' || value [i] == ','))
            i++;
        if (i >= len)
            break;
        size_t s = i;
        while (i < len && value [i] != ',')
            i++;
        size_t e = i;
        while (e > s && (value [e - 1] == ' ' || value [e - 1] == '\t'))
            e--;
        const char *eq = memchr (value + s, '=', e - s);
        if (!eq)
            return -1;
        size_t klen = (size_t) (eq - (value + s));
        const char *v = eq + 1;
        size_t vlen = (size_t) (value + e - v);
        if (klen == 10 && !memcmp (value + s, "Credential", 10)) {
            //  AK/yyyymmdd/region/service/aws4_request (the key id has no '/').
            const char *parts [5];
            size_t plen [5];
            size_t np = 0, ps = 0;
            for (size_t k = 0; k <= vlen; k++) {
                if (k == vlen || v [k] == '/') {
                    if (np == 5)
                        return -1;
                    parts [np] = v + ps;
                    plen [np] = k - ps;
                    np++;
                    ps = k + 1;
                }
            }
            if (np != 5 || plen [1] != 8 || plen [4] != 12 || memcmp (parts [4], "aws4_request", 12)
            ||  s_copy (out->access_key, sizeof out->access_key, parts [0], plen [0])
            ||  s_copy (out->date, sizeof out->date, parts [1], plen [1])
            ||  s_copy (out->region, sizeof out->region, parts [2], plen [2])
            ||  s_copy (out->service, sizeof out->service, parts [3], plen [3]))
                return -1;
            for (size_t k = 0; k < 8; k++)
                if (out->date [k] < '0' || out->date [k] > '9')
                    return -1;
            have_cred = true;
        }
        else
        if (klen == 13 && !memcmp (value + s, "SignedHeaders", 13)) {
            if (s_copy (out->signed_headers, sizeof out->signed_headers, v, vlen))
                return -1;
            have_signed = true;
        }
        else
        if (klen == 9 && !memcmp (value + s, "Signature", 9)) {
            if (vlen != 64 || s_copy (out->signature, sizeof out->signature, v, vlen))
                return -1;
            for (size_t k = 0; k < 64; k++) {
                char c = out->signature [k];
                if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
                    return -1;
            }
            have_sig = true;
        }
        else
            return -1;
    }
    return have_cred && have_signed && have_sig ? 0 : -1;
}

// ------------------------------------------------------------------ request time
static int
s_digits (const char *s, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s [i] < '0' || s [i] > '9')
            return -1;
        v = v * 10 + (s [i] - '0');
    }
    return v;
}

static int64_t
s_epoch (int year, int mon, int day, int hour, int min, int sec)
{
    static const int mdays [12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    if (year < 1970 || year > 9999 || mon < 1 || mon > 12 || day < 1
    ||  day > mdays [mon - 1] + (mon == 2 && leap) || hour > 23 || min > 59 || sec > 60)
        return -1;
    //  Days from the civil date (proleptic Gregorian), 1970-01-01 = 0.
    int y = year - (mon <= 2);
    int era = y / 400;
    int yoe = y - era * 400;
    int doy = (153 * (mon + (mon > 2? -3: 9)) + 2) / 5 + day - 1;
    int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    int64_t days = (int64_t) era * 146097 + doe - 719468;
    return days * 86400 + hour * 3600 + min * 60 + sec;
}

int64_t
qn_sigv4_request_time (const char *x_amz_date, size_t x_len, const char *date,
                       size_t date_len, char out [17])
{
    int64_t t = -1;
    if (x_amz_date) {
        const char *s = x_amz_date;
        if (x_len != 16 || s [8] != 'T' || s [15] != 'Z')
            return -1;
        int Y = s_digits (s, 4), M = s_digits (s + 4, 2), D = s_digits (s + 6, 2);
        int h = s_digits (s + 9, 2), m = s_digits (s + 11, 2), sec = s_digits (s + 13, 2);
        if (Y < 0 || M < 0 || D < 0 || h < 0 || m < 0 || sec < 0)
            return -1;
        t = s_epoch (Y, M, D, h, m, sec);
        if (t < 0)
            return -1;
        memcpy (out, s, 16);
        out [16] = 0;
        return t;
    }
    if (!date)
        return -1;
    //  "Sun, 06 Nov 1994 08:49:37 GMT": 29 characters exactly.
    static const char *months = "JanFebMarAprMayJunJulAugSepOctNovDec";
    const char *s = date;
    if (date_len != 29 || s [3] != ',' || s [4] != ' ' || s [7] != ' ' || s [11] != ' '
    ||  s [16] != ' ' || s [19] != ':' || s [22] != ':' || s [25] != ' '
    ||  memcmp (s + 26, "GMT", 3))
        return -1;
    int M = 0;
    for (int i = 0; i < 12; i++)
        if (!memcmp (s + 8, months + i * 3, 3))
            M = i + 1;
    int D = s_digits (s + 5, 2), Y = s_digits (s + 12, 4);
    int h = s_digits (s + 17, 2), m = s_digits (s + 20, 2), sec = s_digits (s + 23, 2);
    if (!M || Y < 0 || D < 0 || h < 0 || m < 0 || sec < 0)
        return -1;
    t = s_epoch (Y, M, D, h, m, sec);
    if (t < 0)
        return -1;
    //  Every field was range-checked by s_epoch: the text is 16 characters.
    char tmp [64];
    snprintf (tmp, sizeof tmp, "%04d%02d%02dT%02d%02d%02dZ", Y, M, D, h, m, sec);
    memcpy (out, tmp, 16);
    out [16] = 0;
    return t;
}
