/*  wire/json_parse.c - strict JSON tokenizer and token readers
    Parsing is one pass over the input with no recursion and no per-token
    allocation: tokens go into one geometrically grown array, and while a
    container is open its `next` field holds its parent's index, so the open
    containers form a linked stack inside the token array itself. Strings are
    scanned eight bytes at a time and only bytes that need a decision (quote,
    backslash, control, non-ASCII) leave the fast path. The writer is in
    wire/json_write.c; both are declared in wire/json.h.
    Pure: no I/O, no globals besides constant tables. Owns the token array.
    Fails by returning -1 with doc->err set; nothing is left half-parsed.
*/
#include "wire/json.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

//  Whitespace per RFC 8259: space, tab, line feed, carriage return.
static const uint8_t s_ws [256] = {
    [' '] = 1, ['\t'] = 1, ['\n'] = 1, ['\r'] = 1
};


static int8_t
s_hexval (uint8_t c)
{
    if (c >= '0' && c <= '9')
        return (int8_t) (c - '0');
    c |= 0x20;                  //  Fold to lower case
    if (c >= 'a' && c <= 'f')
        return (int8_t) (c - 'a' + 10);
    return -1;
}

//  Four hex digits at p; -1 if any is not a hex digit. Caller checks bounds.
static int32_t
s_hex4 (const uint8_t *p)
{
    int32_t cp = 0;
    for (int i = 0; i < 4; i++) {
        int8_t v = s_hexval (p [i]);
        if (v < 0)
            return -1;
        cp = (cp << 4) | v;
    }
    return cp;
}

//  Length of the valid UTF-8 sequence whose lead byte (>= 0x80) is p [0],
//  with `avail` bytes readable; 0 if it is invalid (stray continuation,
//  overlong, UTF-16 surrogate, above U+10FFFF) or truncated.
static inline uint32_t
s_utf8_seq (const uint8_t *p, size_t avail)
{
    uint8_t c = p [0];
    if (c < 0xC2)               //  Continuation byte or overlong C0/C1
        return 0;
    if (c < 0xE0)
        return avail >= 2 && (p [1] & 0xC0) == 0x80? 2: 0;
    if (c < 0xF0) {
        uint8_t lo = c == 0xE0? 0xA0: 0x80;     //  E0: no overlongs
        uint8_t hi = c == 0xED? 0x9F: 0xBF;     //  ED: no surrogates
        return avail >= 3 && p [1] >= lo && p [1] <= hi
            && (p [2] & 0xC0) == 0x80? 3: 0;
    }
    if (c < 0xF5) {
        uint8_t lo = c == 0xF0? 0x90: 0x80;     //  F0: no overlongs
        uint8_t hi = c == 0xF4? 0x8F: 0xBF;     //  F4: nothing past U+10FFFF
        return avail >= 4 && p [1] >= lo && p [1] <= hi
            && (p [2] & 0xC0) == 0x80 && (p [3] & 0xC0) == 0x80? 4: 0;
    }
    return 0;
}

