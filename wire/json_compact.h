/*  wire/json_compact.h - JSON from elsewhere, re-written the broker's way
    PostgreSQL's json output puts spaces around colons and after commas
    ("leaseTime" : 30); the broker's writer (wire/json.h) writes compact
    JSON. Routes that forward JSON built by the database re-write it here
    so a client cannot tell which layer answered. Scalars keep their text
    (numbers as spelt, strings with their escapes); only the whitespace
    between tokens goes. Members named in `verbatim` keep their value's
    bytes exactly: the payloads the contract returns as they were pushed.
    Pure: no I/O, no globals.
*/
#ifndef QN_WIRE_JSON_COMPACT_H
#define QN_WIRE_JSON_COMPACT_H

#include <stddef.h>

#include "base/buf.h"

//  Appends the compact form of [json, json + len) to out. `verbatim` is a
//  NULL-terminated list of member names (at any depth) whose values are
//  copied as they are, or NULL. Returns 0, or -1 when the input is not
//  one JSON value (out is then unchanged).
int qn_json_compact (const char *json, size_t len, const char *const *verbatim, qn_buf_t *out);

#endif
