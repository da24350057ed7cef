/*  wire/sink_format.c - windows, object keys, parts and files of queen-sink
    (see sink_format.h for the exact forms). Pure: no I/O, no clock.
*/
#include "wire/sink_format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "wire/json.h"

#define DAY_MS  86400000LL

//  ------------------------------------------------------------------------
//  Civil time (Howard Hinnant's days_from_civil / civil_from_days)

static int64_t
s_days_from_civil (int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned) (y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t) doe - 719468;
}

static void
s_civil_from_days (int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned) (z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t) yoe + era * 400 + (*m <= 2);
}

static int64_t
s_floor_div (int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

typedef struct {
    int64_t year;
    unsigned month, day, hour, minute, second;
    int64_t us;                 //  Within the second
} civil_t;

static void
s_civil_us (int64_t us, civil_t *c)
{
    int64_t days = s_floor_div (us, DAY_MS * 1000);
    int64_t rest = us - days * DAY_MS * 1000;
    s_civil_from_days (days, &c->year, &c->month, &c->day);
    c->hour = (unsigned) (rest / 3600000000LL);
    c->minute = (unsigned) (rest / 60000000LL % 60);
    c->second = (unsigned) (rest / 1000000 % 60);
    c->us = rest % 1000000;
}

void
qn_sink_iso_us (int64_t us, char out [32])
{
    civil_t c;
    s_civil_us (us, &c);
    snprintf (out, 32, "%04lld-%02u-%02uT%02u:%02u:%02u.%06lldZ", (long long) c.year,
              c.month, c.day, c.hour, c.minute, c.second, (long long) c.us);
}

static int
s_digits (const char *s, size_t n, unsigned *out)
{
    unsigned v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s [i] < '0' || s [i] > '9')
            return -1;
        v = v * 10 + (unsigned) (s [i] - '0');
    }
    *out = v;
    return 0;
}

int
qn_sink_parse_iso_us (const char *s, size_t len, int64_t *out)
{
    unsigned y, mo, d, h, mi, se;
    if (len < 20 || s [4] != '-' || s [7] != '-' || (s [10] != 'T' && s [10] != ' ')
    ||  s [13] != ':' || s [16] != ':'
    ||  s_digits (s, 4, &y) || s_digits (s + 5, 2, &mo) || s_digits (s + 8, 2, &d)
    ||  s_digits (s + 11, 2, &h) || s_digits (s + 14, 2, &mi) || s_digits (s + 17, 2, &se))
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
        return -1;
    size_t i = 19;
    int64_t frac = 0;
    int digits = 0;
    if (i < len && s [i] == '.') {
        i++;
        while (i < len && s [i] >= '0' && s [i] <= '9') {
            if (digits < 6) {
                frac = frac * 10 + (s [i] - '0');
                digits++;
            }
            else
            if (digits >= 9)
                return -1;
            else
                digits++;
            i++;
        }
        if (digits == 0)
            return -1;
    }
    for (int k = digits < 6 ? digits : 6; k < 6; k++)
        frac *= 10;
    if (len - i == 1 && s [i] == 'Z')
        ;
    else
    if (len - i == 6 && memcmp (s + i, "+00:00", 6) == 0)
        ;
    else
        return -1;
    int64_t days = s_days_from_civil (y, mo, d);
    *out = ((days * 86400 + h * 3600 + mi * 60 + se) * 1000000LL) + frac;
    return 0;
}

//  ------------------------------------------------------------------------
//  Windows and keys

int
qn_sink_window_parse (const char *text, int64_t *width_ms, char *err, size_t err_cap)
{
    size_t n = text ? strlen (text) : 0;
    unsigned v = 0;
    int64_t unit = 0;
    if (n >= 2 && n <= 7 && s_digits (text, n - 1, &v) == 0 && v > 0) {
        switch (text [n - 1]) {
            case 's': unit = 1000; break;
            case 'm': unit = 60000; break;
            case 'h': unit = 3600000; break;
            case 'd': unit = DAY_MS; break;
            default:  break;
        }
    }
    if (!unit) {
        snprintf (err, err_cap, "SINK_WINDOW must be <n>s, <n>m, <n>h or 1d (got \"%s\")",
                  text ? text : "");
        return -1;
    }
    int64_t w = (int64_t) v * unit;
    if (w > DAY_MS || DAY_MS % w != 0) {
        snprintf (err, err_cap, "SINK_WINDOW %s does not divide a day evenly", text);
        return -1;
    }
    *width_ms = w;
    return 0;
}

int64_t
qn_sink_window_start (int64_t created_us, int64_t width_ms)
{
    int64_t ms = s_floor_div (created_us, 1000);
    return s_floor_div (ms, width_ms) * width_ms;
}

