/*  wire/spool_codec.c - record framing of the disk spool (see spool_codec.h)
    Pure: no I/O, no logging.
*/
#include "wire/spool_codec.h"
#include "wire/mpack_guard.h"
#include "wire/msg_spool.h"

#include <assert.h>
#include <inttypes.h>
#include <msgpack.h>
#include <stdio.h>
#include <string.h>

//  CRC32C lookup table for the reflected polynomial 0x82F63B78 (generated
//  once by the bit-at-a-time definition; test_wire_spool checks vectors).
static const uint32_t s_crc32c_table [256] = {
    0x00000000, 0xf26b8303, 0xe13b70f7, 0x1350f3f4, 0xc79a971f, 0x35f1141c,
    0x26a1e7e8, 0xd4ca64eb, 0x8ad958cf, 0x78b2dbcc, 0x6be22838, 0x9989ab3b,
    0x4d43cfd0, 0xbf284cd3, 0xac78bf27, 0x5e133c24, 0x105ec76f, 0xe235446c,
    0xf165b798, 0x030e349b, 0xd7c45070, 0x25afd373, 0x36ff2087, 0xc494a384,
    0x9a879fa0, 0x68ec1ca3, 0x7bbcef57, 0x89d76c54, 0x5d1d08bf, 0xaf768bbc,
    0xbc267848, 0x4e4dfb4b, 0x20bd8ede, 0xd2d60ddd, 0xc186fe29, 0x33ed7d2a,
    0xe72719c1, 0x154c9ac2, 0x061c6936, 0xf477ea35, 0xaa64d611, 0x580f5512,
    0x4b5fa6e6, 0xb93425e5, 0x6dfe410e, 0x9f95c20d, 0x8cc531f9, 0x7eaeb2fa,
    0x30e349b1, 0xc288cab2, 0xd1d83946, 0x23b3ba45, 0xf779deae, 0x05125dad,
    0x1642ae59, 0xe4292d5a, 0xba3a117e, 0x4851927d, 0x5b016189, 0xa96ae28a,
    0x7da08661, 0x8fcb0562, 0x9c9bf696, 0x6ef07595, 0x417b1dbc, 0xb3109ebf,
    0xa0406d4b, 0x522bee48, 0x86e18aa3, 0x748a09a0, 0x67dafa54, 0x95b17957,
    0xcba24573, 0x39c9c670, 0x2a993584, 0xd8f2b687, 0x0c38d26c, 0xfe53516f,
    0xed03a29b, 0x1f682198, 0x5125dad3, 0xa34e59d0, 0xb01eaa24, 0x42752927,
    0x96bf4dcc, 0x64d4cecf, 0x77843d3b, 0x85efbe38, 0xdbfc821c, 0x2997011f,
    0x3ac7f2eb, 0xc8ac71e8, 0x1c661503, 0xee0d9600, 0xfd5d65f4, 0x0f36e6f7,
    0x61c69362, 0x93ad1061, 0x80fde395, 0x72966096, 0xa65c047d, 0x5437877e,
    0x4767748a, 0xb50cf789, 0xeb1fcbad, 0x197448ae, 0x0a24bb5a, 0xf84f3859,
    0x2c855cb2, 0xdeeedfb1, 0xcdbe2c45, 0x3fd5af46, 0x7198540d, 0x83f3d70e,
    0x90a324fa, 0x62c8a7f9, 0xb602c312, 0x44694011, 0x5739b3e5, 0xa55230e6,
    0xfb410cc2, 0x092a8fc1, 0x1a7a7c35, 0xe811ff36, 0x3cdb9bdd, 0xceb018de,
    0xdde0eb2a, 0x2f8b6829, 0x82f63b78, 0x709db87b, 0x63cd4b8f, 0x91a6c88c,
    0x456cac67, 0xb7072f64, 0xa457dc90, 0x563c5f93, 0x082f63b7, 0xfa44e0b4,
    0xe9141340, 0x1b7f9043, 0xcfb5f4a8, 0x3dde77ab, 0x2e8e845f, 0xdce5075c,
    0x92a8fc17, 0x60c37f14, 0x73938ce0, 0x81f80fe3, 0x55326b08, 0xa759e80b,
    0xb4091bff, 0x466298fc, 0x1871a4d8, 0xea1a27db, 0xf94ad42f, 0x0b21572c,
    0xdfeb33c7, 0x2d80b0c4, 0x3ed04330, 0xccbbc033, 0xa24bb5a6, 0x502036a5,
    0x4370c551, 0xb11b4652, 0x65d122b9, 0x97baa1ba, 0x84ea524e, 0x7681d14d,
    0x2892ed69, 0xdaf96e6a, 0xc9a99d9e, 0x3bc21e9d, 0xef087a76, 0x1d63f975,
    0x0e330a81, 0xfc588982, 0xb21572c9, 0x407ef1ca, 0x532e023e, 0xa145813d,
    0x758fe5d6, 0x87e466d5, 0x94b49521, 0x66df1622, 0x38cc2a06, 0xcaa7a905,
    0xd9f75af1, 0x2b9cd9f2, 0xff56bd19, 0x0d3d3e1a, 0x1e6dcdee, 0xec064eed,
    0xc38d26c4, 0x31e6a5c7, 0x22b65633, 0xd0ddd530, 0x0417b1db, 0xf67c32d8,
    0xe52cc12c, 0x1747422f, 0x49547e0b, 0xbb3ffd08, 0xa86f0efc, 0x5a048dff,
    0x8ecee914, 0x7ca56a17, 0x6ff599e3, 0x9d9e1ae0, 0xd3d3e1ab, 0x21b862a8,
    0x32e8915c, 0xc083125f, 0x144976b4, 0xe622f5b7, 0xf5720643, 0x07198540,
    0x590ab964, 0xab613a67, 0xb831c993, 0x4a5a4a90, 0x9e902e7b, 0x6cfbad78,
    0x7fab5e8c, 0x8dc0dd8f, 0xe330a81a, 0x115b2b19, 0x020bd8ed, 0xf0605bee,
    0x24aa3f05, 0xd6c1bc06, 0xc5914ff2, 0x37faccf1, 0x69e9f0d5, 0x9b8273d6,
    0x88d28022, 0x7ab90321, 0xae7367ca, 0x5c18e4c9, 0x4f48173d, 0xbd23943e,
    0xf36e6f75, 0x0105ec76, 0x12551f82, 0xe03e9c81, 0x34f4f86a, 0xc69f7b69,
    0xd5cf889d, 0x27a40b9e, 0x79b737ba, 0x8bdcb4b9, 0x988c474d, 0x6ae7c44e,
    0xbe2da0a5, 0x4c4623a6, 0x5f16d052, 0xad7d5351,
};

