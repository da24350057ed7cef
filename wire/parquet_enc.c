/*  wire/parquet_enc.c - the encodings under the Parquet writer (see
    parquet_impl.h): a Thrift compact protocol writer (the page headers and
    the FileMetaData), little-endian integers and the RLE / bit-packing
    hybrid (definition levels, dictionary indexes). Pure: appends to a
    qn_buf_t, no I/O.
*/
#include "wire/parquet_impl.h"

#include <string.h>

//  ------------------------------------------------------------------------
//  Thrift compact protocol writer

void
qn_pq_varint (qn_buf_t *b, uint64_t v)
{
    while (v >= 0x80) {
        qn_buf_putc (b, (char) (uint8_t) (v | 0x80));
        v >>= 7;
    }
    qn_buf_putc (b, (char) (uint8_t) v);
}

uint64_t
qn_pq_zigzag (int64_t v)
{
    return ((uint64_t) v << 1) ^ (uint64_t) (v >> 63);
}

void
qn_pq_tw_init (tw_t *tw, qn_buf_t *b)
{
    memset (tw, 0, sizeof *tw);
    tw->b = b;
}

void
qn_pq_tw_field (tw_t *tw, int16_t id, int type)
{
    int delta = id - tw->last [tw->depth];
    if (delta > 0 && delta <= 15)
        qn_buf_putc (tw->b, (char) (uint8_t) ((delta << 4) | type));
    else {
        qn_buf_putc (tw->b, (char) type);
        qn_pq_varint (tw->b, qn_pq_zigzag (id));
    }
    tw->last [tw->depth] = id;
}

void
qn_pq_tw_i32 (tw_t *tw, int16_t id, int32_t v)
{
    qn_pq_tw_field (tw, id, TC_I32);
    qn_pq_varint (tw->b, qn_pq_zigzag (v));
}

void
qn_pq_tw_i64 (tw_t *tw, int16_t id, int64_t v)
{
    qn_pq_tw_field (tw, id, TC_I64);
    qn_pq_varint (tw->b, qn_pq_zigzag (v));
}

void
qn_pq_tw_bool (tw_t *tw, int16_t id, bool v)
{
    qn_pq_tw_field (tw, id, v ? TC_TRUE : TC_FALSE);
}

void
qn_pq_tw_binary (tw_t *tw, int16_t id, const void *data, size_t len)
{
    qn_pq_tw_field (tw, id, TC_BINARY);
    qn_pq_varint (tw->b, len);
    qn_buf_append (tw->b, data, len);
}

void
qn_pq_tw_string (tw_t *tw, int16_t id, const char *s)
{
    qn_pq_tw_binary (tw, id, s, strlen (s));
}

//  Opens a struct: as field `id` of the current struct, or (id 0) as a
//  list element or the top-level struct.
void
qn_pq_tw_struct (tw_t *tw, int16_t id)
{
    if (id)
        qn_pq_tw_field (tw, id, TC_STRUCT);
    tw->depth++;
    tw->last [tw->depth] = 0;
}

void
qn_pq_tw_end (tw_t *tw)
{
    qn_buf_putc (tw->b, 0);
    tw->depth--;
}

void
qn_pq_tw_list (tw_t *tw, int16_t id, int elem_type, size_t count)
{
    qn_pq_tw_field (tw, id, TC_LIST);
    if (count < 15)
        qn_buf_putc (tw->b, (char) (uint8_t) ((count << 4) | (size_t) elem_type));
    else {
        qn_buf_putc (tw->b, (char) (uint8_t) (0xF0 | elem_type));
        qn_pq_varint (tw->b, count);
    }
}

//  ------------------------------------------------------------------------
//  Little-endian helpers and the RLE / bit-packing hybrid

void
qn_pq_le32 (qn_buf_t *b, uint32_t v)
{
    uint8_t x [4] = { (uint8_t) v, (uint8_t) (v >> 8), (uint8_t) (v >> 16), (uint8_t) (v >> 24) };
    qn_buf_append (b, x, 4);
}

void
qn_pq_le64 (qn_buf_t *b, uint64_t v)
{
    uint8_t x [8];
    for (int i = 0; i < 8; i++)
        x [i] = (uint8_t) (v >> (8 * i));
    qn_buf_append (b, x, 8);
}

uint32_t
qn_pq_rd32 (const uint8_t *p)
{
    return (uint32_t) p [0] | (uint32_t) p [1] << 8 | (uint32_t) p [2] << 16 | (uint32_t) p [3] << 24;
}

uint64_t
qn_pq_rd64 (const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p [i];
    return v;
}

static void
s_bitpack (qn_buf_t *b, const uint32_t *vals, size_t count, int bw)
{
    //  Groups of 8 values, `bw` bits each, LSB first; the last group is
    //  padded with zeros (readers stop at the page's value count).
    size_t groups = (count + 7) / 8;
    qn_pq_varint (b, (groups << 1) | 1);
    uint64_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < groups * 8; i++) {
        uint64_t v = i < count ? vals [i] : 0;
        acc |= v << bits;
        bits += bw;
        while (bits >= 8) {
            qn_buf_putc (b, (char) (uint8_t) acc);
            acc >>= 8;
            bits -= 8;
        }
    }
    if (bits > 0)
        qn_buf_putc (b, (char) (uint8_t) acc);
}

static void
s_rle_run (qn_buf_t *b, uint32_t value, size_t count, int bw)
{
    qn_pq_varint (b, (uint64_t) count << 1);
    for (int i = 0; i < (bw + 7) / 8; i++)
        qn_buf_putc (b, (char) (uint8_t) (value >> (8 * i)));
}

//  RLE runs for repeats of 8 or more, bit-packed groups for the rest.
void
qn_pq_hybrid (qn_buf_t *b, const uint32_t *vals, size_t n, int bw)
{
    size_t lit = 0, i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && vals [j] == vals [i])
            j++;
        size_t run = j - i, pending = i - lit;
        if (run >= 8 && pending % 8 == 0) {
            if (pending)
                s_bitpack (b, vals + lit, pending, bw);
            s_rle_run (b, vals [i], run, bw);
            i = lit = j;
        }
        else
        if (run >= 8 && run - (8 - pending % 8) >= 8)
            i += 8 - pending % 8;       //  Pad the literals to a group
        else
            i = j;
    }
    if (n > lit)
        s_bitpack (b, vals + lit, n - lit, bw);
}

int
qn_pq_bit_width (uint32_t max_value)
{
    int bw = 0;
    while (bw < 32 && (max_value >> bw))
        bw++;
    return bw ? bw : 1;
}
