/*  test/unit/test_kernel_counters.c - named counters under concurrency
    Several threads add to shared and to freshly created names at once
    while another thread keeps reading them all: the sums are exact, a
    name is one counter however many threads create it together, a reader
    only ever sees whole counters, names from stack buffers and long names
    are handled. Meant to run under TSan too:
        cc -fsanitize=thread ... test/unit/test_kernel_counters.c kernel/counters.c ...
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernel.h"

#define THREADS  4
#define ADDS     100000
#define FRESH    100            //  Names every thread creates together

typedef struct {
    qn_kernel_t *k;
    int index;
} worker_t;

static atomic_bool s_stop;
static atomic_int s_started;

static void *
s_worker (void *arg)
{
    worker_t *w = arg;
    atomic_fetch_add (&s_started, 1);
    while (atomic_load (&s_started) < THREADS)
        ;                                   //  Start together
    char name [32];
    for (int i = 0; i < ADDS; i++) {
        qn_count (w->k, "shared_a", 1);
        qn_count (w->k, "shared_b", 3);
        //  A name in a stack buffer, new to the table for the first
        //  FRESH rounds, created by every thread at about the same time.
        snprintf (name, sizeof name, "fresh_%d", i % FRESH);
        qn_count (w->k, name, 1);
        snprintf (name, sizeof name, "own_%d", w->index);
        qn_count (w->k, name, 2);
    }
    return NULL;
}

typedef struct {
    int64_t shared_a;
    int names;
    int duplicates;
    int bad;
} seen_t;

static void
s_seen (void *arg, const char *name, int64_t value)
{
    seen_t *s = arg;
    s->names++;
    if (!name [0] || value < 0)
        s->bad++;
    if (!strcmp (name, "shared_a")) {
        if (s->shared_a >= 0)
            s->duplicates++;
        s->shared_a = value;
    }
}

//  Reads every counter until the workers are done (at least once).
//  Violations are counted, not asserted: cmocka asserts only on the test's
//  own thread.
static atomic_int s_violations;

static void *
s_reader (void *arg)
{
    qn_kernel_t *k = arg;
    int64_t last = 0;
    long rounds = 0;
    while (!atomic_load (&s_stop) || rounds == 0) {
        seen_t s = { .shared_a = -1 };
        qn_counters_each (k, s_seen, &s);
        //  A counter only grows while only adds happen.
        if (s.bad || s.duplicates || (s.shared_a >= 0 && s.shared_a < last))
            atomic_fetch_add (&s_violations, 1);
        if (s.shared_a >= 0)
            last = s.shared_a;
        rounds++;
    }
    return (void *) rounds;
}

static void
test_concurrent_adds_sum_exactly (void **state)
{
    (void) state;
    qn_config_t cfg = { 0 };
    qn_kernel_t *k = qn_kernel_new (&cfg);
    atomic_store (&s_stop, false);
    atomic_store (&s_started, 0);
    pthread_t reader, threads [THREADS];
    worker_t workers [THREADS];
    assert_int_equal (pthread_create (&reader, NULL, s_reader, k), 0);
    for (int i = 0; i < THREADS; i++) {
        workers [i] = (worker_t) { k, i };
        assert_int_equal (pthread_create (&threads [i], NULL, s_worker, &workers [i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join (threads [i], NULL);
    atomic_store (&s_stop, true);
    void *rounds;
    pthread_join (reader, &rounds);
    assert_true ((long) rounds > 0);
    assert_int_equal (atomic_load (&s_violations), 0);

    assert_int_equal (qn_counter (k, "shared_a"), (int64_t) THREADS * ADDS);
    assert_int_equal (qn_counter (k, "shared_b"), (int64_t) THREADS * ADDS * 3);
    char name [32];
    for (int i = 0; i < FRESH; i++) {
        snprintf (name, sizeof name, "fresh_%d", i);
        assert_int_equal (qn_counter (k, name), (int64_t) THREADS * ADDS / FRESH);
    }
    for (int i = 0; i < THREADS; i++) {
        snprintf (name, sizeof name, "own_%d", i);
        assert_int_equal (qn_counter (k, name), (int64_t) ADDS * 2);
    }
    //  Each name exactly once: 2 shared + FRESH + one per thread.
    seen_t s = { .shared_a = -1 };
    qn_counters_each (k, s_seen, &s);
    assert_int_equal (s.names, 2 + FRESH + THREADS);
    assert_int_equal (s.duplicates, 0);
    assert_int_equal (s.shared_a, (int64_t) THREADS * ADDS);
    qn_kernel_destroy (&k);
}

static void
s_find_long (void *arg, const char *name, int64_t value)
{
    int64_t *out = arg;
    if (!strncmp (name, "long_", 5)) {
        assert_int_equal (strlen (name), 63);
        *out = value;
    }
}

static void
test_gauge_and_long_names (void **state)
{
    (void) state;
    qn_config_t cfg = { 0 };
    qn_kernel_t *k = qn_kernel_new (&cfg);
    assert_int_equal (qn_counter (k, "never_counted"), 0);
    qn_gauge_set (k, "depth", 7);
    qn_gauge_set (k, "depth", 5);
    qn_count (k, "depth", -1);
    assert_int_equal (qn_counter (k, "depth"), 4);
    //  A name longer than a counter holds is cut, the same way each time:
    //  one counter, not one per call.
    char name [100];
    memset (name, 'x', sizeof name - 1);
    name [sizeof name - 1] = 0;
    memcpy (name, "long_", 5);
    qn_count (k, name, 1);
    qn_count (k, name, 1);
    assert_int_equal (qn_counter (k, name), 2);
    int64_t value = -1;
    qn_counters_each (k, s_find_long, &value);
    assert_int_equal (value, 2);
    qn_kernel_destroy (&k);
}

// ------------------------------------------------------------------ series
typedef struct {
    int series;                 //  Of family "pushed_total"
    int64_t other;              //  Its queue="_other" value
    int64_t hist_count, hist_sum_us, le_1ms, inf;
    int kinds_ok;
} series_seen_t;

static void
s_series_seen (void *arg, const qn_metric_info_t *info)
{
    series_seen_t *s = arg;
    if (!strncmp (info->name, "pushed_total{", 13)) {
        assert_int_equal (info->family_len, 12);
        assert_int_equal (info->kind, QN_METRIC_COUNTER);
        s->series++;
        if (!strcmp (info->name, "pushed_total{queue=\"_other\"}"))
            s->other = info->value;
    }
    if (!strcmp (info->name, "latency_seconds{route=\"/x\"}")) {
        assert_int_equal (info->kind, QN_METRIC_HISTOGRAM);
        assert_non_null (info->buckets);
        s->hist_count = info->value;
        s->hist_sum_us = info->sum_us;
        s->le_1ms = info->buckets [0] + info->buckets [1];  //  <= 500 us, <= 1 ms
        s->inf = info->buckets [QN_METRIC_BUCKETS];
    }
    if (!strcmp (info->name, "depth") && info->kind == QN_METRIC_GAUGE)
        s->kinds_ok++;
    if (!strcmp (info->name, "plain") && info->kind == QN_METRIC_COUNTER)
        s->kinds_ok++;
}

static void
test_series_cap_histogram_escape (void **state)
{
    (void) state;
    qn_config_t cfg = { 0 };
    cfg.metrics_queue_series = 3;
    qn_kernel_t *k = qn_kernel_new (&cfg);
    //  Three queues get their own series; the rest share queue="_other".
    const char *queues [] = { "a", "b", "c", "d", "e", "a" };
    for (size_t i = 0; i < 6; i++)
        qn_metric_add (qn_metric_queue (k, QN_METRIC_COUNTER, "pushed_total", queues [i], 1), 10);
    //  The same handle every time, and the capped one is stable.
    assert_ptr_equal (qn_metric_queue (k, QN_METRIC_COUNTER, "pushed_total", "a", 1),
                      qn_metric_queue (k, QN_METRIC_COUNTER, "pushed_total", "a", 1));
    assert_ptr_equal (qn_metric_queue (k, QN_METRIC_COUNTER, "pushed_total", "zz", 2),
                      qn_metric_queue (k, QN_METRIC_COUNTER, "pushed_total", "d", 1));
    //  Histogram: 3 observations, two under 1 ms, one past the last bound.
    qn_metric_t *h = qn_metric (k, QN_METRIC_HISTOGRAM, "latency_seconds", "route=\"/x\"");
    qn_metric_observe_us (h, 100);
    qn_metric_observe_us (h, 900);
    qn_metric_observe_us (h, 100000000);
    qn_metric_observe_us (NULL, 5);             //  A full table's NULL is fine
    qn_metric_add (NULL, 1);
    qn_count (k, "plain", 1);
    qn_gauge_set (k, "depth", 3);
    series_seen_t s = { 0 };
    qn_metrics_each (k, s_series_seen, &s);
    assert_int_equal (s.series, 4);             //  a, b, c, _other
    assert_int_equal (s.other, 20);             //  d, e
    assert_int_equal (s.hist_count, 3);
    assert_int_equal (s.hist_sum_us, 100001000);
    assert_int_equal (s.le_1ms, 2);
    assert_int_equal (s.inf, 1);
    assert_int_equal (s.kinds_ok, 2);
    //  Label values are escaped.
    char out [32];
    size_t n = qn_metric_label_escape (out, sizeof out, "a\"b\\c\nd", 7);
    assert_string_equal (out, "a\\\"b\\\\c\\nd");
    assert_int_equal (n, strlen (out));
    qn_kernel_destroy (&k);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_concurrent_adds_sum_exactly),
        cmocka_unit_test (test_gauge_and_long_names),
        cmocka_unit_test (test_series_cap_histogram_escape),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