void
qn_sink_window_label (int64_t start_ms, char out [17])
{
    civil_t c;
    s_civil_us (start_ms * 1000, &c);
    char tmp [64];
    snprintf (tmp, sizeof tmp, "%04lld%02u%02uT%02u%02u%02uZ", (long long) (c.year % 10000),
              c.month, c.day, c.hour, c.minute, c.second);
    memcpy (out, tmp, 16);
    out [16] = 0;
}

const char *
qn_sink_extension (const qn_sink_format_t *format)
{
    if (format->kind == QN_SINK_PARQUET)
        return "parquet";
    return format->gzip ? "jsonl.gz" : "jsonl";
}

static void
s_put_escaped (qn_buf_t *out, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char) *s;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
        ||  c == '.' || c == '_' || c == '-')
            qn_buf_putc (out, (char) c);
        else
            qn_buf_printf (out, "%%%02X", c);
    }
}

void
qn_sink_object_key (qn_buf_t *out, const char *prefix, const char *queue,
                    int64_t window_start_ms, uint32_t part, const char *extension)
{
    if (prefix) {
        while (*prefix == '/')
            prefix++;
        size_t n = strlen (prefix);
        while (n > 0 && prefix [n - 1] == '/')
            n--;
        if (n) {
            qn_buf_append (out, prefix, n);
            qn_buf_putc (out, '/');
        }
    }
    civil_t c;
    s_civil_us (window_start_ms * 1000, &c);
    char label [17];
    qn_sink_window_label (window_start_ms, label);
    qn_buf_puts (out, "queue=");
    s_put_escaped (out, queue);
    qn_buf_printf (out, "/dt=%04lld-%02u-%02u/hour=%02u/part-%s-%05u.%s",
                   (long long) (c.year % 10000), c.month, c.day, c.hour, label, part, extension);
}

//  ------------------------------------------------------------------------
//  Fields

int
qn_sink_fields_parse (const char *text, qn_sink_field_t *fields, uint32_t cap,
                      char *err, size_t err_cap)
{
    static const char *reserved [] = { "message_id", "transaction_id", "partition",
        "created_at", "trace_id", "payload", "queue", "dt", "hour", NULL };
    static const struct { const char *name; qn_pq_type_t type; } types [] = {
        { "string", QN_PQ_STRING }, { "int64", QN_PQ_INT64 }, { "double", QN_PQ_DOUBLE },
        { "bool", QN_PQ_BOOLEAN }, { "json", QN_PQ_JSON }, { "timestamp", QN_PQ_TIMESTAMP_MS },
        { NULL, 0 }
    };
    uint32_t count = 0;
    const char *p = text ? text : "";
    while (*p) {
        const char *end = strchr (p, ',');
        size_t len = end ? (size_t) (end - p) : strlen (p);
        const char *colon = memchr (p, ':', len);
        if (!colon || colon == p || colon == p + len - 1) {
            snprintf (err, err_cap, "SINK_FIELDS entry \"%.*s\" must be path:type", (int) len, p);
            return -1;
        }
        size_t plen = (size_t) (colon - p);
        if (count == cap) {
            snprintf (err, err_cap, "SINK_FIELDS has more than %u fields", cap);
            return -1;
        }
        qn_sink_field_t *f = &fields [count];
        memset (f, 0, sizeof *f);
        if (plen >= sizeof f->path) {
            snprintf (err, err_cap, "SINK_FIELDS path \"%.*s\" is too long", (int) plen, p);
            return -1;
        }
        memcpy (f->path, p, plen);
        for (size_t i = 0; i < plen; i++) {
            char c = f->path [i];
            bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
                   || c == '_' || c == '.' || c == '-';
            if (!ok || (c == '.' && (i == 0 || i == plen - 1 || f->path [i - 1] == '.'))) {
                snprintf (err, err_cap, "SINK_FIELDS path \"%s\" may hold only letters, digits, "
                          "_ and - separated by single dots", f->path);
                return -1;
            }
            f->name [i] = c == '.' ? '_' : c;
        }
        const char *tname = colon + 1;
        size_t tlen = len - plen - 1;
        f->type = 0;
        for (int t = 0; types [t].name; t++)
            if (strlen (types [t].name) == tlen && memcmp (types [t].name, tname, tlen) == 0)
                f->type = types [t].type;
        if (!f->type) {
            snprintf (err, err_cap, "SINK_FIELDS type \"%.*s\" of %s must be string, int64, "
                      "double, bool, json or timestamp", (int) tlen, tname, f->path);
            return -1;
        }
        for (int r = 0; reserved [r]; r++)
            if (strcmp (reserved [r], f->name) == 0) {
                snprintf (err, err_cap, "SINK_FIELDS column %s clashes with a standard column", f->name);
                return -1;
            }
        for (uint32_t j = 0; j < count; j++)
            if (strcmp (fields [j].name, f->name) == 0) {
                snprintf (err, err_cap, "SINK_FIELDS column %s appears twice", f->name);
                return -1;
            }
        count++;
        p = end ? end + 1 : p + len;
        if (end && !*p) {
            snprintf (err, err_cap, "SINK_FIELDS ends with a comma");
            return -1;
        }
    }
    return (int) count;
}

