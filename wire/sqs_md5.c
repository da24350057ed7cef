/*  wire/sqs_md5.c - SQS checksums and receipt handles
    MD5OfMessageBody and MD5OfMessageAttributes exactly as AWS computes them
    (spec §10): attributes sorted by the bytes of their names, each encoded
    as len(name) name len(type) type transport len(value) value with
    big-endian u32 lengths and transport 1 (string) or 2 (binary).
    Receipt handles (§8.1): base64url without padding of
        u8 version=1 | i32 queue_id | i64 partition_id | i64 seq |
        u8[16] lease id | u8[16] HMAC-SHA256(key, the 37 bytes before)
    (the native lease id is a UUID, hence 16 bytes where the spec has i64).
    A forged, truncated or re-keyed handle fails the constant-time tag check.
    Pure; MD5 and HMAC from OpenSSL, base64url from libsodium.
*/
#include "wire/sqs.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

static void
s_hex (const unsigned char *bin, size_t len, char *out)
{
    static const char digits [] = "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        out [2 * i] = digits [bin [i] >> 4];
        out [2 * i + 1] = digits [bin [i] & 15];
    }
    out [2 * len] = 0;
}

void
qn_sqs_md5_hex (const void *data, size_t len, char out [33])
{
    unsigned char md [EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    EVP_Digest (data, len, md, &md_len, EVP_md5 (), NULL);
    s_hex (md, 16, out);
}

static int
s_by_name (const void *a_, const void *b_)
{
    const qn_sqs_attr_t *a = *(const qn_sqs_attr_t * const *) a_;
    const qn_sqs_attr_t *b = *(const qn_sqs_attr_t * const *) b_;
    size_t n = a->name.len < b->name.len? a->name.len: b->name.len;
    int c = n? memcmp (a->name.ptr, b->name.ptr, n): 0;
    return c? c: (a->name.len > b->name.len) - (a->name.len < b->name.len);
}

static void
s_put_u32 (EVP_MD_CTX *ctx, size_t v)
{
    unsigned char b [4] = { (unsigned char) (v >> 24), (unsigned char) (v >> 16),
                            (unsigned char) (v >> 8), (unsigned char) v };
    EVP_DigestUpdate (ctx, b, 4);
}

void
qn_sqs_md5_attrs (const qn_sqs_attr_t *attrs, uint32_t count, char out [33])
{
    const qn_sqs_attr_t **sorted = qn_malloc ((count? count: 1) * sizeof *sorted);
    for (uint32_t i = 0; i < count; i++)
        sorted [i] = &attrs [i];
    qsort (sorted, count, sizeof *sorted, s_by_name);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new ();
    EVP_DigestInit_ex (ctx, EVP_md5 (), NULL);
    for (uint32_t i = 0; i < count; i++) {
        const qn_sqs_attr_t *a = sorted [i];
        unsigned char transport = a->binary? 2: 1;
        s_put_u32 (ctx, a->name.len);
        EVP_DigestUpdate (ctx, a->name.ptr, a->name.len);
        s_put_u32 (ctx, a->data_type.len);
        EVP_DigestUpdate (ctx, a->data_type.ptr, a->data_type.len);
        EVP_DigestUpdate (ctx, &transport, 1);
        s_put_u32 (ctx, a->value.len);
        EVP_DigestUpdate (ctx, a->value.ptr, a->value.len);
    }
    unsigned char md [EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    EVP_DigestFinal_ex (ctx, md, &md_len);
    EVP_MD_CTX_free (ctx);
    free (sorted);
    s_hex (md, 16, out);
}

// ------------------------------------------------------------------ receipt handles
#define S_BODY_LEN  37          //  1 + 4 + 8 + 8 + 16
#define S_TAG_LEN   16
#define S_RAW_LEN   (S_BODY_LEN + S_TAG_LEN)

static void
s_put_be (unsigned char *p, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--, v >>= 8)
        p [i] = (unsigned char) v;
}

static uint64_t
s_get_be (const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = (v << 8) | p [i];
    return v;
}

static void
s_tag (const unsigned char *body, const uint8_t key [QN_SQS_HANDLE_KEY_LEN], unsigned char tag [S_TAG_LEN])
{
    unsigned char md [EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    HMAC (EVP_sha256 (), key, QN_SQS_HANDLE_KEY_LEN, body, S_BODY_LEN, md, &md_len);
    memcpy (tag, md, S_TAG_LEN);
}

void
qn_sqs_handle_encode (const qn_sqs_handle_t *h, const uint8_t key [QN_SQS_HANDLE_KEY_LEN],
                      char out [QN_SQS_HANDLE_MAX])
{
    unsigned char raw [S_RAW_LEN];
    raw [0] = 1;
    s_put_be (raw + 1, (uint32_t) h->queue_id, 4);
    s_put_be (raw + 5, (uint64_t) h->partition_id, 8);
    s_put_be (raw + 13, (uint64_t) h->seq, 8);
    memcpy (raw + 21, h->lease_id, 16);
    s_tag (raw, key, raw + S_BODY_LEN);
    sodium_bin2base64 (out, QN_SQS_HANDLE_MAX, raw, S_RAW_LEN,
                       sodium_base64_VARIANT_URLSAFE_NO_PADDING);
}

int
qn_sqs_handle_decode (const char *text, size_t len, const uint8_t key [QN_SQS_HANDLE_KEY_LEN],
                      qn_sqs_handle_t *out)
{
    unsigned char raw [S_RAW_LEN + 1];
    size_t raw_len = 0;
    const char *end = NULL;
    if (len == 0 || len >= QN_SQS_HANDLE_MAX
        || sodium_base642bin (raw, sizeof raw, text, len, NULL, &raw_len, &end,
                              sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0
        || end != text + len || raw_len != S_RAW_LEN || raw [0] != 1)
        return -1;
    unsigned char tag [S_TAG_LEN];
    s_tag (raw, key, tag);
    if (sodium_memcmp (tag, raw + S_BODY_LEN, S_TAG_LEN) != 0)
        return -1;
    out->queue_id = (int32_t) s_get_be (raw + 1, 4);
    out->partition_id = (int64_t) s_get_be (raw + 5, 8);
    out->seq = (int64_t) s_get_be (raw + 13, 8);
    memcpy (out->lease_id, raw + 21, 16);
    return 0;
}
