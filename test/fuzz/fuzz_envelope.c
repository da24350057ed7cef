/*  test/fuzz/fuzz_envelope.c - actor envelope headers (kernel/envelope.c):
    whatever decodes must encode and decode to the same fields.
*/
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/envelope.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    qn_env_t env;
    if (qn_env_decode_header ((const char *) data, size, &env) == 0) {
        qn_buf_t b = QN_BUF_INIT;
        qn_env_encode_header (&env, &b);
        qn_env_t again;
        if (qn_env_decode_header (b.data, b.len, &again) != 0
        ||  again.type != env.type || again.corr != env.corr
        ||  again.from.len != env.from.len
        ||  (env.from.len && memcmp (again.from.ptr, env.from.ptr, env.from.len)))
            abort ();
        qn_buf_free (&b);
    }
    return 0;
}
