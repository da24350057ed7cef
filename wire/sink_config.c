/*  wire/sink_config.c - queen-sink's per-queue settings. See the header. */
#include "wire/sink_config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool
s_is_space (char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

//  Trims [*p, *p + *len) of spaces on both sides.
static void
s_trim (const char **p, size_t *len)
{
    while (*len && s_is_space (**p)) {
        (*p)++;
        (*len)--;
    }
    while (*len && s_is_space ((*p) [*len - 1]))
        (*len)--;
}

static void
s_init (qn_sink_queue_conf_t *q, const qn_sink_queue_conf_t *defaults, const char *name, size_t len)
{
    *q = *defaults;
    memcpy (q->queue, name, len);
    q->queue [len] = 0;
}

static int
s_find (const qn_sink_queue_conf_t *out, size_t count, const char *name, size_t len)
{
    for (size_t i = 0; i < count; i++)
        if (strlen (out [i].queue) == len && memcmp (out [i].queue, name, len) == 0)
            return (int) i;
    return -1;
}

int
qn_sink_queues_split (const char *text, const qn_sink_queue_conf_t *defaults,
                      qn_sink_queue_conf_t *out, size_t cap, char *err, size_t err_cap)
{
    size_t n = 0;
    const char *p = text ? text : "";
    while (*p) {
        const char *end = strchr (p, ',');
        size_t len = end ? (size_t) (end - p) : strlen (p);
        const char *name = p;
        s_trim (&name, &len);
        if (len == 0 || len > 255) {
            snprintf (err, err_cap, "SINK_QUEUES: queue names are 1 to 255 bytes, comma-separated");
            return -1;
        }
        if (n == cap) {
            snprintf (err, err_cap, "SINK_QUEUES: at most %zu queues", cap);
            return -1;
        }
        if (s_find (out, n, name, len) >= 0) {
            snprintf (err, err_cap, "SINK_QUEUES: %.*s appears twice", (int) len, name);
            return -1;
        }
        s_init (&out [n++], defaults, name, len);
        if (!end)
            break;
        p = end + 1;
    }
    return (int) n;
}

int
qn_sink_queue_check (const qn_sink_queue_conf_t *q, uint32_t row_group_rows,
                     qn_sink_format_t *format, qn_sink_field_t *fields,
                     int64_t *window_ms, char *err, size_t err_cap)
{
    qn_sink_format_t f;
    memset (&f, 0, sizeof f);
    const char *comp = q->compression;
    if (!strcmp (q->format, "parquet")) {
        f.kind = QN_SINK_PARQUET;
        if (!*comp || !strcmp (comp, "zstd"))
            f.codec = QN_PQ_ZSTD;
        else
        if (!strcmp (comp, "snappy"))
            f.codec = QN_PQ_SNAPPY;
        else
        if (!strcmp (comp, "gzip"))
            f.codec = QN_PQ_GZIP;
        else
        if (!strcmp (comp, "none"))
            f.codec = QN_PQ_UNCOMPRESSED;
        else {
            snprintf (err, err_cap, "SINK_COMPRESSION: parquet takes none, snappy, gzip or zstd, got '%s'", comp);
            return -1;
        }
        f.row_group_rows = row_group_rows;
    }
    else
    if (!strcmp (q->format, "jsonl")) {
        f.kind = QN_SINK_JSONL;
        if (!*comp || !strcmp (comp, "gzip"))
            f.gzip = true;
        else
        if (strcmp (comp, "none")) {
            snprintf (err, err_cap, "SINK_COMPRESSION: jsonl takes none or gzip, got '%s'", comp);
            return -1;
        }
    }
    else {
        snprintf (err, err_cap, "SINK_FORMAT: expected parquet or jsonl, got '%s'", q->format);
        return -1;
    }
    int64_t w;
    if (qn_sink_window_parse (q->window, &w, err, err_cap))
        return -1;
    if (q->lateness_ms < 0 || q->lateness_ms > 86400000) {
        snprintf (err, err_cap, "SINK_LATENESS_MS: 0 to 86400000, got %lld", (long long) q->lateness_ms);
        return -1;
    }
    if (strcmp (q->late, "next") && strcmp (q->late, "prefix")) {
        snprintf (err, err_cap, "SINK_LATE: expected next or prefix, got '%s'", q->late);
        return -1;
    }
    qn_sink_field_t own [QN_SINK_MAX_FIELDS];
    qn_sink_field_t *fs = fields ? fields : own;
    int nf = qn_sink_fields_parse (q->fields, fs, QN_SINK_MAX_FIELDS, err, err_cap);
    if (nf < 0)
        return -1;
    f.fields = fields;
    f.field_count = fields ? (uint32_t) nf : 0;
    if (format)
        *format = f;
    if (window_ms)
        *window_ms = w;
    return 0;
}

//  Copies a value into a fixed field; -1 when too long.
static int
s_set (char *dst, size_t cap, const char *v, size_t len)
{
    if (len >= cap)
        return -1;
    memcpy (dst, v, len);
    dst [len] = 0;
    return 0;
}

enum { K_FORMAT, K_COMPRESSION, K_WINDOW, K_LATENESS, K_LATE, K_PREFIX, K_FIELDS, K_COUNT };
static const char *const s_keys [K_COUNT] = {
    "format", "compression", "window", "lateness_ms", "late", "prefix", "fields"
};

//  Checks the section that ends (queue at index cur, header on line `line`).
static int
s_section_done (const qn_sink_queue_conf_t *q, unsigned line, char *err, size_t err_cap)
{
    char why [400];
    if (qn_sink_queue_check (q, 0, NULL, NULL, NULL, why, sizeof why) == 0)
        return 0;
    snprintf (err, err_cap, "line %u: [%s]: %s", line, q->queue, why);
    return -1;
}

int
qn_sink_config_parse (const char *text, size_t len, const qn_sink_queue_conf_t *defaults,
                      qn_sink_queue_conf_t *out, size_t count, size_t cap,
                      char *err, size_t err_cap)
{
    //  Which queues the file has a section for (a second one is an error).
    bool *seen = calloc (cap ? cap : 1, sizeof (bool));
    int cur = -1;
    unsigned cur_line = 0, set = 0;
    unsigned line = 0;
    size_t at = 0;
    int rc = -1;
    while (at < len) {
        line++;
        const char *p = text + at;
        const char *nl = memchr (p, '\n', len - at);
        size_t n = nl ? (size_t) (nl - p) : len - at;
        at += n + (nl ? 1 : 0);
        s_trim (&p, &n);
        if (n == 0 || *p == '#' || *p == ';')
            continue;
        if (memchr (p, 0, n)) {
            snprintf (err, err_cap, "line %u: a NUL byte", line);
            goto done;
        }
        if (*p == '[') {
            if (p [n - 1] != ']') {
                snprintf (err, err_cap, "line %u: a section is [queue name]", line);
                goto done;
            }
            if (cur >= 0 && s_section_done (&out [cur], cur_line, err, err_cap))
                goto done;
            const char *name = p + 1;
            size_t nl2 = n - 2;
            s_trim (&name, &nl2);
            if (nl2 == 0 || nl2 > 255 || memchr (name, ']', nl2) || memchr (name, '[', nl2)) {
                snprintf (err, err_cap, "line %u: a queue name is 1 to 255 bytes without [ or ]", line);
                goto done;
            }
            int i = s_find (out, count, name, nl2);
            if (i >= 0 && seen [i]) {
                snprintf (err, err_cap, "line %u: [%.*s] appears twice", line, (int) nl2, name);
                goto done;
            }
            if (i < 0) {
                if (count == cap) {
                    snprintf (err, err_cap, "line %u: at most %zu queues", line, cap);
                    goto done;
                }
                i = (int) count++;
                s_init (&out [i], defaults, name, nl2);
            }
            seen [i] = true;
            cur = i;
            cur_line = line;
            set = 0;
            continue;
        }
        const char *eq = memchr (p, '=', n);
        if (!eq) {
            snprintf (err, err_cap, "line %u: expected [queue] or key = value", line);
            goto done;
        }
        const char *key = p, *val = eq + 1;
        size_t kl = (size_t) (eq - p), vl = n - kl - 1;
        s_trim (&key, &kl);
        s_trim (&val, &vl);
        int k = 0;
        while (k < K_COUNT && !(strlen (s_keys [k]) == kl && memcmp (s_keys [k], key, kl) == 0))
            k++;
        if (k == K_COUNT) {
            snprintf (err, err_cap, "line %u: unknown key '%.*s' (format, compression, window, "
                      "lateness_ms, late, prefix, fields)", line, (int) (kl > 64 ? 64 : kl), key);
            goto done;
        }
        if (cur < 0) {
            snprintf (err, err_cap, "line %u: %s before any [queue] section", line, s_keys [k]);
            goto done;
        }
        if (set & (1u << k)) {
            snprintf (err, err_cap, "line %u: %s set twice in [%s]", line, s_keys [k], out [cur].queue);
            goto done;
        }
        set |= 1u << k;
        qn_sink_queue_conf_t *q = &out [cur];
        int bad = 0;
        switch (k) {
            case K_FORMAT:      bad = s_set (q->format, sizeof q->format, val, vl); break;
            case K_COMPRESSION: bad = s_set (q->compression, sizeof q->compression, val, vl); break;
            case K_WINDOW:      bad = s_set (q->window, sizeof q->window, val, vl); break;
            case K_LATE:        bad = s_set (q->late, sizeof q->late, val, vl); break;
            case K_FIELDS:      bad = s_set (q->fields, sizeof q->fields, val, vl); break;
            case K_PREFIX:
                while (vl && *val == '/') {
                    val++;
                    vl--;
                }
                while (vl && val [vl - 1] == '/')
                    vl--;
                bad = s_set (q->prefix, sizeof q->prefix, val, vl);
                break;
            case K_LATENESS: {
                char num [24];
                size_t cl = vl < sizeof num ? vl : sizeof num - 1;
                memcpy (num, val, cl);
                num [cl] = 0;
                char *end;
                long long v = strtoll (num, &end, 10);
                if (vl == 0 || vl >= sizeof num || *end || num [0] == '-' || num [0] == '+' || v > 86400000) {
                    snprintf (err, err_cap, "line %u: lateness_ms is 0 to 86400000 (ms), got '%s'", line, num);
                    goto done;
                }
                q->lateness_ms = v;
                break;
            }
        }
        if (bad) {
            snprintf (err, err_cap, "line %u: %s value is too long", line, s_keys [k]);
            goto done;
        }
    }
    if (cur >= 0 && s_section_done (&out [cur], cur_line, err, err_cap))
        goto done;
    rc = (int) count;
done:
    free (seen);
    return rc;
}