//  ------------------------------------------------------------------------
//  Sorting and parts

static int
s_cmp_records (const void *a_, const void *b_)
{
    const qn_sink_record_t *a = a_, *b = b_;
    if (a->created_us != b->created_us)
        return a->created_us < b->created_us ? -1 : 1;
    size_t n = a->id_len < b->id_len ? a->id_len : b->id_len;
    int c = n ? memcmp (a->id, b->id, n) : 0;
    if (c)
        return c;
    return a->id_len < b->id_len ? -1 : a->id_len > b->id_len;
}

int
qn_sink_record_cmp (const qn_sink_record_t *a, const qn_sink_record_t *b)
{
    return s_cmp_records (a, b);
}

void
qn_sink_sort (qn_sink_record_t *records, size_t count)
{
    if (count > 1)
        qsort (records, count, sizeof *records, s_cmp_records);
}

size_t
qn_sink_part_length (const qn_sink_record_t *records, size_t count,
                     size_t max_rows, size_t max_bytes)
{
    size_t bytes = 0, i = 0;
    for (; i < count && (max_rows == 0 || i < max_rows); i++) {
        const qn_sink_record_t *r = &records [i];
        size_t rb = r->id_len + r->txn_len + r->partition_len + r->trace_len + r->payload_len + 32;
        if (i > 0 && max_bytes && bytes + rb > max_bytes)
            break;
        bytes += rb;
    }
    return i;
}

//  ------------------------------------------------------------------------
//  Files

