/*  wire/mp.h - small msgpack bodies between actors
    Most actor messages are short positional arrays ([up], [pending,
    failed], [conn_id, seq, close]). qn_mp_scan reads one by a format
    string instead of a hand-written unpack per handler. Pure.
*/
#ifndef QN_WIRE_MP_H
#define QN_WIRE_MP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  Reads the array at buf into the pointers that follow fmt, one per
//  character:
//    'b' bool *              'u' uint64_t * (non-negative integer)
//    'i' int64_t *           's' const char **, size_t * (string, points into buf)
//    'S' like 's' but nil gives NULL, 0
//  The array may have more elements than fmt. Returns 0, or -1 if buf is
//  not such an array (nothing is guaranteed about the outputs then).
int qn_mp_scan (const char *buf, size_t len, const char *fmt, ...);

#endif
