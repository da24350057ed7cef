/*  wire/url.h - request-target parsing
    Splits an origin-form target ("/api/v1/pop/queue/q?batch=10") into a
    decoded path, percent-decoded path segments and form-decoded query
    parameters. Pure; owns one heap block per parsed url (qn_url_free).
    Refuses (returns -1) what a router must never see: bad %-escapes, NUL
    or control bytes, ".." segments, more than QN_URL_MAX_SEGMENTS segments.
*/
#ifndef QN_WIRE_URL_H
#define QN_WIRE_URL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QN_URL_MAX_SEGMENTS  32
#define QN_URL_MAX_PARAMS    64

typedef struct {
    char *name;                 //  Not owned: inside the url's storage, NUL-terminated
    size_t name_len;
    char *value;                //  Not owned: inside the url's storage, NUL-terminated;
    size_t value_len;           //  "" when the parameter has no '='
} qn_query_param_t;

typedef struct {
    char *path;                 //  Decoded path, NUL-terminated, no trailing '/' (except "/")
    char *segments [QN_URL_MAX_SEGMENTS];   //  Percent-decoded, NUL-terminated
    size_t seg_len [QN_URL_MAX_SEGMENTS];
    uint32_t seg_count;
    qn_query_param_t params [QN_URL_MAX_PARAMS];    //  In target order, duplicates kept
    uint32_t param_count;
    char *storage;              //  Owned: path, segments and params live here
} qn_url_t;

//  Parses an origin-form target into url (any previous contents are not
//  freed). Returns 0, or -1 for a malformed target: not starting with '/',
//  bad %-escape, NUL after decoding, control bytes, space or '#', more than
//  32 segments, a ".." segment. On -1, url is left empty (qn_url_free is
//  harmless). A trailing '/' is dropped ("/a/" == "/a"); an empty segment
//  inside the path ("/a//b") is kept. '+' is a space only in the query.
//  Parameters beyond QN_URL_MAX_PARAMS are ignored.
int qn_url_parse (qn_url_t *url, const char *target, size_t len);

//  Releases the url's storage; takes an empty or zeroed url.
void qn_url_free (qn_url_t *url);

//  Value of the first parameter called name, NUL-terminated; NULL if absent.
//  Sets *len (may be NULL) to the value's length.
const char *qn_url_param (const qn_url_t *url, const char *name, size_t *len);

//  Decimal integer parameter: absent or empty gives dflt; present but not a
//  decimal int64 (sign allowed, nothing else) gives dflt and sets *bad.
//  *bad (may be NULL) is set to false otherwise.
int64_t qn_url_param_int (const qn_url_t *url, const char *name, int64_t dflt, bool *bad);

//  Boolean parameter: "true" or "1" is true, any other non-empty value is
//  false, absent or empty gives dflt.
bool qn_url_param_bool (const qn_url_t *url, const char *name, bool dflt);

//  Percent-decodes len bytes of src into dst (which may be src: decoding
//  never grows). With plus_is_space, '+' becomes ' '. Writes no NUL.
//  Returns the decoded length, or -1 for a '%' not followed by two hex digits.
int qn_url_decode (char *dst, const char *src, size_t len, bool plus_is_space);

#endif
