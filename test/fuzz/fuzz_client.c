/*  test/fuzz/fuzz_client.c - libqueen's readers of broker answers
    (client/decode.c): any bytes given as a push, pop, ack, transaction or
    error answer yield a code and a consistent result (freed without
    leaks), never a crash. The first byte picks the expected result count.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/internal.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t count = data [0] % 8;
    const char *body = (const char *) data + 1;
    size_t len = size - 1;
    queen_error_t err = { 0 };

    char text [512];
    queen__error_text (body, len, 400, text, sizeof text);
    if (!text [0])
        abort ();

    queen_push_result_t res [8];
    memset (res, 0, sizeof res);
    queen_code_t code = queen__decode_push (body, len, res, count, &err);
    if (code != QUEEN_OK && code != QUEEN_ERR_PROTOCOL)
        abort ();
    for (size_t i = 0; i < 8; i++) {
        free (res [i].status);
        free (res [i].message_id);
        free (res [i].partition_id);
        free (res [i].error);
    }

    queen_batch_t b;
    code = queen__decode_batch (body, len, &b, &err);
    if (code == QUEEN_OK) {
        for (size_t i = 0; i < b.count; i++)
            if (b.messages [i].data && strlen (b.messages [i].data) != b.messages [i].data_len)
                abort ();
    }
    else if (b.count != 0 || b.messages)
        abort ();               //  Freed again on error
    queen_batch_free (&b);

    bool ok [8];
    code = queen__decode_acks (body, len, 200, count, ok, "ack", &err);
    if (code != QUEEN_OK && code != QUEEN_ERR_PROTOCOL && code != QUEEN_ERR_REFUSED)
        abort ();
    code = queen__decode_txn (body, len, 200, &err);
    if (code != QUEEN_OK && code != QUEEN_ERR_PROTOCOL && code != QUEEN_ERR_REFUSED)
        abort ();
    queen_error_clear (&err);
    return 0;
}
