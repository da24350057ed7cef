/*  wire/mpack_guard.h - a cheap pre-check for msgpack from outside
    msgpack-c allocates a container's element array from the size its
    header claims, before reading any element: a few hostile bytes can ask
    for gigabytes. This walks the encoding without allocating and accepts
    only objects whose every declared length and element count fits in
    the bytes that are actually there. Pure.
*/
#ifndef QN_WIRE_MPACK_GUARD_H
#define QN_WIRE_MPACK_GUARD_H

#include <stddef.h>
#include <stdint.h>

//  Returns the size of the one msgpack object at the start of buf (> 0)
//  when it is complete and plausible, or -1.
int64_t qn_msgpack_check (const char *buf, size_t len);

#endif