//  Encodes code point cp (valid, not a surrogate) as UTF-8; returns bytes.
static int
s_utf8_encode (uint32_t cp, uint8_t *out)
{
    if (cp < 0x80) {
        out [0] = (uint8_t) cp;
        return 1;
    }
    if (cp < 0x800) {
        out [0] = (uint8_t) (0xC0 | (cp >> 6));
        out [1] = (uint8_t) (0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out [0] = (uint8_t) (0xE0 | (cp >> 12));
        out [1] = (uint8_t) (0x80 | ((cp >> 6) & 0x3F));
        out [2] = (uint8_t) (0x80 | (cp & 0x3F));
        return 3;
    }
    out [0] = (uint8_t) (0xF0 | (cp >> 18));
    out [1] = (uint8_t) (0x80 | ((cp >> 12) & 0x3F));
    out [2] = (uint8_t) (0x80 | ((cp >> 6) & 0x3F));
    out [3] = (uint8_t) (0x80 | (cp & 0x3F));
    return 4;
}

//  Nonzero if the 8 bytes in w hold a byte that ends the string fast path:
//  '"', '\\', < 0x20 or >= 0x80. The lowest set bit marks the first such
//  byte exactly (borrows only run upward from a real match).
static inline uint64_t
s_special_mask (uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ull;
    const uint64_t high = 0x8080808080808080ull;
    uint64_t q = w ^ (ones * '"');
    uint64_t b = w ^ (ones * '\\');
    uint64_t quote = (q - ones) & ~q;
    uint64_t bslash = (b - ones) & ~b;
    uint64_t ctrl = (w - ones * 0x20) & ~w;
    return ((quote | bslash | ctrl) & high) | (w & high);
}


//  --------------------------------------------------------------------------
//  Parser

__attribute__ ((format (printf, 3, 4)))
static int
s_fail (qn_json_doc_t *doc, size_t off, const char *fmt, ...)
{
    va_list ap;
    va_start (ap, fmt);
    vsnprintf (doc->err, sizeof doc->err, fmt, ap);
    va_end (ap);
    doc->err_off = off;
    doc->count = 0;
    return -1;
}

//  Reports the byte at `off` (or the end of input) as unexpected; `want`
//  says what the grammar allowed there.
static int
s_unexpected (qn_json_doc_t *doc, size_t off, const char *want)
{
    if (off >= doc->len)
        return s_fail (doc, off, "unexpected end of input at offset %zu (expected %s)",
                       off, want);
    uint8_t c = (uint8_t) doc->buf [off];
    if (c > 0x20 && c < 0x7F)
        return s_fail (doc, off, "unexpected character '%c' at offset %zu (expected %s)",
                       c, off, want);
    return s_fail (doc, off, "unexpected byte 0x%02x at offset %zu (expected %s)",
                   c, off, want);
}

//  Makes room for one more token. Counts never exceed the input length
//  (every token consumes at least one byte), so capacity is capped there.
static void
s_grow (qn_json_doc_t *doc)
{
    uint32_t limit = doc->len > 16? (uint32_t) doc->len: 16;
    uint32_t cap = doc->cap? doc->cap * 2: (uint32_t) (doc->len / 8) + 16;
    if (cap > limit)
        cap = limit;
    if (cap <= doc->count)
        cap = doc->count + 1;
    doc->toks = qn_realloc (doc->toks, cap * sizeof (qn_json_tok_t));
    doc->cap = cap;
}

//  Validates one escape; *ppos is at the backslash and moves past the escape.
static int
s_scan_escape (qn_json_doc_t *doc, const uint8_t *p, uint32_t n, uint32_t *ppos)
{
    uint32_t pos = *ppos;
    if (pos + 1 >= n)
        return s_unexpected (doc, n, "an escape");
    switch (p [pos + 1]) {
        case '"': case '\\': case '/': case 'b':
        case 'f': case 'n': case 'r': case 't':
            *ppos = pos + 2;
            return 0;
        case 'u':
            break;
        default:
            return s_fail (doc, pos, "invalid escape '\\%c' at offset %u",
                           p [pos + 1] > 0x20 && p [pos + 1] < 0x7F? p [pos + 1]: '?', pos);
    }
    if (n - pos < 6)
        return s_unexpected (doc, n, "four hex digits");
    int32_t cp = s_hex4 (p + pos + 2);
    if (cp < 0)
        return s_fail (doc, pos, "invalid \\u escape at offset %u", pos);
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return s_fail (doc, pos, "lone low surrogate \\u%04x at offset %u", (unsigned) cp, pos);
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        //  A high surrogate must be followed at once by an escaped low one
        if ((n - pos > 6 && p [pos + 6] != '\\') || (n - pos > 7 && p [pos + 7] != 'u'))
            return s_fail (doc, pos, "lone high surrogate \\u%04x at offset %u", (unsigned) cp, pos);
        if (n - pos < 12)
            return s_unexpected (doc, n, "a low surrogate escape");
        int32_t lo = s_hex4 (p + pos + 8);
        if (lo < 0)
            return s_fail (doc, pos + 6, "invalid \\u escape at offset %u", pos + 6);
        if (lo < 0xDC00 || lo > 0xDFFF)
            return s_fail (doc, pos, "lone high surrogate \\u%04x at offset %u", (unsigned) cp, pos);
        *ppos = pos + 12;
        return 0;
    }
    *ppos = pos + 6;
    return 0;
}

