/*  wire/sink_config.h - queen-sink's per-queue settings (SINK_CONFIG file)
    Pure functions: the sink reads the file, these parse and check it.

    The file names queues and, for each, the settings that may differ from
    the environment's (SINK_FORMAT, SINK_COMPRESSION, SINK_WINDOW,
    SINK_LATENESS_MS, SINK_LATE, S3_PREFIX, SINK_FIELDS), which stay the
    defaults of every queue:

        # comments start with '#' or ';'; blank lines are ignored
        [orders]
        format      = parquet
        compression = zstd
        window      = 1h
        lateness_ms = 60000
        late        = next
        prefix      = lake/sales
        fields      = amount:double,customer.id:string

        [clicks]
        format = jsonl
        window = 5m

    A section "[<queue>]" starts a queue (1 to 255 bytes, no ']' or line
    break; spaces around the name are dropped); "key = value" lines set its
    settings (spaces around key and value dropped; a value may be empty,
    which for prefix means no prefix and for compression the format's
    default). Keys: format, compression, window, lateness_ms, late,
    prefix, fields. The queues written are those of SINK_QUEUES followed
    by the file's that SINK_QUEUES does not name; a section for a queue of
    SINK_QUEUES sets that queue's settings. A queue twice in the file, an
    unknown key, a key twice in a section, a key before any section, a line
    that is neither, more than QN_SINK_MAX_QUEUES queues, or a value the
    environment setting of the same meaning would refuse: refused, with
    "line N: ..." in the message.
*/
#ifndef QN_WIRE_SINK_CONFIG_H
#define QN_WIRE_SINK_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "wire/sink_format.h"

#define QN_SINK_MAX_QUEUES  64

typedef struct {
    char queue [256];
    char format [16];           //  parquet, jsonl
    char compression [16];      //  "" = the format's default
    char window [16];           //  30s, 1m, 1h, 1d ...
    int64_t lateness_ms;        //  0 .. 86,400,000
    char late [8];              //  next, prefix
    char prefix [256];          //  Without leading or trailing '/'
    char fields [1024];         //  SINK_FIELDS syntax
} qn_sink_queue_conf_t;

//  The queues of a comma-separated SINK_QUEUES text (spaces around names
//  dropped), each a copy of `defaults` with its name, into out [0..cap).
//  Returns the count (0 for an empty text), or -1 with a message in err.
int qn_sink_queues_split (const char *text, const qn_sink_queue_conf_t *defaults,
                          qn_sink_queue_conf_t *out, size_t cap, char *err, size_t err_cap);

//  Parses a SINK_CONFIG file's text (len bytes, NUL not needed) over the
//  `count` queues already in out (from qn_sink_queues_split): sections for
//  them update them, other sections append copies of `defaults`. Every
//  queue is then checked (qn_sink_queue_check). Returns the new count, or
//  -1 with a message in err ("line N: ..." for a line of the file).
int qn_sink_config_parse (const char *text, size_t len, const qn_sink_queue_conf_t *defaults,
                          qn_sink_queue_conf_t *out, size_t count, size_t cap,
                          char *err, size_t err_cap);

//  Checks one queue's settings and resolves its format: fields are parsed
//  into fields [0..QN_SINK_MAX_FIELDS) and format->fields points at them;
//  *window_ms gets the width. Any of format, fields, window_ms may be NULL
//  (then only checked). 0, or -1 with a message naming the setting.
int qn_sink_queue_check (const qn_sink_queue_conf_t *q, uint32_t row_group_rows,
                         qn_sink_format_t *format, qn_sink_field_t *fields,
                         int64_t *window_ms, char *err, size_t err_cap);

#endif
