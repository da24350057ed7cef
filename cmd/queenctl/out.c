/*  cmd/queenctl/out.c - queenctl output: tables, JSON text, the live line
    The live line (progress bar or counters) goes to stderr and only when
    both stdout and stderr are terminals, so pipes and scripts see nothing
    but the results on stdout.
*/
#include "cmd/queenctl/queenctl.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t
ctl_now_ms (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t s_live_last;
static bool s_live_shown;

void
ctl_live (ctl_t *ctl, bool force, const char *fmt, ...)
{
    if (!ctl->progress)
        return;
    int64_t now = ctl_now_ms ();
    if (!force && now - s_live_last < 100)
        return;
    s_live_last = now;
    char line [512];
    va_list ap;
    va_start (ap, fmt);
    vsnprintf (line, sizeof line, fmt, ap);
    va_end (ap);
    fprintf (stderr, "\r\033[K%s", line);
    fflush (stderr);
    s_live_shown = true;
}

void
ctl_live_end (ctl_t *ctl)
{
    if (ctl->progress && s_live_shown) {
        fputs ("\r\033[K", stderr);
        fflush (stderr);
    }
    s_live_shown = false;
    s_live_last = 0;
}

void
ctl_bar (char *out, size_t len, int width, double done, double total)
{
    if (width > 100)
        width = 100;
    int filled = total > 0 ? (int) (width * (done / total)) : 0;
    if (filled > width)
        filled = width;
    if (filled < 0)
        filled = 0;
    char cells [104];
    for (int i = 0; i < width; i++)
        cells [i] = i < filled ? '#' : '-';
    cells [width] = 0;
    snprintf (out, len, "[%s]", cells);
}

char *
ctl_strdup (const char *s)
{
    return s ? strdup (s) : NULL;
}

void
ctl_table_init (ctl_table_t *t, int ncols, const char *const *headers)
{
    memset (t, 0, sizeof *t);
    t->ncols = ncols;
    char *row [16];
    for (int i = 0; i < ncols; i++)
        row [i] = strdup (headers [i]);
    ctl_table_add (t, row);
}

void
ctl_table_add (ctl_table_t *t, char **row)
{
    if (t->nrows == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        t->cells = realloc (t->cells, t->cap * (size_t) t->ncols * sizeof (char *));
    }
    for (int i = 0; i < t->ncols; i++)
        t->cells [t->nrows * (size_t) t->ncols + (size_t) i] = row [i] ? row [i] : strdup ("-");
    t->nrows++;
}

void
ctl_table_print (ctl_table_t *t, FILE *out)
{
    size_t width [16] = { 0 };
    for (size_t r = 0; r < t->nrows; r++)
        for (int c = 0; c < t->ncols; c++) {
            size_t l = strlen (t->cells [r * (size_t) t->ncols + (size_t) c]);
            if (l > width [c])
                width [c] = l;
        }
    for (size_t r = 0; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            const char *cell = t->cells [r * (size_t) t->ncols + (size_t) c];
            if (c == t->ncols - 1)
                fprintf (out, "%s", cell);
            else
                fprintf (out, "%-*s  ", (int) width [c], cell);
        }
        fputc ('\n', out);
    }
}

void
ctl_table_free (ctl_table_t *t)
{
    for (size_t i = 0; i < t->nrows * (size_t) t->ncols; i++)
        free (t->cells [i]);
    free (t->cells);
    memset (t, 0, sizeof *t);
}

char *
ctl_jtext (const qn_json_doc_t *doc, int obj, const char *path)
{
    int tok = obj;
    char part [128];
    const char *p = path;
    while (tok >= 0 && *p) {
        const char *dot = strchr (p, '.');
        size_t n = dot ? (size_t) (dot - p) : strlen (p);
        if (n >= sizeof part)
            return NULL;
        memcpy (part, p, n);
        part [n] = 0;
        tok = qn_json_get (doc, tok, part);
        p = dot ? dot + 1 : p + n;
    }
    if (tok < 0 || qn_json_is_null (doc, tok))
        return NULL;
    if (qn_json_type (doc, tok) == QN_JSON_STRING) {
        qn_buf_t b = QN_BUF_INIT;
        qn_json_str (doc, tok, &b);
        return b.data ? qn_buf_detach (&b, NULL) : strdup ("");
    }
    size_t len = 0;
    const char *raw = qn_json_raw (doc, tok, &len);
    return strndup (raw, len);
}

int
ctl_parse (ctl_t *ctl, qn_json_doc_t *doc, const queen_response_t *resp)
{
    if (!resp->body || qn_json_parse (doc, resp->body, resp->len, 0) != 0) {
        fprintf (stderr, "queenctl: %s: the broker's answer is not JSON: %.200s\n", ctl->command,
                 resp->body ? resp->body : "(empty)");
        return -1;
    }
    return 0;
}

void
ctl_print_raw (const queen_response_t *resp)
{
    if (resp->body)
        fwrite (resp->body, 1, resp->len, stdout);
    else
        fputs ("null", stdout);
    fputc ('\n', stdout);
}