//  Validates the string whose opening quote is at *ppos; moves *ppos past
//  the closing quote and sets *esc if it holds a backslash.
static int
s_scan_string (qn_json_doc_t *doc, const uint8_t *p, uint32_t n, uint32_t *ppos,
               uint8_t *esc)
{
    uint32_t pos = *ppos + 1;
    while (true) {
#if defined (__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        while (n - pos >= 8) {
            uint64_t w;
            memcpy (&w, p + pos, 8);
            uint64_t mask = s_special_mask (w);
            if (mask) {
                pos += (uint32_t) __builtin_ctzll (mask) >> 3;
                break;
            }
            pos += 8;
        }
#endif
        if (pos >= n)
            return s_unexpected (doc, n, "'\"' to close the string");
        uint8_t c = p [pos];
        if (c == '"') {
            *ppos = pos + 1;
            return 0;
        }
        if (c == '\\') {
            *esc = 1;
            if (s_scan_escape (doc, p, n, &pos))
                return -1;
        }
        else
        if (c >= 0x80) {
            uint32_t seq = s_utf8_seq (p + pos, n - pos);
            if (!seq)
                return s_fail (doc, pos, "invalid UTF-8 in string at offset %u", pos);
            pos += seq;
        }
        else
        if (c < 0x20)
            return s_fail (doc, pos, "control character 0x%02x in string at offset %u",
                           c, pos);
        else
            pos++;
    }
}

//  Validates the number starting at *ppos and moves *ppos past it. The
//  character after it is checked by the caller's grammar.
static int
s_scan_number (qn_json_doc_t *doc, const uint8_t *p, uint32_t n, uint32_t *ppos)
{
    uint32_t pos = *ppos;
    if (p [pos] == '-')
        pos++;
    if (pos >= n)
        return s_unexpected (doc, n, "a digit");
    if (p [pos] == '0') {
        pos++;
        if (pos < n && p [pos] >= '0' && p [pos] <= '9')
            return s_fail (doc, pos, "leading zero in number at offset %u", *ppos);
    }
    else
    if (p [pos] >= '1' && p [pos] <= '9') {
        while (pos < n && p [pos] >= '0' && p [pos] <= '9')
            pos++;
    }
    else
        return s_unexpected (doc, pos, "a digit");

    if (pos < n && p [pos] == '.') {
        pos++;
        if (pos >= n || p [pos] < '0' || p [pos] > '9')
            return s_unexpected (doc, pos, "a digit after '.'");
        while (pos < n && p [pos] >= '0' && p [pos] <= '9')
            pos++;
    }
    if (pos < n && (p [pos] == 'e' || p [pos] == 'E')) {
        pos++;
        if (pos < n && (p [pos] == '+' || p [pos] == '-'))
            pos++;
        if (pos >= n || p [pos] < '0' || p [pos] > '9')
            return s_unexpected (doc, pos, "a digit in the exponent");
        while (pos < n && p [pos] >= '0' && p [pos] <= '9')
            pos++;
    }
    *ppos = pos;
    return 0;
}

//  Checks for the literal `word` (true, false or null) at *ppos.
static int
s_scan_literal (qn_json_doc_t *doc, const uint8_t *p, uint32_t n, uint32_t *ppos,
                const char *word, uint32_t wlen)
{
    uint32_t pos = *ppos;
    for (uint32_t i = 1; i < wlen; i++)
        if (pos + i >= n || p [pos + i] != (uint8_t) word [i])
            return s_fail (doc, pos + i, "invalid literal at offset %u (expected %s)",
                           pos, word);
    *ppos = pos + wlen;
    return 0;
}

//  Scans the scalar at *ppos into token t (start already set).
static int
s_scan_scalar (qn_json_doc_t *doc, const uint8_t *p, uint32_t n, uint32_t *ppos,
               qn_json_tok_t *t)
{
    int rc;
    switch (p [*ppos]) {
        case '"':
            t->type = QN_JSON_STRING;
            rc = s_scan_string (doc, p, n, ppos, &t->has_escapes);
            break;
        case 't':
            t->type = QN_JSON_TRUE;
            rc = s_scan_literal (doc, p, n, ppos, "true", 4);
            break;
        case 'f':
            t->type = QN_JSON_FALSE;
            rc = s_scan_literal (doc, p, n, ppos, "false", 5);
            break;
        case 'n':
            t->type = QN_JSON_NULL;
            rc = s_scan_literal (doc, p, n, ppos, "null", 4);
            break;
        case '-': case '0': case '1': case '2': case '3': case '4':
        case '5': case '6': case '7': case '8': case '9':
            t->type = QN_JSON_NUMBER;
            rc = s_scan_number (doc, p, n, ppos);
            break;
        default:
            return s_unexpected (doc, *ppos, "a value");
    }
    t->len = *ppos - t->start;
    return rc;
}

