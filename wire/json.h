/*  wire/json.h - strict JSON tokenizer and compact JSON writer
    (parser and readers in wire/json_parse.c, writer in wire/json_write.c)
    The broker's JSON codec. qn_json_parse validates a whole document in one
    pass (RFC 8259 strictly, UTF-8 included) and produces a flat token array
    whose entries are byte spans into the caller's input, so a payload can be
    stored byte-for-byte and handed back unchanged. The writer appends compact
    JSON to a qn_buf_t and places commas itself.
    Pure: no I/O, no globals. Owns only the token array (qn_json_doc_free).
    Fails by returning -1 with a human-readable message in doc->err.
*/
#ifndef QN_WIRE_JSON_H
#define QN_WIRE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

//  Largest input qn_json_parse accepts; offsets fit in uint32_t.
#define QN_JSON_MAX_LEN         (64u * 1024u * 1024u)
//  Nesting limit used when max_depth <= 0.
#define QN_JSON_DEFAULT_DEPTH   512
//  The writer's nesting limit (size of qn_jw_t.need_comma).
#define QN_JW_MAX_DEPTH         64

typedef enum {
    QN_JSON_NULL = 1, QN_JSON_FALSE, QN_JSON_TRUE, QN_JSON_NUMBER,
    QN_JSON_STRING, QN_JSON_ARRAY, QN_JSON_OBJECT
} qn_json_type_t;

typedef struct {
    uint8_t type;               //  qn_json_type_t
    uint8_t has_escapes;        //  Strings: 1 if the raw text contains a backslash
    uint32_t start;             //  Byte offset of the value (strings: the opening quote)
    uint32_t len;               //  Byte length of the value text (strings: with both
                                //  quotes; containers: from [ or { to the matching ] or })
    uint32_t size;              //  Arrays: element count; objects: member count
    uint32_t next;              //  Index of the token after this value's subtree
} qn_json_tok_t;

typedef struct {
    const char *buf;            //  Not owned: the input
    size_t len;
    qn_json_tok_t *toks;        //  Owned
    uint32_t count, cap;
    char err [160];             //  e.g. "unexpected character 'x' at offset 12"
    size_t err_off;             //  Byte offset the error refers to
} qn_json_doc_t;

//  Parses and validates `buf` as one JSON value (RFC 8259 strictly: optional
//  surrounding whitespace, no trailing commas, comments, NaN/Infinity or
//  leading zeros; no raw control characters in strings; valid escapes with
//  paired surrogates; valid UTF-8 everywhere; no NUL byte). Nesting deeper
//  than max_depth (<= 0 means QN_JSON_DEFAULT_DEPTH) is an error; nesting
//  uses no C stack. Object tokens are followed by key, value, key, value...
//  where keys are STRING tokens. Token 0 is the root. Returns 0, or -1 with
//  doc->err and doc->err_off set and doc->count 0. The doc keeps pointing
//  into `buf` and reuses its token array on the next call.
int
    qn_json_parse (qn_json_doc_t *doc, const char *buf, size_t len, int max_depth);
void
    qn_json_doc_init (qn_json_doc_t *doc);
//  Frees the token array; call qn_json_doc_init before reusing the doc.
void
    qn_json_doc_free (qn_json_doc_t *doc);

//  Lookups (tok = token index). All return -1 when absent or of the wrong type.
//  Value token of `key` in object `obj`: first match, keys compared unescaped.
int
    qn_json_get (const qn_json_doc_t *doc, int obj, const char *key);
//  i-th element of an array, or i-th VALUE of an object; O(i).
int
    qn_json_child (const qn_json_doc_t *doc, int container, uint32_t i);
//  Iteration: for (int t = qn_json_first (doc, c); t >= 0;
//                  t = qn_json_next_sibling (doc, c, t))
//  visits elements of arrays and KEYS of objects (the value is key + 1).
int
    qn_json_first (const qn_json_doc_t *doc, int container);
int
    qn_json_next_sibling (const qn_json_doc_t *doc, int container, int tok);
//  The token's qn_json_type_t, or -1 if tok is out of range.
int
    qn_json_type (const qn_json_doc_t *doc, int tok);
