/*  base/buf.h - growable byte buffer
    The one string/byte builder used by codecs, actors and tests.
    Owns its heap block; qn_buf_free releases it. Never fails: allocation
    failure aborts (qn_malloc policy).
*/
#ifndef QN_BASE_BUF_H
#define QN_BASE_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>

typedef struct {
    char *data;                 //  Owned; always NUL-terminated when cap > 0
    size_t len;                 //  Bytes in use, excluding the NUL
    size_t cap;                 //  Bytes allocated
} qn_buf_t;

#define QN_BUF_INIT { NULL, 0, 0 }

void qn_buf_init (qn_buf_t *b);
void qn_buf_free (qn_buf_t *b);
//  Keeps the allocation, sets len to 0.
void qn_buf_reset (qn_buf_t *b);
//  Makes room for `extra` more bytes (plus a NUL).
void qn_buf_reserve (qn_buf_t *b, size_t extra);
void qn_buf_append (qn_buf_t *b, const void *data, size_t len);
void qn_buf_puts (qn_buf_t *b, const char *s);
void qn_buf_putc (qn_buf_t *b, char c);
void qn_buf_printf (qn_buf_t *b, const char *fmt, ...)
    __attribute__ ((format (printf, 2, 3)));
void qn_buf_vprintf (qn_buf_t *b, const char *fmt, va_list ap);
//  Removes the first `n` bytes (used for consumed input).
void qn_buf_consume (qn_buf_t *b, size_t n);
//  Hands the block to the caller (free with free()); b is left empty.
char *qn_buf_detach (qn_buf_t *b, size_t *len);

//  Allocation helpers that abort on out-of-memory and never return NULL.
void *qn_malloc (size_t size);
void *qn_zalloc (size_t size);
void *qn_realloc (void *ptr, size_t size);
char *qn_strndup (const char *s, size_t len);
char *qn_strdup (const char *s);

#endif