//  The grammar is three states, as labels: `value` expects any value,
//  `key` expects an object key, `after` expects ',' or the closer of the
//  open container (or the end of input at the root). `cur` is the open
//  container, whose `next` field holds its parent until it closes.
int
qn_json_parse (qn_json_doc_t *doc, const char *buf, size_t len, int max_depth)
{
    doc->buf = buf;
    doc->len = len;
    doc->count = 0;
    doc->err [0] = 0;
    doc->err_off = 0;
    if (len > QN_JSON_MAX_LEN)
        return s_fail (doc, 0, "input too large: %zu bytes (limit %u)",
                       len, QN_JSON_MAX_LEN);
    if (max_depth <= 0)
        max_depth = QN_JSON_DEFAULT_DEPTH;

    //  Locals rather than doc fields: byte-sized stores through `t` would
    //  otherwise make the compiler reload doc->toks after every write
    const uint8_t *p = (const uint8_t *) buf;
    const uint32_t n = (uint32_t) len;
    qn_json_tok_t *toks = doc->toks;
    uint32_t cap = doc->cap;
    uint32_t pos = 0;
    uint32_t count = 0;
    uint32_t cur = NONE;
    uint32_t end;
    int depth = 0;
    qn_json_tok_t *t;

    while (pos < n && s_ws [p [pos]])
        pos++;
    if (pos == n)
        return s_fail (doc, pos, "empty input");

value:
    while (pos < n && s_ws [p [pos]])
        pos++;
    if (pos >= n)
        return s_unexpected (doc, pos, "a value");
    if (count == cap) {
        doc->count = count;
        s_grow (doc);
        toks = doc->toks;
        cap = doc->cap;
    }
    if (cur != NONE && toks [cur].type == QN_JSON_ARRAY)
        toks [cur].size++;
    t = &toks [count];
    t->start = pos;
    t->has_escapes = 0;
    t->size = 0;
    if (p [pos] == '[' || p [pos] == '{') {
        if (depth >= max_depth)
            return s_fail (doc, pos, "nesting deeper than %d at offset %u", max_depth, pos);
        depth++;
        bool is_obj = p [pos] == '{';
        t->type = is_obj? QN_JSON_OBJECT: QN_JSON_ARRAY;
        t->next = cur;
        cur = count++;
        pos++;
        while (pos < n && s_ws [p [pos]])
            pos++;
        if (pos < n && p [pos] == (is_obj? '}': ']'))
            goto close;
        if (is_obj)
            goto key;
        goto value;
    }
    //  `end` keeps `pos` itself from being address-taken (and so in memory)
    end = pos;
    if (s_scan_scalar (doc, p, n, &end, t))
        return -1;
    pos = end;
    t->next = ++count;

after:
    while (pos < n && s_ws [p [pos]])
        pos++;
    if (cur == NONE) {
        if (pos == n) {
            doc->count = count;
            return 0;
        }
        return s_unexpected (doc, pos, "end of input after the root value");
    }
    t = &toks [cur];
    if (pos < n && p [pos] == ',') {
        pos++;
        if (t->type == QN_JSON_OBJECT) {
            while (pos < n && s_ws [p [pos]])
                pos++;
            goto key;
        }
        goto value;
    }
    if (pos < n && p [pos] == (t->type == QN_JSON_OBJECT? '}': ']'))
        goto close;
    return s_unexpected (doc, pos, t->type == QN_JSON_OBJECT? "',' or '}'": "',' or ']'");

close:
    //  p [pos] closes `cur`: fix its length, pop it, and point it past its subtree
    t = &toks [cur];
    t->len = pos + 1 - t->start;
    cur = t->next;
    t->next = count;
    depth--;
    pos++;
    goto after;

key:
    if (pos >= n || p [pos] != '"')
        return s_unexpected (doc, pos, "'\"' to start an object key");
    if (count == cap) {
        doc->count = count;
        s_grow (doc);
        toks = doc->toks;
        cap = doc->cap;
    }
    toks [cur].size++;
    t = &toks [count];
    t->type = QN_JSON_STRING;
    t->start = pos;
    t->has_escapes = 0;
    t->size = 0;
    end = pos;
    if (s_scan_string (doc, p, n, &end, &t->has_escapes))
        return -1;
    pos = end;
    t->len = pos - t->start;
    t->next = ++count;
    while (pos < n && s_ws [p [pos]])
        pos++;
    if (pos >= n || p [pos] != ':')
        return s_unexpected (doc, pos, "':' after an object key");
    pos++;
    goto value;
}

void
qn_json_doc_init (qn_json_doc_t *doc)
{
    memset (doc, 0, sizeof *doc);
}

