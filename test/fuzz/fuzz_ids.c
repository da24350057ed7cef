/*  test/fuzz/fuzz_ids.c - ids and timestamps from clients (wire/ids.c) */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/ids.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    int64_t id, us;
    for (int kind = 1; kind <= 5; kind++)
        if (qn_id_parse ((qn_id_kind_t) kind, (const char *) data, size, &id) == 0) {
            char s [QN_ID_STR_LEN + 1];
            qn_id_format ((qn_id_kind_t) kind, id, s);
            int64_t back;
            if (qn_id_parse ((qn_id_kind_t) kind, s, strlen (s), &back) != 0 || back != id)
                abort ();
        }
    (void) qn_uuid_valid ((const char *) data, size);
    if (qn_ts_parse ((const char *) data, size, &us) == 0) {
        char s [32];
        qn_ts_us (us, s);
    }
    return 0;
}
