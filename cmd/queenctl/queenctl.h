/*  cmd/queenctl/queenctl.h - the operator's command line, on libqueen
    Files:
        main.c   global options, config file contexts, dispatch, help,
                 shell completion, exit codes
        out.c    output: tables, JSON helpers, the progress line
        cmds.c   the commands (status, queues, push, tail, ack, dlq,
                 seek/replay, lag, kv, timers, maintenance, bench)
    docs/queenctl.md describes every command.
*/
#ifndef QN_QUEENCTL_H
#define QN_QUEENCTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "client/queen.h"
#include "base/buf.h"
#include "wire/json.h"

//  Exit codes
enum {
    CTL_EXIT_OK = 0,
    CTL_EXIT_FAILED = 1,        //  The broker refused or an operation failed
    CTL_EXIT_USAGE = 2,         //  Bad command line
    CTL_EXIT_CONNECT = 3,       //  Broker unreachable or no answer in time
    CTL_EXIT_NOT_FOUND = 4,     //  404
    CTL_EXIT_CONFLICT = 5,      //  409
    CTL_EXIT_INTERRUPTED = 130  //  SIGINT during a long operation
};

#define CTL_MAX_OPTS 32
#define CTL_MAX_POS  16

//  A parsed command line: options by name (without "--") and positionals.
typedef struct {
    const char *name [CTL_MAX_OPTS];
    const char *value [CTL_MAX_OPTS];   //  "" for flags
    int nopts;
    const char *pos [CTL_MAX_POS];
    int npos;
} ctl_args_t;

typedef struct {
    queen_client_t *client;
    const char *server;
    const char *context;
    bool json;                  //  --output json
    bool progress;              //  Live lines on stderr (both ends are terminals)
    bool quiet;
    const char *command;        //  For messages
} ctl_t;

//  Options
const char *
    ctl_opt (const ctl_args_t *a, const char *name);
bool
    ctl_flag (const ctl_args_t *a, const char *name);
//  Integer option with a default; exits 2 when not an integer.
int64_t
    ctl_opt_int (ctl_t *ctl, const ctl_args_t *a, const char *name, int64_t dflt);

//  Errors: prints "queenctl: <command>: <message>" and returns the exit code.
int
    ctl_fail (ctl_t *ctl, queen_code_t code, const queen_error_t *err);
int
    ctl_usage (ctl_t *ctl, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));
int
    ctl_exit_code (queen_code_t code);

//  ---------------------------------------------------------------- out.c
int64_t
    ctl_now_ms (void);
//  Rewrites the live line on stderr (only when ctl->progress); at most
//  every 100 ms unless force.
void
    ctl_live (ctl_t *ctl, bool force, const char *fmt, ...) __attribute__ ((format (printf, 3, 4)));
//  Clears the live line.
void
    ctl_live_end (ctl_t *ctl);
//  "[#########-----------]" of `width` cells for done/total.
void
    ctl_bar (char *out, size_t len, int width, double done, double total);

typedef struct {
    int ncols;
    char **cells;               //  Owned, row-major, header first
    size_t nrows, cap;
} ctl_table_t;

void
    ctl_table_init (ctl_table_t *t, int ncols, const char *const *headers);
//  Adds one row; takes ownership of the ncols malloc'd strings (NULL = "-").
void
    ctl_table_add (ctl_table_t *t, char **row);
void
    ctl_table_print (ctl_table_t *t, FILE *out);
void
    ctl_table_free (ctl_table_t *t);

//  Text of the value at a dotted path under obj ("messages.total"):
//  strings unescaped, other values as their JSON text, absent/null NULL.
//  malloc'd.
char *
    ctl_jtext (const qn_json_doc_t *doc, int obj, const char *path);
//  Parses resp body; -1 (with a message) when not JSON.
int
    ctl_parse (ctl_t *ctl, qn_json_doc_t *doc, const queen_response_t *resp);
//  Prints a raw JSON answer followed by a newline.
void
    ctl_print_raw (const queen_response_t *resp);
char *
    ctl_strdup (const char *s);

//  --------------------------------------------------------------- cmds.c
typedef int (*ctl_cmd_fn) (ctl_t *ctl, const ctl_args_t *args);

typedef struct {
    const char *name;
    ctl_cmd_fn fn;
    const char *values;         //  Options taking a value, space separated
    const char *flags;          //  Options without a value
    const char *usage;
    const char *summary;
    const char *help;
} ctl_cmd_t;

extern const ctl_cmd_t ctl_commands [];

//  Set by SIGINT/SIGTERM during long operations
extern volatile int ctl_stop;

#endif
