/*  test/tools/s3_tool.c - drives actors/sink/s3.c from the command line
    for test/integration/sink_s3.test.mjs (and by hand against a bucket).
    Settings from the environment: S3_ENDPOINT, S3_BUCKET, S3_REGION,
    S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, S3_PATH_STYLE (1/0),
    S3_RETRIES (default 0), S3_BACKOFF_MS.
    Usage: s3-tool check | put KEY FILE | get KEY FILE | head KEY |
           delete KEY | list PREFIX | mpu KEY FILE PART_BYTES | mpu-abort KEY |
           put-many PREFIX N FILE | mpu-start KEY (prints upload=ID) |
           mpu-part KEY ID (sends part 2) | mpu-abort-id KEY ID
    Prints one line of results on stdout ("status=200 etag=... length=...
    attempts=N"); exits 0 on success, 1 when S3 said no (the error on
    stderr), 2 on bad usage.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "actors/sink/s3.h"
#include "base/buf.h"

static int
s_read_file (const char *path, qn_buf_t *out)
{
    FILE *f = fopen (path, "rb");
    if (!f)
        return -1;
    char chunk [65536];
    size_t n;
    while ((n = fread (chunk, 1, sizeof chunk, f)) > 0)
        qn_buf_append (out, chunk, n);
    fclose (f);
    return 0;
}

static int
s_report (int rc, const qn_s3_result_t *res)
{
    printf ("status=%ld etag=%s length=%lld attempts=%u\n", res->status, res->etag,
            (long long) res->content_length, res->attempts);
    if (rc != 0)
        fprintf (stderr, "s3-tool: %s\n", res->error);
    return rc == 0 ? 0 : 1;
}

int
main (int argc, char **argv)
{
    if (argc < 2)
        return 2;
    curl_global_init (CURL_GLOBAL_DEFAULT);
    const char *ps = getenv ("S3_PATH_STYLE");
    qn_s3_config_t cfg = {
        getenv ("S3_ENDPOINT"), getenv ("S3_BUCKET"), getenv ("S3_REGION"),
        getenv ("S3_ACCESS_KEY_ID"), getenv ("S3_SECRET_ACCESS_KEY"),
        ps && strcmp (ps, "1") == 0,
        getenv ("S3_RETRIES") ? (uint32_t) atoi (getenv ("S3_RETRIES")) : 0,
        getenv ("S3_BACKOFF_MS") ? (uint32_t) atoi (getenv ("S3_BACKOFF_MS")) : 0, 0
    };
    char err [256];
    qn_s3_t *s3 = qn_s3_new (&cfg, err, sizeof err);
    if (!s3) {
        fprintf (stderr, "s3-tool: %s\n", err);
        return 2;
    }
    qn_s3_result_t res;
    qn_s3_result_init (&res);
    qn_buf_t data = QN_BUF_INIT;
    const char *cmd = argv [1];
    int rc = 2;
    if (strcmp (cmd, "check") == 0)
        rc = s_report (qn_s3_check_bucket (s3, &res), &res);
    else
    if (strcmp (cmd, "put") == 0 && argc == 4 && s_read_file (argv [3], &data) == 0) {
        rc = s_report (qn_s3_put (s3, argv [2], data.data, data.len, NULL, &res), &res);
        char etag [64];
        qn_s3_etag_single (data.data, data.len, etag);
        if (rc == 0 && strcmp (etag, res.etag) != 0) {
            fprintf (stderr, "s3-tool: etag %s, expected %s\n", res.etag, etag);
            rc = 1;
        }
    }
    else
    if (strcmp (cmd, "put-many") == 0 && argc == 5 && s_read_file (argv [4], &data) == 0) {
        //  put-many PREFIX N FILE: N objects PREFIX00000, PREFIX00001, ...
        int n = atoi (argv [3]);
        rc = 0;
        for (int i = 0; i < n && rc == 0; i++) {
            char key [1024];
            snprintf (key, sizeof key, "%s%05d", argv [2], i);
            if (qn_s3_put (s3, key, data.data, data.len, NULL, &res) != 0)
                rc = s_report (-1, &res);
        }
        if (rc == 0)
            printf ("put %d\n", n);
    }
    else
    if (strcmp (cmd, "get") == 0 && argc == 4) {
        rc = s_report (qn_s3_get (s3, argv [2], &res), &res);
        FILE *f = rc == 0 ? fopen (argv [3], "wb") : NULL;
        if (f) {
            fwrite (res.body.data ? res.body.data : "", 1, res.body.len, f);
            fclose (f);
        }
    }
    else
    if (strcmp (cmd, "head") == 0 && argc == 3)
        rc = s_report (qn_s3_head (s3, argv [2], &res), &res);
    else
    if (strcmp (cmd, "delete") == 0 && argc == 3)
        rc = s_report (qn_s3_delete (s3, argv [2], &res), &res);
    else
    if (strcmp (cmd, "list") == 0 && argc == 3) {
        qn_buf_t keys = QN_BUF_INIT;
        bool more = true;
        int r = 0;
        const char *after = NULL;
        qn_buf_t last = QN_BUF_INIT;
        while (more && r == 0) {
            size_t from = keys.len;
            r = qn_s3_list (s3, argv [2], after, &keys, &more, &res);
            //  The last key of this page is where the next one starts.
            if (keys.len > from) {
                size_t end = keys.len - 1, start = end;
                while (start > from && keys.data [start - 1] != '\n')
                    start--;
                qn_buf_reset (&last);
                qn_buf_append (&last, keys.data + start, end - start);
                after = last.data;
            }
            else
                more = false;
        }
        rc = r == 0 ? 0 : 1;
        if (r != 0)
            fprintf (stderr, "s3-tool: %s\n", res.error);
        else
            fwrite (keys.data ? keys.data : "", 1, keys.len, stdout);
        qn_buf_free (&keys);
        qn_buf_free (&last);
    }
    else
    if (strcmp (cmd, "mpu") == 0 && argc == 5 && s_read_file (argv [3], &data) == 0) {
        size_t part = (size_t) atol (argv [4]);
        char id [512];
        rc = 1;
        if (part > 0 && qn_s3_multipart_create (s3, argv [2], NULL, id, sizeof id, &res) == 0) {
            size_t parts = (data.len + part - 1) / part;
            char (*etags) [128] = calloc (parts ? parts : 1, 128);
            int r = 0;
            for (size_t i = 0; i < parts && r == 0; i++) {
                size_t n = data.len - i * part < part ? data.len - i * part : part;
                r = qn_s3_multipart_part (s3, argv [2], id, (uint32_t) i + 1, data.data + i * part, n, &res);
                if (r == 0)
                    snprintf (etags [i], 128, "%s", res.etag);
            }
            if (r == 0)
                r = qn_s3_multipart_complete (s3, argv [2], id, etags, (uint32_t) parts, &res);
            free (etags);
            if (r == 0)
                r = qn_s3_head (s3, argv [2], &res);
            rc = s_report (r, &res);
            if (rc == 0 && !qn_s3_etag_matches (res.etag, data.data, data.len, part)) {
                fprintf (stderr, "s3-tool: etag %s matches neither form\n", res.etag);
                rc = 1;
            }
        }
        else
            fprintf (stderr, "s3-tool: %s\n", res.error);
    }
    else
    if (strcmp (cmd, "mpu-start") == 0 && argc == 3) {
        //  An upload left open: created, part 1 sent; prints its id.
        char id [512];
        rc = 1;
        if (qn_s3_multipart_create (s3, argv [2], NULL, id, sizeof id, &res) == 0
        &&  qn_s3_multipart_part (s3, argv [2], id, 1, "abc", 3, &res) == 0) {
            printf ("upload=%s\n", id);
            rc = 0;
        }
        else
            fprintf (stderr, "s3-tool: %s\n", res.error);
    }
    else
    if (strcmp (cmd, "mpu-abort-id") == 0 && argc == 4)
        rc = s_report (qn_s3_multipart_abort (s3, argv [2], argv [3], &res), &res);
    else
    if (strcmp (cmd, "mpu-part") == 0 && argc == 4)
        rc = s_report (qn_s3_multipart_part (s3, argv [2], argv [3], 2, "def", 3, &res), &res);
    else
    if (strcmp (cmd, "mpu-abort") == 0 && argc == 3) {
        char id [512];
        rc = 1;
        if (qn_s3_multipart_create (s3, argv [2], NULL, id, sizeof id, &res) == 0
        &&  qn_s3_multipart_part (s3, argv [2], id, 1, "abc", 3, &res) == 0)
            rc = s_report (qn_s3_multipart_abort (s3, argv [2], id, &res), &res);
        else
            fprintf (stderr, "s3-tool: %s\n", res.error);
    }
    qn_buf_free (&data);
    qn_s3_result_free (&res);
    qn_s3_destroy (&s3);
    curl_global_cleanup ();
    return rc;
}
