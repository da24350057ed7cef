/*  wire/mp.c - positional msgpack bodies (see mp.h) */
#include "wire/mp.h"
#include "wire/mpack_guard.h"

#include <msgpack.h>
#include <stdarg.h>

static int
s_field (const msgpack_object *o, char kind, va_list *ap)
{
    switch (kind) {
        case 'b':
            if (o->type != MSGPACK_OBJECT_BOOLEAN)
                return -1;
            *va_arg (*ap, bool *) = o->via.boolean;
            return 0;
        case 'u':
            if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
                return -1;
            *va_arg (*ap, uint64_t *) = o->via.u64;
            return 0;
        case 'i':
            if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= INT64_MAX)
                *va_arg (*ap, int64_t *) = (int64_t) o->via.u64;
            else
            if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
                *va_arg (*ap, int64_t *) = o->via.i64;
            else
                return -1;
            return 0;
        case 's':
        case 'S': {
            const char **s = va_arg (*ap, const char **);
            size_t *n = va_arg (*ap, size_t *);
            if (kind == 'S' && o->type == MSGPACK_OBJECT_NIL) {
                *s = NULL;
                *n = 0;
                return 0;
            }
            if (o->type != MSGPACK_OBJECT_STR)
                return -1;
            *s = o->via.str.ptr;
            *n = o->via.str.size;
            return 0;
        }
        default:
            return -1;
    }
}

int
qn_mp_scan (const char *buf, size_t len, const char *fmt, ...)
{
    if (qn_msgpack_check (buf, len) < 0)
        return -1;
    //  A small zone (as the envelope's): msgpack_unpack_next's own is an
    //  8 KiB block, allocated and freed for every small body.
    msgpack_zone zone;
    if (!msgpack_zone_init (&zone, 512))
        return -1;
    msgpack_object root;
    const msgpack_object *o = &root;
    size_t off = 0;
    int rc = -1;
    size_t want = 0;
    for (const char *f = fmt; *f; f++)
        want++;
    msgpack_unpack_return ur = msgpack_unpack (buf, len, &off, &zone, &root);
    if ((ur == MSGPACK_UNPACK_SUCCESS || ur == MSGPACK_UNPACK_EXTRA_BYTES)
    &&  o->type == MSGPACK_OBJECT_ARRAY && o->via.array.size >= want) {
        va_list ap;
        va_start (ap, fmt);
        rc = 0;
        for (size_t i = 0; i < want && rc == 0; i++)
            rc = s_field (&o->via.array.ptr [i], fmt [i], &ap);
        va_end (ap);
    }
    //  Strings point into buf, not into the zone: destroying is safe.
    msgpack_zone_destroy (&zone);
    return rc;
}