void
qn_json_doc_free (qn_json_doc_t *doc)
{
    free (doc->toks);
    doc->toks = NULL;
    doc->count = 0;
    doc->cap = 0;
}


//  --------------------------------------------------------------------------
//  Lookups and value access

static const qn_json_tok_t *
s_tok (const qn_json_doc_t *doc, int tok)
{
    return tok >= 0 && (uint32_t) tok < doc->count? &doc->toks [tok]: NULL;
}

static bool
s_is_container (const qn_json_tok_t *t)
{
    return t && (t->type == QN_JSON_ARRAY || t->type == QN_JSON_OBJECT);
}

int
qn_json_get (const qn_json_doc_t *doc, int obj, const char *key)
{
    const qn_json_tok_t *t = s_tok (doc, obj);
    if (!t || t->type != QN_JSON_OBJECT)
        return -1;
    uint32_t k = (uint32_t) obj + 1;
    for (uint32_t i = 0; i < t->size; i++) {
        if (qn_json_str_eq (doc, (int) k, key))
            return (int) k + 1;
        k = doc->toks [k + 1].next;
    }
    return -1;
}

int
qn_json_child (const qn_json_doc_t *doc, int container, uint32_t i)
{
    const qn_json_tok_t *t = s_tok (doc, container);
    if (!s_is_container (t) || i >= t->size)
        return -1;
    bool is_obj = t->type == QN_JSON_OBJECT;
    uint32_t k = (uint32_t) container + 1;
    while (i--)
        k = doc->toks [is_obj? k + 1: k].next;
    return (int) (is_obj? k + 1: k);
}

int
qn_json_first (const qn_json_doc_t *doc, int container)
{
    const qn_json_tok_t *t = s_tok (doc, container);
    if (!s_is_container (t) || t->size == 0)
        return -1;
    return container + 1;
}

int
qn_json_next_sibling (const qn_json_doc_t *doc, int container, int tok)
{
    const qn_json_tok_t *t = s_tok (doc, container);
    if (!s_is_container (t) || tok <= container || (uint32_t) tok >= t->next)
        return -1;
    //  For objects `tok` is a key; the next key follows its value's subtree
    uint32_t v = t->type == QN_JSON_OBJECT? (uint32_t) tok + 1: (uint32_t) tok;
    if (v >= t->next)
        return -1;
    uint32_t n = doc->toks [v].next;
    return n < t->next? (int) n: -1;
}

int
qn_json_type (const qn_json_doc_t *doc, int tok)
{
    const qn_json_tok_t *t = s_tok (doc, tok);
    return t? t->type: -1;
}

int64_t
qn_json_size (const qn_json_doc_t *doc, int tok)
{
    const qn_json_tok_t *t = s_tok (doc, tok);
    return s_is_container (t)? (int64_t) t->size: -1;
}

int
qn_json_int (const qn_json_doc_t *doc, int tok, int64_t *out)
{
    const qn_json_tok_t *t = s_tok (doc, tok);
    if (!t || t->type != QN_JSON_NUMBER)
        return -1;
    const char *s = doc->buf + t->start;
    uint32_t i = 0;
    bool neg = s [0] == '-';
    if (neg)
        i++;
    //  Accumulate the magnitude against the limit for this sign
    uint64_t limit = neg? (uint64_t) INT64_MAX + 1: (uint64_t) INT64_MAX;
    uint64_t mag = 0;
    for (; i < t->len; i++) {
        if (s [i] < '0' || s [i] > '9')
            return -1;          //  Fraction or exponent
        uint64_t d = (uint64_t) (s [i] - '0');
        if (mag > (limit - d) / 10)
            return -1;
        mag = mag * 10 + d;
    }
    if (!neg)
        *out = (int64_t) mag;
    else
        *out = mag == (uint64_t) INT64_MAX + 1? INT64_MIN: -(int64_t) mag;
    return 0;
}

int
qn_json_number (const qn_json_doc_t *doc, int tok, double *out)
{
    const qn_json_tok_t *t = s_tok (doc, tok);
    if (!t || t->type != QN_JSON_NUMBER)
        return -1;
    //  strtod needs a terminator the input may not have
    char local [64];
    char *tmp = t->len < sizeof local? local: qn_malloc (t->len + 1);
    memcpy (tmp, doc->buf + t->start, t->len);
    tmp [t->len] = 0;
    double v = strtod (tmp, NULL);
    if (tmp != local)
        free (tmp);
    if (isinf (v))
        return -1;
    *out = v;
    return 0;
}

