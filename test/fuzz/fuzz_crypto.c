/*  test/fuzz/fuzz_crypto.c - payload envelopes (wire/crypto.c).
    The first input byte picks the target:
      0  the rest is a stored envelope, opened with a ring of two keys; it
         must never open (the fuzzer cannot forge the tag), and a failure
         leaves the output empty;
      1  the rest is a plaintext: sealed with a fixed IV, the envelope must
         open to exactly the same bytes, and open_json must agree with the
         JSON parser about whether they are one JSON value;
      2  the rest is a settings pair "current,old..." for qn_crypto_keys_load.
*/
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/crypto.h"
#include "wire/json.h"

static qn_crypto_keys_t *s_ring;

static void
s_setup (void)
{
    if (s_ring)
        return;
    s_ring = qn_crypto_keys_new ();
    uint8_t current [QN_CRYPTO_KEY_LEN], old [QN_CRYPTO_KEY_LEN];
    for (int i = 0; i < QN_CRYPTO_KEY_LEN; i++) {
        current [i] = (uint8_t) i;
        old [i] = (uint8_t) (255 - i);
    }
    if (qn_crypto_keys_add (s_ring, current, true) || qn_crypto_keys_add (s_ring, old, false))
        abort ();
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    s_setup ();
    if (size < 1)
        return 0;
    const char *rest = (const char *) data + 1;
    size_t len = size - 1;
    qn_buf_t out = QN_BUF_INIT;
    char why [160];
    switch (data [0] % 3) {
        case 0:
            if (qn_crypto_open (s_ring, rest, len, &out, why, sizeof why, NULL) == 0)
                abort ();
            if (out.len || !memchr (why, 0, sizeof why))
                abort ();
            break;
        case 1: {
            static const uint8_t iv [QN_CRYPTO_IV_LEN] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
            qn_buf_t env = QN_BUF_INIT;
            if (qn_crypto_seal_iv (s_ring, rest, len, iv, sizeof iv, &env))
                abort ();
            char kid [QN_CRYPTO_KID_LEN + 1];
            if (qn_crypto_open (s_ring, env.data, env.len, &out, why, sizeof why, kid)
            ||  out.len != len || (len && memcmp (out.data, rest, len))
            ||  strcmp (kid, qn_crypto_keys_current_kid (s_ring)))
                abort ();
            qn_json_doc_t doc;
            qn_json_doc_init (&doc);
            bool json = qn_json_parse (&doc, rest, len, 64) == 0;
            qn_json_doc_free (&doc);
            int rc = qn_crypto_open_json (s_ring, env.data, env.len, &out, why, sizeof why);
            if ((rc == 0) != json && rc != QN_CRYPTO_ENOTJSON)
                abort ();
            qn_buf_free (&env);
            break;
        }
        default: {
            char *text = strndup (rest, len);
            char *comma = strchr (text, ',');
            if (comma)
                *comma = 0;
            qn_crypto_keys_t *ring = qn_crypto_keys_new ();
            char err [160];
            (void) qn_crypto_keys_load (ring, text, comma ? comma + 1 : NULL, err, sizeof err);
            if (qn_crypto_keys_count (ring) > QN_CRYPTO_MAX_KEYS)
                abort ();
            qn_crypto_keys_destroy (&ring);
            free (text);
        }
    }
    qn_buf_free (&out);
    return 0;
}
