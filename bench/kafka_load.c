/*  bench/kafka_load.c - the Kafka load generator of bench/kafka.sh, on
    librdkafka (Debian librdkafka-dev). Built by the scenario itself:
      cc -std=c11 -O2 -Wall -Wextra -Werror bench/kafka_load.c -lrdkafka

    kafka_load produce BROKER TOPIC SECONDS KEYS PAYLOAD
        produces PAYLOAD-byte values with keys p0..p<KEYS-1> (random) for
        SECONDS (acks=all, murmur2_random, linger 5 ms), then flushes; the
        rate counts delivered messages over the time to the last delivery.
    kafka_load consume BROKER TOPIC COUNT
        reads every partition of TOPIC from the beginning (legacy consumer
        API, no group) until COUNT messages arrived; rate over that time.
    kafka_load wake BROKER TOPIC SAMPLES
        a consumer at the end of every partition, then SAMPLES times: produce
        one message (linger 0, acks=1) and time produce() -> the consumer
        has it; 20 ms between samples, after one untimed warm-up.
    Each prints one JSON line; exit 1 on failure.
*/
#define _POSIX_C_SOURCE 200809L
#include <librdkafka/rdkafka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double
s_now (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void
s_set (rd_kafka_conf_t *conf, const char *k, const char *v)
{
    char err [256];
    if (rd_kafka_conf_set (conf, k, v, err, sizeof err) != RD_KAFKA_CONF_OK) {
        fprintf (stderr, "kafka_load: %s=%s: %s\n", k, v, err);
        exit (1);
    }
}

static rd_kafka_t *
s_new (rd_kafka_type_t type, rd_kafka_conf_t *conf)
{
    char err [256];
    rd_kafka_t *rk = rd_kafka_new (type, conf, err, sizeof err);
    if (!rk) {
        fprintf (stderr, "kafka_load: %s\n", err);
        exit (1);
    }
    return rk;
}

typedef struct {
    long delivered, failed;
    double last;
} s_stats_t;

static void
s_on_delivery (rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void) rk;
    s_stats_t *st = opaque;
    if (m->err)
        st->failed++;
    else
        st->delivered++;
    st->last = s_now ();
}

static rd_kafka_t *
s_producer (const char *broker, const char *linger, const char *acks, s_stats_t *st)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new ();
    s_set (conf, "bootstrap.servers", broker);
    s_set (conf, "partitioner", "murmur2_random");
    s_set (conf, "linger.ms", linger);
    s_set (conf, "acks", acks);
    //  A small backlog, so the timed window is what the broker took
    s_set (conf, "queue.buffering.max.messages", "20000");
    s_set (conf, "max.in.flight.requests.per.connection", "5");
    rd_kafka_conf_set_opaque (conf, st);
    rd_kafka_conf_set_dr_msg_cb (conf, s_on_delivery);
    return s_new (RD_KAFKA_PRODUCER, conf);
}

static int
s_produce (const char *broker, const char *topic, double seconds, int keys, int payload)
{
    s_stats_t st = { 0, 0, 0 };
    rd_kafka_t *rk = s_producer (broker, "5", "all", &st);
    char *value = malloc ((size_t) payload);
    memset (value, 'x', (size_t) payload);
    long sent = 0;
    double t0 = s_now (), until = t0 + seconds;
    srand (7);
    while (s_now () < until) {
        char key [16];
        int kl = snprintf (key, sizeof key, "p%d", rand () % keys);
        rd_kafka_resp_err_t err = rd_kafka_producev (rk, RD_KAFKA_V_TOPIC (topic),
            RD_KAFKA_V_KEY (key, (size_t) kl), RD_KAFKA_V_VALUE (value, (size_t) payload),
            RD_KAFKA_V_MSGFLAGS (RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            rd_kafka_poll (rk, 5);
            continue;
        }
        if (err) {
            fprintf (stderr, "kafka_load: produce: %s\n", rd_kafka_err2str (err));
            return 1;
        }
        sent++;
        rd_kafka_poll (rk, 0);
    }
    rd_kafka_flush (rk, 120000);
    double s = (st.last > t0 ? st.last : s_now ()) - t0;
    printf ("{\"mode\":\"produce\",\"sent\":%ld,\"delivered\":%ld,\"failed\":%ld,\"seconds\":%.2f,"
            "\"msgs_per_s\":%.0f}\n", sent, st.delivered, st.failed, s, (double) st.delivered / s);
    free (value);
    rd_kafka_destroy (rk);
    return st.failed || st.delivered != sent;
}

//  A simple (legacy API, no group) consumer of every partition of topic
//  from `offset`, all partitions into one queue.
typedef struct {
    rd_kafka_t *rk;
    rd_kafka_topic_t *t;
    rd_kafka_queue_t *q;
    int n;
} s_cons_t;

static void
s_consumer (s_cons_t *c, const char *broker, const char *topic, int64_t offset)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new ();
    s_set (conf, "bootstrap.servers", broker);
    s_set (conf, "enable.partition.eof", "false");
    c->rk = s_new (RD_KAFKA_CONSUMER, conf);
    c->t = rd_kafka_topic_new (c->rk, topic, NULL);
    const struct rd_kafka_metadata *md = NULL;
    if (rd_kafka_metadata (c->rk, 0, c->t, &md, 10000) || md->topic_cnt != 1 || md->topics [0].err) {
        fprintf (stderr, "kafka_load: no metadata for %s\n", topic);
        exit (1);
    }
    c->n = md->topics [0].partition_cnt;
    rd_kafka_metadata_destroy (md);
    c->q = rd_kafka_queue_new (c->rk);
    for (int p = 0; p < c->n; p++)
        if (rd_kafka_consume_start_queue (c->t, p, offset, c->q)) {
            fprintf (stderr, "kafka_load: consume_start %d: %s\n", p, rd_kafka_err2str (rd_kafka_last_error ()));
            exit (1);
        }
}

