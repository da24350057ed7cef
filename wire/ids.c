/*  wire/ids.c - identifiers and timestamps on the wire (see ids.h) */
#include "wire/ids.h"
#include "wire/pg_codec.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

void
qn_id_format (qn_id_kind_t kind, int64_t id, char out [QN_ID_STR_LEN + 1])
{
    uint64_t v = (uint64_t) 1 << 63 | (uint64_t) id;
    snprintf (out, QN_ID_STR_LEN + 1, "%08x-0000-8000-%04x-%012llx", (unsigned) kind,
              (unsigned) (v >> 48), (unsigned long long) (v & 0xffffffffffffULL));
}

int
qn_id_parse (qn_id_kind_t kind, const char *s, size_t len, int64_t *id)
{
    uint8_t u [16];
    if (qn_uuid_parse (s, len, u))
        return -1;
    uint32_t k = (uint32_t) u [0] << 24 | (uint32_t) u [1] << 16 | (uint32_t) u [2] << 8 | u [3];
    if (k != (uint32_t) kind || u [4] || u [5] || u [6] != 0x80 || u [7])
        return -1;
    uint64_t v = 0;
    for (int i = 8; i < 16; i++)
        v = v << 8 | u [i];
    if (!(v >> 63) || ((v >> 62) & 1))
        return -1;
    *id = (int64_t) (v & ~((uint64_t) 1 << 63));
    return 0;
}

bool
qn_uuid_valid (const char *s, size_t len)
{
    uint8_t u [16];
    return qn_uuid_parse (s, len, u) == 0;
}

void
qn_uuid_v4 (char out [QN_ID_STR_LEN + 1])
{
    uint8_t u [16];
    randombytes_buf (u, sizeof u);
    u [6] = (u [6] & 0x0f) | 0x40;
    u [8] = (u [8] & 0x3f) | 0x80;
    qn_uuid_format (u, out);
}

void
qn_uuid_v7 (char out [QN_ID_STR_LEN + 1])
{
    struct timeval tv;
    gettimeofday (&tv, NULL);
    uint64_t ms = (uint64_t) tv.tv_sec * 1000 + (uint64_t) tv.tv_usec / 1000;
    uint8_t u [16];
    randombytes_buf (u, sizeof u);
    for (int i = 0; i < 6; i++)
        u [i] = (uint8_t) (ms >> (40 - 8 * i));
    u [6] = (u [6] & 0x0f) | 0x70;
    u [8] = (u [8] & 0x3f) | 0x80;
    qn_uuid_format (u, out);
}

static void
s_ts (int64_t us, char out [32], int digits)
{
    int64_t secs = us >= 0 ? us / 1000000 : (us - 999999) / 1000000;
    int64_t frac = us - secs * 1000000;
    time_t t = (time_t) secs;
    struct tm tm;
    gmtime_r (&t, &tm);
    char date [24];
    strftime (date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    if (digits == 6)
        snprintf (out, 32, "%.19s.%06uZ", date, (unsigned) frac);
    else
        snprintf (out, 32, "%.19s.%03uZ", date, (unsigned) (frac / 1000));
}

void
qn_ts_us (int64_t us, char out [32])
{
    s_ts (us, out, 6);
}

void
qn_ts_ms (int64_t us, char out [32])
{
    s_ts (us, out, 3);
}

static int
s_digits (const char *s, size_t len, size_t *at, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++, (*at)++) {
        if (*at >= len || s [*at] < '0' || s [*at] > '9')
            return -1;
        v = v * 10 + (s [*at] - '0');
    }
    *out = v;
    return 0;
}

int
qn_ts_parse (const char *s, size_t len, int64_t *us)
{
    size_t at = 0;
    int y, mo, d, h = 0, mi = 0, sec = 0;
    int64_t frac = 0;
    if (s_digits (s, len, &at, 4, &y) || at >= len || s [at++] != '-'
    ||  s_digits (s, len, &at, 2, &mo) || at >= len || s [at++] != '-'
    ||  s_digits (s, len, &at, 2, &d))
        return -1;
    if (at < len && (s [at] == 'T' || s [at] == 't' || s [at] == ' ')) {
        at++;
        if (s_digits (s, len, &at, 2, &h) || at >= len || s [at++] != ':'
        ||  s_digits (s, len, &at, 2, &mi))
            return -1;
        if (at < len && s [at] == ':') {
            at++;
            if (s_digits (s, len, &at, 2, &sec))
                return -1;
            if (at < len && (s [at] == '.' || s [at] == ',')) {
                at++;
                int n = 0;
                while (at < len && s [at] >= '0' && s [at] <= '9') {
                    if (n < 6) {
                        frac = frac * 10 + (s [at] - '0');
                        n++;
                    }
                    at++;
                }
                if (n == 0)
                    return -1;
                while (n++ < 6)
                    frac *= 10;
            }
        }
    }
    int offset_min = 0;
    if (at < len && (s [at] == 'Z' || s [at] == 'z'))
        at++;
    else
    if (at < len && (s [at] == '+' || s [at] == '-')) {
        int sign = s [at++] == '-' ? -1 : 1, oh, om = 0;
        if (s_digits (s, len, &at, 2, &oh))
            return -1;
        if (at < len && s [at] == ':')
            at++;
        if (at < len && s_digits (s, len, &at, 2, &om))
            return -1;
        offset_min = sign * (oh * 60 + om);
    }
    if (at != len || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        return -1;
    struct tm tm = { .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d,
                     .tm_hour = h, .tm_min = mi, .tm_sec = sec };
    time_t t = timegm (&tm);
    *us = ((int64_t) t - (int64_t) offset_min * 60) * 1000000 + frac;
    return 0;
}
