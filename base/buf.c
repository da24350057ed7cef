/*  base/buf.c - growable byte buffer and aborting allocators
    Pure: no I/O except the abort message on out-of-memory.
*/
#include "base/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *
qn_malloc (size_t size)
{
    void *p = malloc (size ? size : 1);
    if (!p) {
        fputs ("queen: out of memory\n", stderr);
        abort ();
    }
    return p;
}

void *
qn_zalloc (size_t size)
{
    void *p = calloc (1, size ? size : 1);
    if (!p) {
        fputs ("queen: out of memory\n", stderr);
        abort ();
    }
    return p;
}

void *
qn_realloc (void *ptr, size_t size)
{
    void *p = realloc (ptr, size ? size : 1);
    if (!p) {
        fputs ("queen: out of memory\n", stderr);
        abort ();
    }
    return p;
}

char *
qn_strndup (const char *s, size_t len)
{
    char *p = qn_malloc (len + 1);
    if (len)
        memcpy (p, s, len);
    p [len] = 0;
    return p;
}

char *
qn_strdup (const char *s)
{
    return qn_strndup (s, strlen (s));
}

void
qn_buf_init (qn_buf_t *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void
qn_buf_free (qn_buf_t *b)
{
    free (b->data);
    qn_buf_init (b);
}

void
qn_buf_reset (qn_buf_t *b)
{
    b->len = 0;
    if (b->data)
        b->data [0] = 0;
}

void
qn_buf_reserve (qn_buf_t *b, size_t extra)
{
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    b->data = qn_realloc (b->data, cap);
    b->cap = cap;
}

void
qn_buf_append (qn_buf_t *b, const void *data, size_t len)
{
    qn_buf_reserve (b, len);
    if (len)
        memcpy (b->data + b->len, data, len);
    b->len += len;
    b->data [b->len] = 0;
}

void
qn_buf_puts (qn_buf_t *b, const char *s)
{
    qn_buf_append (b, s, strlen (s));
}

void
qn_buf_putc (qn_buf_t *b, char c)
{
    qn_buf_reserve (b, 1);
    b->data [b->len++] = c;
    b->data [b->len] = 0;
}

void
qn_buf_vprintf (qn_buf_t *b, const char *fmt, va_list ap)
{
    va_list copy;
    va_copy (copy, ap);
    int n = vsnprintf (NULL, 0, fmt, copy);
    va_end (copy);
    if (n < 0)
        return;
    qn_buf_reserve (b, (size_t) n);
    vsnprintf (b->data + b->len, (size_t) n + 1, fmt, ap);
    b->len += (size_t) n;
}

void
qn_buf_printf (qn_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start (ap, fmt);
    qn_buf_vprintf (b, fmt, ap);
    va_end (ap);
}

void
qn_buf_consume (qn_buf_t *b, size_t n)
{
    if (n >= b->len) {
        qn_buf_reset (b);
        return;
    }
    memmove (b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data [b->len] = 0;
}

char *
qn_buf_detach (qn_buf_t *b, size_t *len)
{
    if (!b->data)
        qn_buf_reserve (b, 0);
    char *p = b->data;
    if (len)
        *len = b->len;
    qn_buf_init (b);
    return p;
}
