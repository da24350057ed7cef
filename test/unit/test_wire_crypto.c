/*  test/unit/test_wire_crypto.c - payload encryption (wire/crypto.h)
    Known answers for AES-256-GCM (the GCM specification's test cases 13-15,
    as in NIST's GCM validation), the exact envelope for a fixed IV, an
    envelope written by Node's crypto (the reference's form, no kid), round
    trips, tamper detection on ciphertext, IV and tag, wrong keys, key
    rotation, malformed envelopes (every strict prefix too) and key-setting
    parsing. Envelopes are opened from exact-size heap copies so ASan
    catches a read past the end.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "wire/crypto.h"

#define KEY_A "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308"
#define KEY_B "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
#define KEY_C "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"

//  Node: createCipheriv('aes-256-gcm', KEY_A, iv 00..0f) of {"hello":"world"}
static const char *s_node_envelope =
    "{\"encrypted\":\"Dxj3eD2nYJkGYa495CsGdHY=\",\"iv\":\"AAECAwQFBgcICQoLDA0ODw==\","
    "\"authTag\":\"84ukF4nMYa97s0tGOlpmDw==\"}";

static void
s_hex (const char *hex, uint8_t *out, size_t *len)
{
    size_t got = 0;
    assert_int_equal (sodium_hex2bin (out, strlen (hex) / 2 + 1, hex, strlen (hex), NULL, &got, NULL), 0);
    *len = got;
}

static qn_crypto_keys_t *
s_ring (const char *current, const char *old)
{
    qn_crypto_keys_t *ring = qn_crypto_keys_new ();
    char err [160];
    assert_int_equal (qn_crypto_keys_load (ring, current, old, err, sizeof err), 0);
    return ring;
}

//  qn_crypto_open of an exact-size copy of [p, p+len).
static int
s_open (const qn_crypto_keys_t *ring, const char *p, size_t len, qn_buf_t *out, char *why,
        size_t why_len)
{
    char *copy = qn_malloc (len ? len : 1);
    memcpy (copy, p, len);
    int rc = qn_crypto_open (ring, copy, len, out, why, why_len, NULL);
    free (copy);
    return rc;
}

static int
s_open_str (const qn_crypto_keys_t *ring, const char *s, qn_buf_t *out)
{
    char why [200];
    return s_open (ring, s, strlen (s), out, why, sizeof why);
}

//  The decoded base64 member `name` of an envelope.
static size_t
s_member (const char *env, const char *name, uint8_t *out, size_t cap)
{
    char key [32];
    snprintf (key, sizeof key, "\"%s\":\"", name);
    const char *at = strstr (env, key);
    assert_non_null (at);
    at += strlen (key);
    const char *end = strchr (at, '"');
    size_t len = 0;
    assert_int_equal (sodium_base642bin (out, cap, at, (size_t) (end - at), NULL, &len, NULL,
                                         sodium_base64_VARIANT_ORIGINAL), 0);
    return len;
}

//  A copy of env with member `name` replaced by base64 of [bin, bin+len).
static char *
s_replace (const char *env, const char *name, const uint8_t *bin, size_t len)
{
    char key [32];
    snprintf (key, sizeof key, "\"%s\":\"", name);
    const char *at = strstr (env, key) + strlen (key);
    const char *end = strchr (at, '"');
    char b64 [4096];
    sodium_bin2base64 (b64, sizeof b64, bin, len, sodium_base64_VARIANT_ORIGINAL);
    qn_buf_t b = QN_BUF_INIT;
    qn_buf_append (&b, env, (size_t) (at - env));
    qn_buf_puts (&b, b64);
    qn_buf_puts (&b, end);
    return qn_buf_detach (&b, NULL);
}

// ------------------------------------------------------------------ known answers
static void
test_gcm_known_answers (void **state)
{
    (void) state;
    static const struct {
        const char *key, *iv, *plain, *ct, *tag;
    } cases [] = {
        //  Test case 13: zero key, zero IV, no plaintext
        { "0000000000000000000000000000000000000000000000000000000000000000",
          "000000000000000000000000", "", "", "530f8afbc74536b9a963b4f1c4cb738b" },
        //  Test case 14: zero key, zero IV, one zero block
        { "0000000000000000000000000000000000000000000000000000000000000000",
          "000000000000000000000000", "00000000000000000000000000000000",
          "cea7403d4d606b6e074ec5d3baf39d18", "d0d1c8a799996bf0265b98b5d48ab919" },
        //  Test case 15
        { KEY_A, "cafebabefacedbaddecaf888",
          "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
          "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255",
          "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
          "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad",
          "b094dac5d93471bdec1a502270e3cc6c" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        uint8_t key [32], iv [16], plain [64], ct [64], want_ct [64], tag [16], want_tag [16], back [64];
        size_t key_len, iv_len, plain_len, ct_len, tag_len;
        s_hex (cases [i].key, key, &key_len);
        s_hex (cases [i].iv, iv, &iv_len);
        s_hex (cases [i].plain, plain, &plain_len);
        s_hex (cases [i].ct, want_ct, &ct_len);
        s_hex (cases [i].tag, want_tag, &tag_len);
        assert_int_equal (key_len, 32);
        assert_int_equal (qn_aes256gcm_seal (key, iv, iv_len, plain, plain_len, ct, tag), 0);
        assert_memory_equal (ct, want_ct, ct_len);
        assert_memory_equal (tag, want_tag, 16);
        assert_int_equal (qn_aes256gcm_open (key, iv, iv_len, ct, ct_len, tag, back), 0);
        assert_memory_equal (back, plain, plain_len);
        tag [15] ^= 1;
        assert_int_equal (qn_aes256gcm_open (key, iv, iv_len, ct, ct_len, tag, back), -1);
    }
}

//  A fixed IV gives exactly this envelope (the stored form, byte for byte).
static void
test_envelope_golden (void **state)
{
    (void) state;
    qn_crypto_keys_t *ring = s_ring (KEY_A, NULL);
    assert_string_equal (qn_crypto_keys_current_kid (ring), "7f70dfd8");
    uint8_t iv [16];
    for (int i = 0; i < 16; i++)
        iv [i] = (uint8_t) i;
    qn_buf_t out = QN_BUF_INIT;
    const char *plain = "{\"hello\":\"world\"}";
    assert_int_equal (qn_crypto_seal_iv (ring, plain, strlen (plain), iv, sizeof iv, &out), 0);
    assert_string_equal (out.data,
        "{\"encrypted\":\"Dxj3eD2nYJkGYa495CsGdHY=\",\"iv\":\"AAECAwQFBgcICQoLDA0ODw==\","
        "\"authTag\":\"84ukF4nMYa97s0tGOlpmDw==\",\"kid\":\"7f70dfd8\"}");
    qn_buf_free (&out);
    qn_crypto_keys_destroy (&ring);
    assert_null (ring);
    qn_crypto_keys_destroy (&ring);         //  Takes NULL
}

//  The reference's envelope (Node crypto, no kid) opens with the same key.
static void
test_envelope_reference_form (void **state)
{
    (void) state;
    qn_crypto_keys_t *ring = s_ring (KEY_B, KEY_A);     //  Found by trial: A is old here
    qn_buf_t out = QN_BUF_INIT;
    char kid [QN_CRYPTO_KID_LEN + 1] = "";
    assert_int_equal (qn_crypto_open (ring, s_node_envelope, strlen (s_node_envelope), &out,
                                      NULL, 0, kid), 0);
    assert_string_equal (out.data, "{\"hello\":\"world\"}");
    assert_string_equal (kid, "7f70dfd8");
    qn_crypto_keys_destroy (&ring);
    ring = s_ring (KEY_B, NULL);
    char why [200];
    assert_int_equal (s_open (ring, s_node_envelope, strlen (s_node_envelope), &out, why, sizeof why),
                      QN_CRYPTO_EAUTH);
    assert_int_equal (out.len, 0);
    assert_non_null (strstr (why, "authentication failed"));
    qn_buf_free (&out);
    qn_crypto_keys_destroy (&ring);
}

// ------------------------------------------------------------------ round trips
static void
test_round_trips (void **state)
{
    (void) state;
    qn_crypto_keys_t *ring = s_ring (KEY_A, NULL);
    static const size_t sizes [] = { 0, 1, 15, 16, 17, 255, 1000, 100000 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes [0]; i++) {
        size_t n = sizes [i];
        uint8_t *plain = qn_malloc (n + 1);
        for (size_t k = 0; k < n; k++)
            plain [k] = (uint8_t) (k * 31 + i);
        qn_buf_t env = QN_BUF_INIT, out = QN_BUF_INIT;
        assert_int_equal (qn_crypto_seal (ring, plain, n, &env), 0);
        assert_int_equal (s_open (ring, env.data, env.len, &out, NULL, 0), 0);
        assert_int_equal (out.len, n);
        if (n)
            assert_memory_equal (out.data, plain, n);
        assert_non_null (strstr (env.data, "\"kid\":\"7f70dfd8\""));
        uint8_t iv [64];
        assert_int_equal (s_member (env.data, "iv", iv, sizeof iv), QN_CRYPTO_IV_LEN);
        qn_buf_free (&env);
        qn_buf_free (&out);
        free (plain);
    }
    qn_crypto_keys_destroy (&ring);
}

//  The same plaintext twice: fresh IVs, different ciphertexts.
static void
test_fresh_iv (void **state)
{
    (void) state;
    qn_crypto_keys_t *ring = s_ring (KEY_A, NULL);
    const char *plain = "{\"same\":true}";
    qn_buf_t a = QN_BUF_INIT, b = QN_BUF_INIT;
    assert_int_equal (qn_crypto_seal (ring, plain, strlen (plain), &a), 0);
    assert_int_equal (qn_crypto_seal (ring, plain, strlen (plain), &b), 0);
    uint8_t iv_a [64], iv_b [64], ct_a [64], ct_b [64];
    s_member (a.data, "iv", iv_a, sizeof iv_a);
    s_member (b.data, "iv", iv_b, sizeof iv_b);
    assert_memory_not_equal (iv_a, iv_b, QN_CRYPTO_IV_LEN);
    size_t n = s_member (a.data, "encrypted", ct_a, sizeof ct_a);
    assert_int_equal (s_member (b.data, "encrypted", ct_b, sizeof ct_b), n);
    assert_memory_not_equal (ct_a, ct_b, n);
    assert_null (strstr (a.data, "same"));
    qn_buf_free (&a);
    qn_buf_free (&b);
    qn_crypto_keys_destroy (&ring);
}

//  Appending to a buffer keeps what it held.
static void
test_seal_appends (void **state)
{
    (void) state;
    qn_crypto_keys_t *ring = s_ring (KEY_A, NULL);
    qn_buf_t out = QN_BUF_INIT;
    qn_buf_puts (&out, "[");
    assert_int_equal (qn_crypto_seal (ring, "1", 1, &out), 0);
    assert_int_equal (out.data [0], '[');
    assert_int_equal (out.data [1], '{');
    qn_buf_free (&out);
    qn_crypto_keys_destroy (&ring);
}

// ------------------------------------------------------------------ tampering
static void
test_tamper_detected (void **state)
{
    (void) state;
    qn_crypto_keys_t *ring = s_ring (KEY_A, NULL);
    const char *plain = "{\"amount\":100,\"to\":\"alice\"}";
    qn_buf_t env = QN_BUF_INIT, out = QN_BUF_INIT;
    assert_int_equal (qn_crypto_seal (ring, plain, strlen (plain), &env), 0);
    static const char *fields [] = { "encrypted", "iv", "authTag" };
    for (int f = 0; f < 3; f++) {
        uint8_t bin [256];
        size_t n = s_member (env.data, fields [f], bin, sizeof bin);
        //  Every bit of every byte
        for (size_t i = 0; i < n; i++)
            for (int bit = 0; bit < 8; bit++) {
                bin [i] ^= (uint8_t) (1 << bit);
                char *bad = s_replace (env.data, fields [f], bin, n);
                char why [200] = "";
                assert_int_equal (s_open (ring, bad, strlen (bad), &out, why, sizeof why),
                                  QN_CRYPTO_EAUTH);
                assert_int_equal (out.len, 0);
                assert_non_null (strstr (why, "7f70dfd8"));
                free (bad);
                bin [i] ^= (uint8_t) (1 << bit);
            }
    }
    //  Truncated and extended ciphertext
    uint8_t ct [256];
    size_t n = s_member (env.data, "encrypted", ct, sizeof ct);
    char *shorter = s_replace (env.data, "encrypted", ct, n - 1);
    assert_int_equal (s_open_str (ring, shorter, &out), QN_CRYPTO_EAUTH);
    ct [n] = 0;
    char *longer = s_replace (env.data, "encrypted", ct, n + 1);
    assert_int_equal (s_open_str (ring, longer, &out), QN_CRYPTO_EAUTH);
    free (shorter);
    free (longer);
    //  Untouched, it still opens
    assert_int_equal (s_open_str (ring, env.data, &out), 0);
    assert_int_equal (out.len, strlen (plain));
    qn_buf_free (&env);
    qn_buf_free (&out);
    qn_crypto_keys_destroy (&ring);
}

// ------------------------------------------------------------------ keys
static void
test_wrong_key (void **state)
{
    (void) state;
    qn_crypto_keys_t *a = s_ring (KEY_A, NULL), *b = s_ring (KEY_B, NULL);
    qn_buf_t env = QN_BUF_INIT, out = QN_BUF_INIT;
    assert_int_equal (qn_crypto_seal (a, "\"secret\"", 8, &env), 0);
    char why [200];
    //  Its kid names a key b does not have: no trial, a clear error.
    assert_int_equal (s_open (b, env.data, env.len, &out, why, sizeof why), QN_CRYPTO_ENOKEY);
    assert_non_null (strstr (why, "7f70dfd8"));
    assert_non_null (strstr (why, "not configured"));
    assert_int_equal (out.len, 0);
    //  A forged kid naming b's key: the tag refuses it.
    char kid_b [QN_CRYPTO_KID_LEN + 1], *forged = qn_strdup (env.data);
    strcpy (kid_b, qn_crypto_keys_current_kid (b));
    memcpy (strstr (forged, "7f70dfd8"), kid_b, QN_CRYPTO_KID_LEN);
    assert_int_equal (s_open (b, forged, strlen (forged), &out, why, sizeof why), QN_CRYPTO_EAUTH);
    assert_int_equal (out.len, 0);
    free (forged);
    //  No key at all
    qn_crypto_keys_t *none = s_ring ("", "");
    assert_false (qn_crypto_keys_can_seal (none));
    assert_null (qn_crypto_keys_current_kid (none));
    assert_int_equal (s_open (none, env.data, env.len, &out, why, sizeof why), QN_CRYPTO_ENOKEY);
    assert_non_null (strstr (why, "QUEEN_ENCRYPTION_KEY"));
    assert_int_equal (qn_crypto_seal (none, "1", 1, &out), QN_CRYPTO_ENOKEY);
    assert_int_equal (out.len, 0);
    qn_buf_free (&env);
    qn_buf_free (&out);
    qn_crypto_keys_destroy (&a);
    qn_crypto_keys_destroy (&b);
    qn_crypto_keys_destroy (&none);
}

//  Rotation: seal with A; B current + A old reads both; B alone refuses A's.
static void
test_rotation (void **state)
{
    (void) state;
    qn_crypto_keys_t *a = s_ring (KEY_A, NULL);
    qn_crypto_keys_t *ba = s_ring (KEY_B, " " KEY_C " ,, " KEY_A "\n");
    qn_crypto_keys_t *b = s_ring (KEY_B, NULL);
    qn_crypto_keys_t *old_only = s_ring (NULL, KEY_A);
    assert_int_equal (qn_crypto_keys_count (ba), 3);
    qn_buf_t env_a = QN_BUF_INIT, env_b = QN_BUF_INIT, out = QN_BUF_INIT;
    assert_int_equal (qn_crypto_seal (a, "{\"n\":1}", 7, &env_a), 0);
    assert_int_equal (qn_crypto_seal (ba, "{\"n\":2}", 7, &env_b), 0);
    char kid [QN_CRYPTO_KID_LEN + 1];
    assert_int_equal (qn_crypto_open (ba, env_a.data, env_a.len, &out, NULL, 0, kid), 0);
    assert_string_equal (out.data, "{\"n\":1}");
    assert_string_equal (kid, qn_crypto_keys_current_kid (a));
    assert_int_equal (qn_crypto_open (ba, env_b.data, env_b.len, &out, NULL, 0, kid), 0);
    assert_string_equal (out.data, "{\"n\":2}");
    assert_string_equal (kid, qn_crypto_keys_current_kid (b));
    assert_int_equal (s_open_str (b, env_b.data, &out), 0);
    assert_int_equal (s_open_str (b, env_a.data, &out), QN_CRYPTO_ENOKEY);
    //  Old keys only: reads, never seals
    assert_false (qn_crypto_keys_can_seal (old_only));
    assert_int_equal (s_open_str (old_only, env_a.data, &out), 0);
    assert_int_equal (qn_crypto_seal (old_only, "1", 1, &out), QN_CRYPTO_ENOKEY);
    qn_buf_free (&env_a);
    qn_buf_free (&env_b);
    qn_buf_free (&out);
    qn_crypto_keys_destroy (&a);
    qn_crypto_keys_destroy (&ba);
    qn_crypto_keys_destroy (&b);
    qn_crypto_keys_destroy (&old_only);
}

static void
test_key_settings (void **state)
{
    (void) state;
    char err [200];
    qn_crypto_keys_t *ring = qn_crypto_keys_new ();
    //  Upper-case hex is fine; the same key twice is one key.
    char upper [65];
    strcpy (upper, KEY_A);
    for (char *p = upper; *p; p++)
        if (*p >= 'a' && *p <= 'f')
            *p = (char) (*p - 32);
    assert_int_equal (qn_crypto_keys_load (ring, upper, KEY_A "," KEY_A, err, sizeof err), 0);
    assert_int_equal (qn_crypto_keys_count (ring), 1);
    assert_string_equal (qn_crypto_keys_current_kid (ring), "7f70dfd8");
    qn_crypto_keys_destroy (&ring);

    static const struct {
        const char *current, *old, *error;
    } bad [] = {
        { "abc", NULL, "QUEEN_ENCRYPTION_KEY: expected 64 hex" },
        { KEY_A "00", NULL, "QUEEN_ENCRYPTION_KEY: expected 64 hex" },
        { "zz" KEY_A, NULL, "QUEEN_ENCRYPTION_KEY: expected 64 hex" },
        { " " KEY_A, NULL, "QUEEN_ENCRYPTION_KEY: expected 64 hex" },
        { KEY_A, KEY_B ",nothex", "QUEEN_ENCRYPTION_OLD_KEYS: entry 2: expected 64 hex" },
        { KEY_A, KEY_B "," KEY_C "0", "QUEEN_ENCRYPTION_OLD_KEYS: entry 2: expected 64 hex" },
        { KEY_A, KEY_B ";" KEY_C, "QUEEN_ENCRYPTION_OLD_KEYS: entry 1: expected 64 hex" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
        ring = qn_crypto_keys_new ();
        err [0] = 0;
        assert_int_equal (qn_crypto_keys_load (ring, bad [i].current, bad [i].old, err, sizeof err), -1);
        assert_non_null (strstr (err, bad [i].error));
        assert_null (strstr (err, "feffe992"));         //  Never the key
        assert_null (strstr (err, "00010203"));
        qn_crypto_keys_destroy (&ring);
    }
    //  A ring holds at most QN_CRYPTO_MAX_KEYS
    qn_buf_t list = QN_BUF_INIT;
    for (int i = 0; i < QN_CRYPTO_MAX_KEYS; i++)
        qn_buf_printf (&list, "%s%062x%02x", i ? "," : "", 0, i);
    ring = qn_crypto_keys_new ();
    assert_int_equal (qn_crypto_keys_load (ring, KEY_A, list.data, err, sizeof err), -1);
    assert_non_null (strstr (err, "at most"));
    qn_crypto_keys_destroy (&ring);
    ring = qn_crypto_keys_new ();
    assert_int_equal (qn_crypto_keys_load (ring, NULL, list.data, err, sizeof err), 0);
    assert_int_equal (qn_crypto_keys_count (ring), QN_CRYPTO_MAX_KEYS);
    qn_crypto_keys_destroy (&ring);
    qn_buf_free (&list);
}

// ------------------------------------------------------------------ malformed
static void
test_malformed_envelopes (void **state)
{
    (void) state;
    qn_crypto_keys_t *ring = s_ring (KEY_A, NULL);
    static const char *bad [] = {
        "", " ", "null", "[]", "\"x\"", "{", "{}", "{\"encrypted\":1}",
        "{\"hello\":\"world\"}",
        //  Members missing or of the wrong type
        "{\"iv\":\"AAECAwQFBgcICQoLDA0ODw==\",\"authTag\":\"84ukF4nMYa97s0tGOlpmDw==\"}",
        "{\"encrypted\":\"Dxj3eD2nYJkGYa495CsGdHY=\",\"authTag\":\"84ukF4nMYa97s0tGOlpmDw==\"}",
        "{\"encrypted\":\"Dxj3eD2nYJkGYa495CsGdHY=\",\"iv\":\"AAECAwQFBgcICQoLDA0ODw==\"}",
        "{\"encrypted\":[],\"iv\":\"AAECAwQFBgcICQoLDA0ODw==\",\"authTag\":\"84ukF4nMYa97s0tGOlpmDw==\"}",
        "{\"encrypted\":\"Dxj3eD2nYJkGYa495CsGdHY=\",\"iv\":null,\"authTag\":\"84ukF4nMYa97s0tGOlpmDw==\"}",
        //  Bad base64 (alphabet, padding, URL-safe variant)
        "{\"encrypted\":\"Dxj3eD2n*JkGYa495CsGdHY=\",\"iv\":\"AAECAwQFBgcICQoLDA0ODw==\",\"authTag\":\"84ukF4nMYa97s0tGOlpmDw==\"}",
        "{\"encrypted\":\"Dxj3eD2nYJkGYa495CsGdHY\",\"iv\":\"AAECAwQFBgcICQoLDA0ODw==\",\"authTag\":\"84ukF4nMYa97s0tGOlpmDw==\"}",
        "{\"encrypted\":\"Dxj3eD2nYJkGYa495CsGdHY=\",\"iv\":\"AAECAwQFBgcICQoLDA0ODw==\",\"authTag\":\"84ukF4nMYa97s0tGOlpmDw-_\"}",
        //  IV too short (8 bytes) or too long (20), tag 15 bytes or 17
        "{\"encrypted\":\"Dxj3eD2nYJkGYa495CsGdHY=\",\"iv\":\"AAECAwQFBgc=\",\"authTag\":\"84ukF4nMYa97s0tGOlpmDw==\"}",
        "{\"encrypted\":\"Dxj3eD2nYJkGYa495CsGdHY=\",\"iv\":\"AAECAwQFBgcICQoLDA0ODxAREhM=\",\"authTag\":\"84ukF4nMYa97s0tGOlpmDw==\"}",
        "{\"encrypted\":\"Dxj3eD2nYJkGYa495CsGdHY=\",\"iv\":\"AAECAwQFBgcICQoLDA0ODw==\",\"authTag\":\"84ukF4nMYa97s0tGOlpm\"}",
        "{\"encrypted\":\"Dxj3eD2nYJkGYa495CsGdHY=\",\"iv\":\"AAECAwQFBgcICQoLDA0ODw==\",\"authTag\":\"84ukF4nMYa97s0tGOlpmDwAA\"}",
        //  A kid that is not 8 lowercase hex digits
        "{\"encrypted\":\"Dxj3eD2nYJkGYa495CsGdHY=\",\"iv\":\"AAECAwQFBgcICQoLDA0ODw==\",\"authTag\":\"84ukF4nMYa97s0tGOlpmDw==\",\"kid\":\"7F70DFD8\"}",
        "{\"encrypted\":\"Dxj3eD2nYJkGYa495CsGdHY=\",\"iv\":\"AAECAwQFBgcICQoLDA0ODw==\",\"authTag\":\"84ukF4nMYa97s0tGOlpmDw==\",\"kid\":\"7f70dfd\"}",
        "{\"encrypted\":\"Dxj3eD2nYJkGYa495CsGdHY=\",\"iv\":\"AAECAwQFBgcICQoLDA0ODw==\",\"authTag\":\"84ukF4nMYa97s0tGOlpmDw==\",\"kid\":7}",
        //  Not JSON (trailing bytes, nested too deep)
        "{\"encrypted\":\"Dxj3eD2nYJkGYa495CsGdHY=\",\"iv\":\"AAECAwQFBgcICQoLDA0ODw==\",\"authTag\":\"84ukF4nMYa97s0tGOlpmDw==\"}x",
        "{\"encrypted\":\"Dxj3eD2nYJkGYa495CsGdHY=\",\"iv\":\"AAECAwQFBgcICQoLDA0ODw==\",\"authTag\":\"84ukF4nMYa97s0tGOlpmDw==\",\"x\":[[[1]]]}",
    };
    qn_buf_t out = QN_BUF_INIT;
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
        char why [200] = "";
        int rc = s_open (ring, bad [i], strlen (bad [i]), &out, why, sizeof why);
        if (rc != QN_CRYPTO_EMALFORMED)
            fail_msg ("case %zu: rc=%d why=%s", i, rc, why);
        assert_int_equal (out.len, 0);
        assert_non_null (strstr (why, "malformed envelope"));
    }
    //  NULL input, and every strict prefix of a valid envelope
    assert_int_equal (qn_crypto_open (ring, NULL, 0, &out, NULL, 0, NULL), QN_CRYPTO_EMALFORMED);
    size_t len = strlen (s_node_envelope);
    for (size_t cut = 0; cut < len; cut++)
        assert_int_equal (s_open (ring, s_node_envelope, cut, &out, NULL, 0), QN_CRYPTO_EMALFORMED);
    assert_int_equal (s_open (ring, s_node_envelope, len, &out, NULL, 0), 0);
    //  Extra members are ignored (the reference may add some)
    const char *extra = "{\"v\":1,\"encrypted\":\"Dxj3eD2nYJkGYa495CsGdHY=\",\"iv\":\"AAECAwQFBgcICQoLDA0ODw==\","
                        "\"authTag\":\"84ukF4nMYa97s0tGOlpmDw==\",\"kid\":\"7f70dfd8\"}";
    assert_int_equal (s_open_str (ring, extra, &out), 0);
    assert_string_equal (out.data, "{\"hello\":\"world\"}");
    qn_buf_free (&out);
    qn_crypto_keys_destroy (&ring);
}

//  open_json: an authentic plaintext that is not JSON is refused.
static void
test_open_json (void **state)
{
    (void) state;
    qn_crypto_keys_t *ring = s_ring (KEY_A, NULL);
    qn_buf_t env = QN_BUF_INIT, out = QN_BUF_INIT;
    char why [200];
    assert_int_equal (qn_crypto_seal (ring, "not json", 8, &env), 0);
    assert_int_equal (qn_crypto_open_json (ring, env.data, env.len, &out, why, sizeof why),
                      QN_CRYPTO_ENOTJSON);
    assert_int_equal (out.len, 0);
    assert_non_null (strstr (why, "not JSON"));
    qn_buf_reset (&env);
    assert_int_equal (qn_crypto_seal (ring, "[1,2]", 5, &env), 0);
    assert_int_equal (qn_crypto_open_json (ring, env.data, env.len, &out, why, sizeof why), 0);
    assert_string_equal (out.data, "[1,2]");
    assert_string_equal (qn_crypto_strerror (QN_CRYPTO_EAUTH), "authentication failed");
    assert_string_equal (qn_crypto_strerror (QN_CRYPTO_ENOKEY), "key not configured");
    qn_buf_free (&env);
    qn_buf_free (&out);
    qn_crypto_keys_destroy (&ring);
}

//  Keyed digests: a known answer (Python: hmac.new (hmac.new (KEY_A,
//  b"queen-digest-v1:timer-payload", sha256).digest (), plain, sha256)),
//  stable for one key and label, different for another key or label,
//  none without a current key.
static void
test_digest (void **state)
{
    (void) state;
    qn_crypto_keys_t *a = s_ring (KEY_A, NULL);
    qn_crypto_keys_t *b = s_ring (KEY_B, KEY_A);
    qn_crypto_keys_t *none = s_ring (NULL, KEY_A);
    const char *plain = "{\"hello\":\"world\"}";
    uint8_t d1 [QN_CRYPTO_DIGEST_LEN], d2 [QN_CRYPTO_DIGEST_LEN];
    char hex [2 * QN_CRYPTO_DIGEST_LEN + 1];
    assert_int_equal (qn_crypto_digest (a, "timer-payload", plain, strlen (plain), d1), 0);
    for (int i = 0; i < QN_CRYPTO_DIGEST_LEN; i++)
        snprintf (hex + 2 * i, 3, "%02x", d1 [i]);
    assert_string_equal (hex, "7c9d9acd0538ddea8f380435212d129158e803cc85467074bb278abcb27dc093");
    assert_int_equal (qn_crypto_digest (a, "timer-payload", plain, strlen (plain), d2), 0);
    assert_memory_equal (d1, d2, sizeof d1);
    assert_int_equal (qn_crypto_digest (a, "other", plain, strlen (plain), d2), 0);
    assert_memory_not_equal (d1, d2, sizeof d1);
    assert_int_equal (qn_crypto_digest (b, "timer-payload", plain, strlen (plain), d2), 0);
    assert_memory_not_equal (d1, d2, sizeof d1);
    assert_int_equal (qn_crypto_digest (a, "timer-payload", "", 0, d2), 0);
    assert_int_equal (qn_crypto_digest (none, "timer-payload", plain, strlen (plain), d2),
                      QN_CRYPTO_ENOKEY);
    qn_crypto_keys_destroy (&a);
    qn_crypto_keys_destroy (&b);
    qn_crypto_keys_destroy (&none);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_gcm_known_answers),
        cmocka_unit_test (test_envelope_golden),
        cmocka_unit_test (test_envelope_reference_form),
        cmocka_unit_test (test_round_trips),
        cmocka_unit_test (test_fresh_iv),
        cmocka_unit_test (test_seal_appends),
        cmocka_unit_test (test_tamper_detected),
        cmocka_unit_test (test_wrong_key),
        cmocka_unit_test (test_rotation),
        cmocka_unit_test (test_key_settings),
        cmocka_unit_test (test_malformed_envelopes),
        cmocka_unit_test (test_open_json),
        cmocka_unit_test (test_digest),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
