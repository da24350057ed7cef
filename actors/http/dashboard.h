/*  actors/http/dashboard.h - the embedded dashboard files
    build/dashboard_files.c (scripts/embed-dashboard.sh) defines the table
    from dashboard/ and node_modules/uplot at build time.
*/
#ifndef QN_HTTP_DASHBOARD_H
#define QN_HTTP_DASHBOARD_H

#include <stddef.h>

typedef struct {
    const char *name;           //  "index.html", "app.js", "uPlot.js", ...
    const char *content_type;
    const unsigned char *data;
    size_t len;
} qn_dashboard_file_t;

//  Ends with a row whose name is NULL.
extern const qn_dashboard_file_t qn_dashboard_files [];

#endif