static void
s_consumer_close (s_cons_t *c)
{
    for (int p = 0; p < c->n; p++)
        rd_kafka_consume_stop (c->t, p);
    rd_kafka_queue_destroy (c->q);
    rd_kafka_topic_destroy (c->t);
    rd_kafka_destroy (c->rk);
}

static int
s_consume (const char *broker, const char *topic, long count)
{
    double t0 = s_now ();
    s_cons_t c;
    s_consumer (&c, broker, topic, RD_KAFKA_OFFSET_BEGINNING);
    long got = 0, errors = 0;
    double idle_until = s_now () + 30;
    while (got < count && s_now () < idle_until) {
        rd_kafka_message_t *m = rd_kafka_consume_queue (c.q, 100);
        if (!m)
            continue;
        if (m->err)
            errors++;
        else {
            got++;
            idle_until = s_now () + 30;
        }
        rd_kafka_message_destroy (m);
    }
    double s = s_now () - t0;
    printf ("{\"mode\":\"consume\",\"consumed\":%ld,\"errors\":%ld,\"seconds\":%.2f,\"msgs_per_s\":%.0f}\n",
            got, errors, s, (double) got / s);
    s_consumer_close (&c);
    return got != count;
}

static int
s_cmp (const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static int
s_wake (const char *broker, const char *topic, int samples)
{
    s_stats_t st = { 0, 0, 0 };
    rd_kafka_t *prod = s_producer (broker, "0", "1", &st);
    s_cons_t cons;
    s_consumer (&cons, broker, topic, RD_KAFKA_OFFSET_END);
    //  Let the consumer reach the end and park its fetches.
    double settle = s_now () + 2;
    while (s_now () < settle) {
        rd_kafka_message_t *m = rd_kafka_consume_queue (cons.q, 100);
        if (m)
            rd_kafka_message_destroy (m);
    }
    double *lat = calloc ((size_t) samples + 1, sizeof *lat);
    int n = 0;
    //  Sample 0 warms up (the producer's first metadata and connection): not counted.
    for (int i = 0; i <= samples; i++) {
        if (i == 1)
            n = 0;
        double t0 = s_now ();
        if (rd_kafka_producev (prod, RD_KAFKA_V_TOPIC (topic), RD_KAFKA_V_KEY ("w", 1),
                               RD_KAFKA_V_VALUE ("wake", 4), RD_KAFKA_V_MSGFLAGS (RD_KAFKA_MSG_F_COPY),
                               RD_KAFKA_V_END))
            return 1;
        double until = t0 + 10;
        while (s_now () < until) {
            rd_kafka_poll (prod, 0);
            rd_kafka_message_t *m = rd_kafka_consume_queue (cons.q, 1);
            if (!m)
                continue;
            int ok = !m->err;
            rd_kafka_message_destroy (m);
            if (ok) {
                lat [n++] = (s_now () - t0) * 1000;
                break;
            }
        }
        struct timespec pause = { 0, 20 * 1000000 };
        nanosleep (&pause, NULL);
    }
    qsort (lat, (size_t) n, sizeof *lat, s_cmp);
    printf ("{\"mode\":\"wake\",\"samples\":%d,\"p50_ms\":%.1f,\"p99_ms\":%.1f,\"max_ms\":%.1f}\n",
            n, n ? lat [n / 2] : 0, n ? lat [(int) (n * 0.99) < n ? (int) (n * 0.99) : n - 1] : 0,
            n ? lat [n - 1] : 0);
    free (lat);
    rd_kafka_flush (prod, 10000);
    rd_kafka_destroy (prod);
    s_consumer_close (&cons);
    return n != samples;
}

int
main (int argc, char **argv)
{
    if (argc >= 7 && strcmp (argv [1], "produce") == 0)
        return s_produce (argv [2], argv [3], atof (argv [4]), atoi (argv [5]), atoi (argv [6]));
    if (argc >= 5 && strcmp (argv [1], "consume") == 0)
        return s_consume (argv [2], argv [3], atol (argv [4]));
    if (argc >= 5 && strcmp (argv [1], "wake") == 0)
        return s_wake (argv [2], argv [3], atoi (argv [4]));
    fprintf (stderr, "usage: kafka_load produce BROKER TOPIC SECONDS KEYS PAYLOAD\n"
                     "       kafka_load consume BROKER TOPIC COUNT\n"
                     "       kafka_load wake BROKER TOPIC SAMPLES\n");
    return 2;
}