void
qn_sink_gzip (const void *data, size_t len, qn_buf_t *out)
{
    z_stream zs;
    memset (&zs, 0, sizeof zs);
    if (deflateInit2 (&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        abort ();
    size_t cap = deflateBound (&zs, (uLong) len) + 32;
    qn_buf_reserve (out, cap);
    zs.next_in = (Bytef *) (data ? data : "");
    zs.avail_in = (uInt) len;
    zs.next_out = (Bytef *) out->data + out->len;
    zs.avail_out = (uInt) cap;
    if (deflate (&zs, Z_FINISH) != Z_STREAM_END)
        abort ();
    out->len += zs.total_out;
    out->data [out->len] = 0;
    deflateEnd (&zs);
}

//  Token of the dotted `path` in the parsed payload, or -1.
static int
s_lookup (const qn_json_doc_t *doc, const char *path)
{
    int tok = 0;
    char part [128];
    const char *p = path;
    while (*p) {
        const char *dot = strchr (p, '.');
        size_t n = dot ? (size_t) (dot - p) : strlen (p);
        memcpy (part, p, n);
        part [n] = 0;
        if (qn_json_type (doc, tok) != QN_JSON_OBJECT)
            return -1;
        tok = qn_json_get (doc, tok, part);
        if (tok < 0)
            return -1;
        p = dot ? dot + 1 : p + n;
    }
    return tok;
}

static int
s_set_field (qn_pq_writer_t *w, uint32_t col, const qn_sink_field_t *f,
             const qn_json_doc_t *doc, bool parsed, qn_buf_t *scratch)
{
    int tok = parsed ? s_lookup (doc, f->path) : -1;
    if (tok < 0 || qn_json_is_null (doc, tok))
        return qn_pq_set_null (w, col);
    switch (f->type) {
        case QN_PQ_STRING:
            qn_buf_reset (scratch);
            if (qn_json_str (doc, tok, scratch) != 0)
                return qn_pq_set_null (w, col);
            return qn_pq_set_bytes (w, col, scratch->data, scratch->len);
        case QN_PQ_INT64:
        case QN_PQ_TIMESTAMP_MS: {
            int64_t v;
            if (qn_json_int (doc, tok, &v) != 0)
                return qn_pq_set_null (w, col);
            return qn_pq_set_int64 (w, col, v);
        }
        case QN_PQ_DOUBLE: {
            double v;
            if (qn_json_number (doc, tok, &v) != 0)
                return qn_pq_set_null (w, col);
            return qn_pq_set_double (w, col, v);
        }
        case QN_PQ_BOOLEAN: {
            bool v;
            if (qn_json_bool (doc, tok, &v) != 0)
                return qn_pq_set_null (w, col);
            return qn_pq_set_bool (w, col, v);
        }
        default: {
            size_t len;
            const char *raw = qn_json_raw (doc, tok, &len);
            return qn_pq_set_bytes (w, col, raw, len);
        }
    }
}

static int
s_write_parquet (const qn_sink_format_t *format, const qn_sink_record_t *records,
                 size_t count, qn_buf_t *out)
{
    qn_pq_column_t cols [6 + QN_SINK_MAX_FIELDS] = {
        { "message_id", QN_PQ_STRING, false, true },
        { "transaction_id", QN_PQ_STRING, false, false },
        { "partition", QN_PQ_STRING, false, false },
        { "created_at", QN_PQ_TIMESTAMP_US, false, false },
        { "trace_id", QN_PQ_STRING, true, false },
        { "payload", QN_PQ_JSON, false, false },
    };
    if (format->field_count > QN_SINK_MAX_FIELDS)
        return -1;
    for (uint32_t i = 0; i < format->field_count; i++)
        cols [6 + i] = (qn_pq_column_t) { format->fields [i].name, format->fields [i].type, true, false };
    qn_pq_writer_t *w = qn_pq_writer_new (&(qn_pq_options_t) {
        cols, 6 + format->field_count, format->codec, 0, format->row_group_rows, 0 }, out);
    if (!w)
        return -1;
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    qn_buf_t scratch = QN_BUF_INIT;
    int rc = 0;
    for (size_t i = 0; i < count && rc == 0; i++) {
        const qn_sink_record_t *r = &records [i];
        rc |= qn_pq_set_bytes (w, 0, r->id, r->id_len);
        rc |= qn_pq_set_bytes (w, 1, r->txn, r->txn_len);
        rc |= qn_pq_set_bytes (w, 2, r->partition, r->partition_len);
        rc |= qn_pq_set_int64 (w, 3, r->created_us);
        rc |= r->trace ? qn_pq_set_bytes (w, 4, r->trace, r->trace_len) : qn_pq_set_null (w, 4);
        rc |= qn_pq_set_bytes (w, 5, r->payload, r->payload_len);
        if (format->field_count) {
            bool parsed = qn_json_parse (&doc, r->payload, r->payload_len, 0) == 0;
            for (uint32_t f = 0; f < format->field_count; f++)
                rc |= s_set_field (w, 6 + f, &format->fields [f], &doc, parsed, &scratch);
        }
        rc |= qn_pq_end_row (w);
    }
    if (rc == 0)
        rc = qn_pq_finish (w);
    qn_pq_writer_destroy (&w);
    qn_json_doc_free (&doc);
    qn_buf_free (&scratch);
    return rc ? -1 : 0;
}

static void
s_write_jsonl (const qn_sink_record_t *records, size_t count, qn_buf_t *out)
{
    char iso [32];
    qn_jw_t jw;
    for (size_t i = 0; i < count; i++) {
        const qn_sink_record_t *r = &records [i];
        qn_jw_init (&jw, out);
        qn_jw_obj (&jw);
        qn_jw_key (&jw, "message_id");
        qn_jw_strn (&jw, r->id, r->id_len);
        qn_jw_key (&jw, "transaction_id");
        qn_jw_strn (&jw, r->txn, r->txn_len);
        qn_jw_key (&jw, "partition");
        qn_jw_strn (&jw, r->partition, r->partition_len);
        qn_sink_iso_us (r->created_us, iso);
        qn_jw_kstr (&jw, "created_at", iso);
        qn_jw_key (&jw, "trace_id");
        if (r->trace)
            qn_jw_strn (&jw, r->trace, r->trace_len);
        else
            qn_jw_null (&jw);
        qn_jw_kraw (&jw, "payload", r->payload, r->payload_len);
        qn_jw_obj_end (&jw);
        qn_buf_putc (out, '\n');
    }
}

int
qn_sink_file_write (const qn_sink_format_t *format, const qn_sink_record_t *records,
                    size_t count, qn_buf_t *out)
{
    if (format->kind == QN_SINK_PARQUET)
        return s_write_parquet (format, records, count, out);
    if (format->kind != QN_SINK_JSONL)
        return -1;
    if (!format->gzip) {
        s_write_jsonl (records, count, out);
        return 0;
    }
    qn_buf_t plain = QN_BUF_INIT;
    s_write_jsonl (records, count, &plain);
    qn_sink_gzip (plain.data, plain.len, out);
    qn_buf_free (&plain);
    return 0;
}
