/*  test/fuzz/fuzz_sink_config.c - queen-sink's SINK_CONFIG file
    (wire/sink_config.c): the file's bytes parsed over two queues of
    SINK_QUEUES, every resulting queue's settings resolved (format, fields,
    window), and SINK_QUEUES itself when the first byte is odd.
*/
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/sink_config.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    qn_sink_queue_conf_t def;
    memset (&def, 0, sizeof def);
    strcpy (def.format, "parquet");
    strcpy (def.window, "1h");
    strcpy (def.late, "next");
    def.lateness_ms = 1000;
    qn_sink_queue_conf_t *q = calloc (QN_SINK_MAX_QUEUES, sizeof *q);
    char err [400];
    if (size && (data [0] & 1)) {
        char *z = malloc (size);
        memcpy (z, data + 1, size - 1);
        z [size - 1] = 0;
        (void) qn_sink_queues_split (z, &def, q, QN_SINK_MAX_QUEUES, err, sizeof err);
        free (z);
        free (q);
        return 0;
    }
    int n = qn_sink_queues_split ("orders,clicks", &def, q, QN_SINK_MAX_QUEUES, err, sizeof err);
    n = qn_sink_config_parse ((const char *) data, size, &def, q, (size_t) n, QN_SINK_MAX_QUEUES,
                              err, sizeof err);
    if (n < 0 && !strchr (err, ' '))
        abort ();                       //  A refusal always says why
    for (int i = 0; i < n; i++) {
        qn_sink_format_t f;
        qn_sink_field_t fields [QN_SINK_MAX_FIELDS];
        int64_t w;
        if (qn_sink_queue_check (&q [i], 100, &f, fields, &w, err, sizeof err))
            abort ();                   //  parse checked every queue already
        if (w <= 0 || strlen (q [i].queue) == 0 || strlen (q [i].queue) > 255)
            abort ();
    }
    free (q);
    return 0;
}
