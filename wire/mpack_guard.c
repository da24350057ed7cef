/*  wire/mpack_guard.c - bounded msgpack pre-check (see mpack_guard.h) */
#include "wire/mpack_guard.h"

static uint64_t
s_be (const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p [i];
    return v;
}

int64_t
qn_msgpack_check (const char *buf, size_t len)
{
    const uint8_t *p = (const uint8_t *) buf;
    size_t at = 0;
    uint64_t pending = 1;           //  Objects still to read
    while (pending > 0) {
        if (at >= len)
            return -1;
        uint8_t b = p [at++];
        pending--;
        uint64_t skip = 0, items = 0;
        int size_bytes = 0;
        if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3)
            continue;
        else
        if (b >= 0x80 && b <= 0x8f)
            items = (uint64_t) (b & 0x0f) * 2;
        else
        if (b >= 0x90 && b <= 0x9f)
            items = b & 0x0f;
        else
        if (b >= 0xa0 && b <= 0xbf)
            skip = b & 0x1f;
        else
            switch (b) {
                case 0xc4: case 0xd9: size_bytes = 1; break;    //  bin8, str8
                case 0xc5: case 0xda: size_bytes = 2; break;
                case 0xc6: case 0xdb: size_bytes = 4; break;
                case 0xc7: size_bytes = 1; skip = 1; break;     //  ext: + type byte
                case 0xc8: size_bytes = 2; skip = 1; break;
                case 0xc9: size_bytes = 4; skip = 1; break;
                case 0xca: skip = 4; break;
                case 0xcb: skip = 8; break;
                case 0xcc: case 0xd0: skip = 1; break;
                case 0xcd: case 0xd1: skip = 2; break;
                case 0xce: case 0xd2: skip = 4; break;
                case 0xcf: case 0xd3: skip = 8; break;
                case 0xd4: skip = 2; break;
                case 0xd5: skip = 3; break;
                case 0xd6: skip = 5; break;
                case 0xd7: skip = 9; break;
                case 0xd8: skip = 17; break;
                case 0xdc: case 0xdd: case 0xde: case 0xdf: {
                    int n = (b == 0xdc || b == 0xde) ? 2 : 4;
                    if (len - at < (size_t) n)
                        return -1;
                    items = s_be (p + at, n) * (b >= 0xde ? 2 : 1);
                    at += (size_t) n;
                    break;
                }
                default:
                    return -1;                                  //  0xc1: never used
            }
        if (size_bytes) {
            if (len - at < (size_t) size_bytes)
                return -1;
            skip += s_be (p + at, size_bytes);
            at += (size_t) size_bytes;
        }
        if (skip > len - at)
            return -1;
        at += (size_t) skip;
        //  Every element takes at least one byte.
        if (items > len - at || pending + items < pending)
            return -1;
        pending += items;
    }
    return (int64_t) at;
}
