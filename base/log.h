/*  base/log.h - structured log lines
    One line per event on stderr:
        2026-11-30T11:20:00.123Z info  acceptor: listening: host=0.0.0.0 port=6632
    The kernel adds time, level and the calling actor's name; the message
    is short, lowercase, then key=value facts. Nothing below the configured
    level is formatted. Thread-safe (one write(2) per line).
*/
#ifndef QN_BASE_LOG_H
#define QN_BASE_LOG_H

typedef enum {
    QN_LOG_DEBUG = 0,
    QN_LOG_INFO = 1,
    QN_LOG_WARN = 2,
    QN_LOG_ERROR = 3
} qn_log_level_t;

//  Returns 0, or -1 for an unknown name ("debug", "info", "warn", "error").
int qn_log_set_level_name (const char *name);
void qn_log_set_level (qn_log_level_t level);
int qn_log_enabled (qn_log_level_t level);
//  Names the calling thread in its log lines ("main" until set; the kernel
//  sets each actor thread's name). The string must outlive the thread.
void qn_log_thread_name (const char *name);
void qn_log (qn_log_level_t level, const char *fmt, ...)
    __attribute__ ((format (printf, 2, 3)));

#define qn_debug(...) do { if (qn_log_enabled (QN_LOG_DEBUG)) qn_log (QN_LOG_DEBUG, __VA_ARGS__); } while (0)
#define qn_info(...)  do { if (qn_log_enabled (QN_LOG_INFO))  qn_log (QN_LOG_INFO,  __VA_ARGS__); } while (0)
#define qn_warn(...)  qn_log (QN_LOG_WARN, __VA_ARGS__)
#define qn_error(...) qn_log (QN_LOG_ERROR, __VA_ARGS__)

#endif
