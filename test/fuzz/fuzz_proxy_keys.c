/*  test/fuzz/fuzz_proxy_keys.c - what queen-proxy decodes from clients
    before forwarding: API keys (wire/proxy_keys.c) and request paths
    against the route-to-role table (wire/proxy_routes.c).
      byte 0 = 0: the rest is a presented key: a parsed key's id and secret
                  must rebuild it byte for byte, and it never verifies
                  against a fixed hash (the fuzzer cannot know the secret);
      byte 0 = 1: the rest is "METHOD target": classification never
                  crashes, and a route no role may call is never allowed;
      byte 0 = 2: the rest is a Cookie header: a found value lies inside
                  it, right after "queen_session=".
*/
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/proxy_keys.h"
#include "wire/proxy_routes.h"

static char s_hash [QN_KEY_HASH_MAX];

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *text = (const char *) data + 1;
    size_t len = size - 1;
    if (data [0] == 0) {
        if (!s_hash [0]) {
            qn_key_new_t k;
            if (qn_key_generate (&k))
                abort ();
            memcpy (s_hash, k.hash, sizeof s_hash);
        }
        char id [QN_KEY_ID_LEN + 1];
        const char *secret;
        size_t slen;
        if (qn_key_parse (text, len, id, &secret, &slen) == 0) {
            char again [QN_KEY_LEN + 1];
            memcpy (again, "qk_", 3);
            memcpy (again + 3, id, QN_KEY_ID_LEN);
            again [3 + QN_KEY_ID_LEN] = '_';
            memcpy (again + 4 + QN_KEY_ID_LEN, secret, slen);
            if (len != QN_KEY_LEN || memcmp (again, text, len))
                abort ();
            if (qn_key_verify (s_hash, secret, slen))
                abort ();
        }
        return 0;
    }
    if (data [0] == 2) {
        const char *v;
        size_t n;
        if (qn_cookie_get (text, len, "queen_session", &v, &n) == 0
        &&  (v < text + 14 || v + n > text + len || memcmp (v - 14, "queen_session=", 14)))
            abort ();
        return 0;
    }
    const char *sp = memchr (text, ' ', len);
    if (!sp || sp == text || (size_t) (sp - text) >= 16)
        return 0;
    char method [16];
    memcpy (method, text, (size_t) (sp - text));
    method [sp - text] = 0;
    qn_url_t url;
    if (qn_url_parse (&url, sp + 1, len - (size_t) (sp + 1 - text)))
        return 0;
    qn_pr_route_t r = qn_proxy_route (method, &url);
    for (int role = QN_ROLE_NONE; role <= QN_ROLE_CONSUMER; role++) {
        bool ok = qn_proxy_route_allows (&r, (qn_role_t) role);
        if (ok && (r.kind == QN_PR_CLUSTER || r.kind == QN_PR_UNKNOWN))
            abort ();
        if (ok && !r.public_ && role == QN_ROLE_NONE)
            abort ();
    }
    qn_url_free (&url);
    return 0;
}
