/*  test/fuzz/fuzz_spool.c - spool segment recovery (wire/spool_codec.c):
    scanning, resync and checkpoints over arbitrary bytes on disk.
*/
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "wire/spool_codec.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    const char *buf = (const char *) data;
    qn_spool_scan_t scan;
    qn_spool_scan (buf, size, &scan);
    if (scan.valid_len > size)
        abort ();
    //  Every record of the valid prefix decodes, and its body is checked.
    size_t at = 0;
    while (at < scan.valid_len) {
        const char *body;
        size_t body_len;
        int64_t n = qn_spool_record_decode (buf + at, scan.valid_len - at, &body, &body_len);
        if (n <= 0)
            abort ();
        (void) qn_spool_body_check (body, body_len);
        at += (size_t) n;
    }
    if (scan.stop != QN_SPOOL_SCAN_END)
        (void) qn_spool_resync (buf, size, scan.valid_len);
    uint64_t seg, off;
    (void) qn_spool_checkpoint_decode (buf, size, &seg, &off);
    (void) qn_spool_body_check (buf, size);
    return 0;
}