//  Element count of an array or member count of an object, else -1.
int64_t
    qn_json_size (const qn_json_doc_t *doc, int tok);

//  Value access: 0 on success, -1 if the token has the wrong type or the
//  value is out of range.
//  Integers only: "12" and "-0" are fine, "1.0" and "1e3" give -1, as does
//  anything outside int64_t.
int
    qn_json_int (const qn_json_doc_t *doc, int tok, int64_t *out);
//  Any number; -1 if it overflows a double (underflow gives 0 or a subnormal).
int
    qn_json_number (const qn_json_doc_t *doc, int tok, double *out);
int
    qn_json_bool (const qn_json_doc_t *doc, int tok, bool *out);
bool
    qn_json_is_null (const qn_json_doc_t *doc, int tok);
//  Appends the unescaped string to `out` (NUL-terminated). Returns 0, or 1 if
//  the text holds a NUL (from \u0000, kept and counted in out->len) so callers
//  needing C strings can reject it, or -1 if tok is not a string.
int
    qn_json_str (const qn_json_doc_t *doc, int tok, qn_buf_t *out);
//  True if string token `tok` unescapes to exactly the C string `s`. No allocation.
bool
    qn_json_str_eq (const qn_json_doc_t *doc, int tok, const char *s);
//  Raw text of any value: a pointer into doc->buf and its length; NULL and
//  *len = 0 if tok is out of range.
const char *
    qn_json_raw (const qn_json_doc_t *doc, int tok, size_t *len);

//  Writer: appends compact JSON to `out`, inserting commas automatically.
//  Nesting is limited to QN_JW_MAX_DEPTH - 1 levels (asserted).
typedef struct {
    qn_buf_t *out;              //  Not owned
    uint32_t depth;
    uint8_t need_comma [QN_JW_MAX_DEPTH];   //  Per depth
    uint8_t after_key;
} qn_jw_t;

void
    qn_jw_init (qn_jw_t *w, qn_buf_t *out);
void
    qn_jw_obj (qn_jw_t *w);
void
    qn_jw_obj_end (qn_jw_t *w);
void
    qn_jw_arr (qn_jw_t *w);
void
    qn_jw_arr_end (qn_jw_t *w);
void
    qn_jw_key (qn_jw_t *w, const char *key);
//  Escaped string; NULL writes null.
void
    qn_jw_str (qn_jw_t *w, const char *s);
//  Escapes ", \ and control characters (\b \f \n \r \t, others \u00XX); other
//  bytes, including >= 0x80, are copied as-is, so `s` should be valid UTF-8.
void
    qn_jw_strn (qn_jw_t *w, const char *s, size_t len);
void
    qn_jw_int (qn_jw_t *w, int64_t v);
void
    qn_jw_uint (qn_jw_t *w, uint64_t v);
//  Shortest of %.15g / %.16g / %.17g that reads back exactly; NaN/inf -> null.
void
    qn_jw_double (qn_jw_t *w, double v);
void
    qn_jw_bool (qn_jw_t *w, bool v);
void
    qn_jw_null (qn_jw_t *w);
//  Pre-validated JSON inserted verbatim (payloads).
void
    qn_jw_raw (qn_jw_t *w, const char *json, size_t len);
//  Key + value.
void
    qn_jw_kstr (qn_jw_t *w, const char *k, const char *v);
void
    qn_jw_kint (qn_jw_t *w, const char *k, int64_t v);
void
    qn_jw_kuint (qn_jw_t *w, const char *k, uint64_t v);
void
    qn_jw_kdouble (qn_jw_t *w, const char *k, double v);
void
    qn_jw_kbool (qn_jw_t *w, const char *k, bool v);
void
    qn_jw_knull (qn_jw_t *w, const char *k);
void
    qn_jw_kraw (qn_jw_t *w, const char *k, const char *json, size_t len);

//  Appends {"error":"<msg>"} to `out`, escaped; NULL msg writes "".
void
    qn_json_error_body (qn_buf_t *out, const char *msg);
//  True if [s, s+len) is valid UTF-8 with no NUL byte.
bool
    qn_utf8_valid (const char *s, size_t len);

#endif
