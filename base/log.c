/*  base/log.c - structured log lines (see log.h) */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

//  The calling thread's name (the kernel sets it to the actor's name).
static __thread const char *s_thread_name = "main";

void
qn_log_thread_name (const char *name)
{
    s_thread_name = name ? name : "main";
}

static volatile int s_level = QN_LOG_INFO;
static const char *s_names [] = { "debug", "info", "warn", "error" };

int
qn_log_set_level_name (const char *name)
{
    for (int i = 0; i < 4; i++)
        if (strcasecmp (name, s_names [i]) == 0) {
            s_level = i;
            return 0;
        }
    if (strcasecmp (name, "warning") == 0) {
        s_level = QN_LOG_WARN;
        return 0;
    }
    return -1;
}

void
qn_log_set_level (qn_log_level_t level)
{
    s_level = level;
}

int
qn_log_enabled (qn_log_level_t level)
{
    return (int) level >= s_level;
}

void
qn_log (qn_log_level_t level, const char *fmt, ...)
{
    if ((int) level < s_level)
        return;
    char line [2048];
    struct timeval tv;
    gettimeofday (&tv, NULL);
    struct tm tm;
    gmtime_r (&tv.tv_sec, &tm);
    int n = snprintf (line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ %-5s %s: ",
                      tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                      tm.tm_min, tm.tm_sec, (int) (tv.tv_usec / 1000),
                      s_names [level], s_thread_name);
    va_list ap;
    va_start (ap, fmt);
    int m = vsnprintf (line + n, sizeof line - (size_t) n - 1, fmt, ap);
    va_end (ap);
    size_t len = (size_t) n + (m < 0 ? 0 : (size_t) m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    //  Keep one event on one line.
    for (size_t i = (size_t) n; i < len; i++)
        if (line [i] == '\n' || line [i] == '\r')
            line [i] = ' ';
    line [len++] = '\n';
    ssize_t w = write (STDERR_FILENO, line, len);
    (void) w;
}