uint32_t
qn_crc32c (uint32_t crc, const void *data, size_t len)
{
    const uint8_t *p = data;
    crc = ~crc;
    while (len--)
        crc = s_crc32c_table [(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

static void
s_put32 (char *p, uint32_t v)
{
    p [0] = (char) (v & 0xff);
    p [1] = (char) ((v >> 8) & 0xff);
    p [2] = (char) ((v >> 16) & 0xff);
    p [3] = (char) ((v >> 24) & 0xff);
}

static uint32_t
s_get32 (const char *p)
{
    const uint8_t *u = (const uint8_t *) p;
    return (uint32_t) u [0] | (uint32_t) u [1] << 8 | (uint32_t) u [2] << 16 | (uint32_t) u [3] << 24;
}

void
qn_spool_record_encode (qn_buf_t *out, const void *body, size_t len)
{
    assert (len <= QN_SPOOL_MAX_BODY);
    char head [QN_SPOOL_HEADER_LEN];
    memcpy (head, QN_SPOOL_MAGIC, 4);
    s_put32 (head + 4, (uint32_t) len);
    uint32_t crc = qn_crc32c (0, head + 4, 4);
    crc = qn_crc32c (crc, body, len);
    s_put32 (head + 8, crc);
    qn_buf_append (out, head, sizeof head);
    qn_buf_append (out, body, len);
}

int64_t
qn_spool_record_decode (const char *buf, size_t len, const char **body, size_t *body_len)
{
    //  Check what is there before deciding "incomplete": a wrong magic
    //  byte is damage even when the header is cut short.
    size_t have = len < 4 ? len : 4;
    if (memcmp (buf, QN_SPOOL_MAGIC, have))
        return QN_SPOOL_CORRUPT;
    if (len < QN_SPOOL_HEADER_LEN)
        return len >= 8 && s_get32 (buf + 4) > QN_SPOOL_MAX_BODY ? QN_SPOOL_CORRUPT
                                                                 : QN_SPOOL_INCOMPLETE;
    uint32_t n = s_get32 (buf + 4);
    if (n > QN_SPOOL_MAX_BODY)
        return QN_SPOOL_CORRUPT;
    if (len - QN_SPOOL_HEADER_LEN < n)
        return QN_SPOOL_INCOMPLETE;
    uint32_t crc = qn_crc32c (0, buf + 4, 4);
    crc = qn_crc32c (crc, buf + QN_SPOOL_HEADER_LEN, n);
    if (crc != s_get32 (buf + 8))
        return QN_SPOOL_CORRUPT;
    *body = buf + QN_SPOOL_HEADER_LEN;
    *body_len = n;
    return (int64_t) QN_SPOOL_HEADER_LEN + n;
}

void
qn_spool_scan (const char *buf, size_t len, qn_spool_scan_t *out)
{
    memset (out, 0, sizeof *out);
    size_t at = 0;
    while (at < len) {
        const char *body;
        size_t body_len;
        int64_t rc = qn_spool_record_decode (buf + at, len - at, &body, &body_len);
        if (rc < 0) {
            out->stop = rc == QN_SPOOL_INCOMPLETE ? QN_SPOOL_SCAN_TORN : QN_SPOOL_SCAN_BAD;
            break;
        }
        at += (size_t) rc;
        out->records++;
    }
    out->valid_len = at;
}

int64_t
qn_spool_resync (const char *buf, size_t len, size_t from)
{
    for (size_t at = from + 1; at + QN_SPOOL_HEADER_LEN <= len; at++) {
        const void *m = memchr (buf + at, QN_SPOOL_MAGIC [0], len - at);
        if (!m)
            return -1;
        at = (size_t) ((const char *) m - buf);
        const char *body;
        size_t body_len;
        if (at + QN_SPOOL_HEADER_LEN <= len
        &&  qn_spool_record_decode (buf + at, len - at, &body, &body_len) > 0)
            return (int64_t) at;
    }
    return -1;
}

//  The body is the SPOOL_APPEND message: one decoder for both
//  (wire/msg_spool.c).
int64_t
qn_spool_body_check (const char *buf, size_t len)
{
    msgpack_unpacked msg;
    msgpack_unpacked_init (&msg);
    qn_msg_spool_append_t append;
    int64_t count = qn_msg_spool_append_decode (buf, len, &msg, &append) ? -1 : (int64_t) append.count;
    msgpack_unpacked_destroy (&msg);
    return count;
}

void
qn_spool_segment_name (uint64_t seq, char out [QN_SPOOL_NAME_MAX])
{
    snprintf (out, QN_SPOOL_NAME_MAX, "segment-%016" PRIu64 ".qspool", seq);
}

int
qn_spool_segment_parse (const char *name, uint64_t *seq)
{
    //  Exactly "segment-" + 16 digits + ".qspool": temporary and quarantine
    //  files sharing the prefix are not segments.
    if (strlen (name) != 8 + 16 + 7 || strncmp (name, "segment-", 8) || strcmp (name + 24, ".qspool"))
        return -1;
    uint64_t v = 0;
    for (int i = 8; i < 24; i++) {
        if (name [i] < '0' || name [i] > '9')
            return -1;
        v = v * 10 + (uint64_t) (name [i] - '0');
    }
    *seq = v;
    return 0;
}

#define S_CKPT_PREFIX "qspool-checkpoint segment="

void
qn_spool_checkpoint_encode (qn_buf_t *out, uint64_t segment, uint64_t offset)
{
    char text [128];
    int n = snprintf (text, sizeof text, S_CKPT_PREFIX "%" PRIu64 " offset=%" PRIu64,
                      segment, offset);
    qn_buf_printf (out, "%s crc=%08x\n", text, qn_crc32c (0, text, (size_t) n));
}

//  Parses decimal digits at *p (at least one, no overflow). 0 or -1.
static int
s_u64 (const char **p, const char *end, uint64_t *out)
{
    const char *s = *p;
    uint64_t v = 0;
    while (s < end && *s >= '0' && *s <= '9') {
        uint64_t d = (uint64_t) (*s - '0');
        if (v > UINT64_MAX / 10 || (v == UINT64_MAX / 10 && d > UINT64_MAX % 10))
            return -1;
        v = v * 10 + d;
        s++;
    }
    if (s == *p)
        return -1;
    *p = s;
    *out = v;
    return 0;
}

int
qn_spool_checkpoint_decode (const char *buf, size_t len, uint64_t *segment, uint64_t *offset)
{
    const char *end = buf + len;
    size_t plen = strlen (S_CKPT_PREFIX);
    if (len < plen || memcmp (buf, S_CKPT_PREFIX, plen))
        return -1;
    const char *p = buf + plen;
    uint64_t seg, off;
    if (s_u64 (&p, end, &seg) || end - p < 8 || memcmp (p, " offset=", 8))
        return -1;
    p += 8;
    if (s_u64 (&p, end, &off))
        return -1;
    size_t text_len = (size_t) (p - buf);
    //  " crc=" + 8 hex digits + "\n", nothing after.
    if (end - p != 5 + 8 + 1 || memcmp (p, " crc=", 5) || p [13] != '\n')
        return -1;
    uint32_t crc = 0;
    for (int i = 5; i < 13; i++) {
        char c = p [i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return -1;
        crc = crc << 4 | (uint32_t) d;
    }
    if (crc != qn_crc32c (0, buf, text_len))
        return -1;
    *segment = seg;
    *offset = off;
    return 0;
}