int
qn_json_bool (const qn_json_doc_t *doc, int tok, bool *out)
{
    const qn_json_tok_t *t = s_tok (doc, tok);
    if (!t || (t->type != QN_JSON_TRUE && t->type != QN_JSON_FALSE))
        return -1;
    *out = t->type == QN_JSON_TRUE;
    return 0;
}

bool
qn_json_is_null (const qn_json_doc_t *doc, int tok)
{
    const qn_json_tok_t *t = s_tok (doc, tok);
    return t && t->type == QN_JSON_NULL;
}

//  Decodes the (validated) escape whose backslash is at s [*i] into `out`;
//  advances *i past it and returns the number of bytes written (1..4).
static int
s_unescape (const uint8_t *s, uint32_t *i, uint8_t *out)
{
    uint8_t c = s [*i + 1];
    *i += 2;
    switch (c) {
        case 'b': out [0] = '\b'; return 1;
        case 'f': out [0] = '\f'; return 1;
        case 'n': out [0] = '\n'; return 1;
        case 'r': out [0] = '\r'; return 1;
        case 't': out [0] = '\t'; return 1;
        case 'u': break;
        default:  out [0] = c; return 1;    //  " \ /
    }
    uint32_t cp = (uint32_t) s_hex4 (s + *i);
    *i += 4;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        uint32_t lo = (uint32_t) s_hex4 (s + *i + 2);
        *i += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    return s_utf8_encode (cp, out);
}

int
qn_json_str (const qn_json_doc_t *doc, int tok, qn_buf_t *out)
{
    const qn_json_tok_t *t = s_tok (doc, tok);
    if (!t || t->type != QN_JSON_STRING)
        return -1;
    const uint8_t *s = (const uint8_t *) doc->buf + t->start + 1;
    uint32_t n = t->len - 2;
    if (!t->has_escapes) {
        qn_buf_append (out, s, n);
        return 0;               //  Raw strings cannot hold a NUL
    }
    //  Unescaping never grows the text, so one reservation covers it
    qn_buf_reserve (out, n);
    uint8_t *d = (uint8_t *) out->data + out->len;
    int has_nul = 0;
    uint32_t i = 0;
    while (i < n) {
        const uint8_t *bs = memchr (s + i, '\\', n - i);
        uint32_t run = bs? (uint32_t) (bs - (s + i)): n - i;
        memcpy (d, s + i, run);
        d += run;
        i += run;
        if (i < n) {
            int k = s_unescape (s, &i, d);
            if (k == 1 && d [0] == 0)
                has_nul = 1;
            d += k;
        }
    }
    out->len = (size_t) ((char *) d - out->data);
    out->data [out->len] = 0;
    return has_nul;
}

bool
qn_json_str_eq (const qn_json_doc_t *doc, int tok, const char *s)
{
    const qn_json_tok_t *t = s_tok (doc, tok);
    if (!t || t->type != QN_JSON_STRING || !s)
        return false;
    const uint8_t *r = (const uint8_t *) doc->buf + t->start + 1;
    uint32_t n = t->len - 2;
    if (!t->has_escapes)
        return strncmp (s, (const char *) r, n) == 0 && s [n] == 0;
    const uint8_t *u = (const uint8_t *) s;
    uint32_t i = 0;
    while (i < n) {
        if (r [i] != '\\') {
            //  Raw bytes are never NUL, so a short `s` mismatches here
            if (*u++ != r [i++])
                return false;
            continue;
        }
        uint8_t tmp [4];
        int k = s_unescape (r, &i, tmp);
        for (int j = 0; j < k; j++)
            if (tmp [j] == 0 || *u++ != tmp [j])
                return false;
    }
    return *u == 0;
}

const char *
qn_json_raw (const qn_json_doc_t *doc, int tok, size_t *len)
{
    const qn_json_tok_t *t = s_tok (doc, tok);
    if (!t) {
        *len = 0;
        return NULL;
    }
    *len = t->len;
    return doc->buf + t->start;
}


bool
qn_utf8_valid (const char *s, size_t len)
{
    const uint8_t *p = (const uint8_t *) s;
    size_t i = 0;
    while (i < len) {
        uint8_t c = p [i];
        if (c == 0)
            return false;
        if (c < 0x80) {
            i++;
            continue;
        }
        uint32_t seq = s_utf8_seq (p + i, len - i);
        if (!seq)
            return false;
        i += seq;
    }
    return true;
}
