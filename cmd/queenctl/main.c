/*  cmd/queenctl/main.c - queenctl: options, contexts, dispatch, help
    queenctl [GLOBAL OPTIONS] COMMAND [ARGS] (docs/queenctl.md).
    The server and token come from --server/--token, else QUEEN_SERVER /
    QUEEN_TOKEN, else the current context of the config file
    (--config, $QUEENCTL_CONFIG, ~/.config/queenctl/config), else
    http://127.0.0.1:6632. Exit codes: queenctl.h.
*/
#include "cmd/queenctl/queenctl.h"

#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

volatile int ctl_stop;

static const char *s_global_values = "server token context config output o";
static const char *s_global_flags = "quiet q no-progress help h";

//  ---------------------------------------------------------------- options
const char *
ctl_opt (const ctl_args_t *a, const char *name)
{
    for (int i = a->nopts - 1; i >= 0; i--)
        if (!strcmp (a->name [i], name))
            return a->value [i];
    return NULL;
}

bool
ctl_flag (const ctl_args_t *a, const char *name)
{
    return ctl_opt (a, name) != NULL;
}

int64_t
ctl_opt_int (ctl_t *ctl, const ctl_args_t *a, const char *name, int64_t dflt)
{
    const char *v = ctl_opt (a, name);
    if (!v)
        return dflt;
    char *end;
    long long n = strtoll (v, &end, 10);
    if (!*v || *end) {
        ctl_usage (ctl, "--%s must be an integer, not '%s'", name, v);
        exit (CTL_EXIT_USAGE);
    }
    return n;
}

int
ctl_exit_code (queen_code_t code)
{
    switch (code) {
        case QUEEN_OK: return CTL_EXIT_OK;
        case QUEEN_ERR_ARG: return CTL_EXIT_USAGE;
        case QUEEN_ERR_CONNECT: case QUEEN_ERR_TIMEOUT: return CTL_EXIT_CONNECT;
        case QUEEN_ERR_NOT_FOUND: return CTL_EXIT_NOT_FOUND;
        case QUEEN_ERR_CONFLICT: return CTL_EXIT_CONFLICT;
        default: return CTL_EXIT_FAILED;
    }
}

int
ctl_fail (ctl_t *ctl, queen_code_t code, const queen_error_t *err)
{
    ctl_live_end (ctl);
    if (err && err->http_status)
        fprintf (stderr, "queenctl: %s: %s (HTTP %ld, %s)\n", ctl->command, err->message,
                 err->http_status, queen_strerror (code));
    else
        fprintf (stderr, "queenctl: %s: %s: %s\n", ctl->command, queen_strerror (code),
                 err ? err->message : "");
    return ctl_exit_code (code);
}

int
ctl_usage (ctl_t *ctl, const char *fmt, ...)
{
    fprintf (stderr, "queenctl: %s: ", ctl->command ? ctl->command : "usage");
    va_list ap;
    va_start (ap, fmt);
    vfprintf (stderr, fmt, ap);
    va_end (ap);
    fprintf (stderr, " (queenctl %s --help)\n", ctl->command ? ctl->command : "");
    return CTL_EXIT_USAGE;
}

static bool
s_in_list (const char *list, const char *name)
{
    size_t n = strlen (name);
    for (const char *p = list; p && *p; ) {
        while (*p == ' ')
            p++;
        const char *e = strchr (p, ' ');
        size_t l = e ? (size_t) (e - p) : strlen (p);
        if (l == n && !strncmp (p, name, n))
            return true;
        p += l;
    }
    return false;
}

//  Parses argv into a; options may come anywhere. Returns 0 or -1 (message
//  printed). "--" ends options.
static int
s_parse (ctl_t *ctl, int argc, char **argv, const char *values, const char *flags, ctl_args_t *a)
{
    bool opts_done = false;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv [i];
        if (!opts_done && !strcmp (arg, "--")) {
            opts_done = true;
            continue;
        }
        if (opts_done || arg [0] != '-' || !arg [1]) {
            if (a->npos == CTL_MAX_POS) {
                ctl_usage (ctl, "too many arguments");
                return -1;
            }
            a->pos [a->npos++] = arg;
            continue;
        }
        const char *name = arg + (arg [1] == '-' ? 2 : 1);
        static char namebuf [CTL_MAX_OPTS][64];
        const char *eq = strchr (name, '=');
        const char *value = NULL;
        if (eq) {
            snprintf (namebuf [a->nopts % CTL_MAX_OPTS], 64, "%.*s", (int) (eq - name), name);
            name = namebuf [a->nopts % CTL_MAX_OPTS];
            value = eq + 1;
        }
        if (a->nopts == CTL_MAX_OPTS) {
            ctl_usage (ctl, "too many options");
            return -1;
        }
        if (s_in_list (values, name) || s_in_list (s_global_values, name)) {
            if (!value) {
                if (i + 1 >= argc) {
                    ctl_usage (ctl, "option %s needs a value", arg);
                    return -1;
                }
                value = argv [++i];
            }
        }
        else if (s_in_list (flags, name) || s_in_list (s_global_flags, name)) {
            if (value) {
                ctl_usage (ctl, "option --%s takes no value", name);
                return -1;
            }
            value = "";
        }
        else {
            ctl_usage (ctl, "unknown option %s", arg);
            return -1;
        }
        a->name [a->nopts] = name;
        a->value [a->nopts++] = value;
    }
    return 0;
}

//  ---------------------------------------------------------------- config
//  Reads the config file: "current-context = NAME", "[context NAME]"
//  sections with "server = URL" and "token = T". '#' comments.
static void
s_config (const char *path, const char *want, char **context, char **server, char **token)
{
    FILE *f = fopen (path, "r");
    if (!f)
        return;
    char line [4096];
    char current [256] = "", section [256] = "";
    //  Two passes: the current context may be named after its section
    for (int pass = 0; pass < 2; pass++) {
        rewind (f);
        section [0] = 0;
        while (fgets (line, sizeof line, f)) {
            char *s = line;
            while (*s == ' ' || *s == '\t')
                s++;
            s [strcspn (s, "\r\n")] = 0;
            if (!*s || *s == '#')
                continue;
            if (*s == '[') {
                char name [256] = "";
                if (sscanf (s, "[context %255[^]]]", name) == 1)
                    snprintf (section, sizeof section, "%s", name);
                else
                    section [0] = 0;
                continue;
            }
            char *eqs = strchr (s, '=');
            if (!eqs)
                continue;
            *eqs = 0;
            char *k = s, *v = eqs + 1;
            for (char *e = k + strlen (k); e > k && (e [-1] == ' ' || e [-1] == '\t'); )
                *--e = 0;
            while (*v == ' ' || *v == '\t')
                v++;
            if (pass == 0 && !section [0] && !strcmp (k, "current-context"))
                snprintf (current, sizeof current, "%s", v);
            const char *use = want ? want : current;
            if (pass == 1 && section [0] && !strcmp (section, use)) {
                if (!strcmp (k, "server") && !*server)
                    *server = strdup (v);
                else if (!strcmp (k, "token") && !*token)
                    *token = strdup (v);
            }
        }
        if (pass == 0 && !want && current [0] && !*context)
            *context = strdup (current);
    }
    fclose (f);
}

//  ---------------------------------------------------------------- help
static void
s_help (FILE *out)
{
    fprintf (out,
        "queenctl - operate a Queen broker from the terminal\n\n"
        "usage: queenctl [GLOBAL OPTIONS] COMMAND [ARGS]\n\n"
        "commands:\n");
    for (const ctl_cmd_t *c = ctl_commands; c->name; c++)
        fprintf (out, "  %-12s %s\n", c->name, c->summary);
    fprintf (out,
        "  %-12s %s\n"
        "  %-12s %s\n"
        "  %-12s %s\n"
        "  %-12s %s\n\n"
        "global options (anywhere on the line):\n"
        "  --server URL        broker URL (env QUEEN_SERVER; default http://127.0.0.1:6632)\n"
        "  --token T           bearer token (env QUEEN_TOKEN)\n"
        "  --context NAME      context of the config file (env QUEENCTL_CONTEXT)\n"
        "  --config FILE       config file (env QUEENCTL_CONFIG; ~/.config/queenctl/config)\n"
        "  -o, --output FMT    table (default) or json\n"
        "  -q, --quiet         no summary lines\n"
        "  --no-progress       no live progress line\n"
        "  -h, --help          this help; COMMAND --help for a command\n\n"
        "exit codes: 0 ok, 1 failed/refused, 2 usage, 3 broker unreachable,\n"
        "            4 not found, 5 conflict, 130 interrupted\n",
        "config", "show the server, token source and context in use",
        "completion", "print a completion script (completion bash | completion zsh)",
        "help", "help [COMMAND]",
        "man", "print the manual page (queenctl man | man -l -)");
}

static void
s_command_help (const ctl_cmd_t *c, FILE *out)
{
    fprintf (out, "usage: queenctl %s\n\n%s\n%s", c->usage, c->summary, c->help);
    fprintf (out, "\nglobal options: --server, --token, --context, --config, -o json|table, -q, --no-progress\n");
}

//  The subcommands a command takes as its first argument, or "".
static const char *
s_subcommands (const char *name)
{
    return !strcmp (name, "dlq") ? "list requeue delete"
         : !strcmp (name, "kv") ? "get set del list"
         : !strcmp (name, "timers") ? "list get add cancel"
         : !strcmp (name, "maintenance") ? "status on off"
         : !strcmp (name, "sqs-keys") ? "list create disable" : "";
}

//  The command's options as words ("--queue --group -f ...").
static void
s_option_words (const ctl_cmd_t *c, FILE *out)
{
    const char *lists [] = { c->values, c->flags };
    for (int l = 0; l < 2; l++) {
        char buf [256];
        snprintf (buf, sizeof buf, "%s", lists [l]);
        for (char *tok = strtok (buf, " "); tok; tok = strtok (NULL, " "))
            fprintf (out, "%s%s ", strlen (tok) == 1 ? "-" : "--", tok);
    }
}

static int
s_completion (FILE *out)
{
    fprintf (out,
        "# bash completion for queenctl: source <(queenctl completion bash)\n"
        "_queenctl() {\n"
        "    local cur prev cmd\n"
        "    cur=\"${COMP_WORDS[COMP_CWORD]}\"\n"
        "    prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
        "    cmd=\"\"\n"
        "    for w in \"${COMP_WORDS[@]:1:COMP_CWORD-1}\"; do\n"
        "        case \"$w\" in -*) ;; *) cmd=\"$w\"; break ;; esac\n"
        "    done\n"
        "    case \"$prev\" in\n"
        "        -o|--output) COMPREPLY=( $(compgen -W \"json table\" -- \"$cur\") ); return ;;\n"
        "        --file|--config) COMPREPLY=( $(compgen -f -- \"$cur\") ); return ;;\n"
        "    esac\n"
        "    if [ -z \"$cmd\" ]; then\n"
        "        COMPREPLY=( $(compgen -W \"");
    for (const ctl_cmd_t *c = ctl_commands; c->name; c++)
        fprintf (out, "%s ", c->name);
    fprintf (out, "config completion help man --server --token --context --config --output --quiet --no-progress --help\" -- \"$cur\") )\n"
        "        return\n"
        "    fi\n"
        "    case \"$cmd\" in\n");
    for (const ctl_cmd_t *c = ctl_commands; c->name; c++) {
        fprintf (out, "        %s) COMPREPLY=( $(compgen -W \"", c->name);
        if (*s_subcommands (c->name))
            fprintf (out, "%s ", s_subcommands (c->name));
        s_option_words (c, out);
        fprintf (out, "--help --output\" -- \"$cur\") ) ;;\n");
    }
    fprintf (out,
        "    esac\n"
        "}\n"
        "complete -F _queenctl queenctl\n");
    return 0;
}

//  zsh: a completion function for compsys, from the same command table:
//  source <(queenctl completion zsh), or save it as _queenctl in $fpath.
static int
s_completion_zsh (FILE *out)
{
    fprintf (out,
        "#compdef queenctl\n"
        "# zsh completion for queenctl: source <(queenctl completion zsh)\n"
        "# (after compinit), or save as _queenctl in a directory of $fpath\n"
        "_queenctl() {\n"
        "    local -a cmds\n"
        "    local cmd\n"
        "    cmds=(\n");
    for (const ctl_cmd_t *c = ctl_commands; c->name; c++) {
        fprintf (out, "        '%s:", c->name);
        for (const char *p = c->summary; *p; p++)
            fputs (*p == '\'' ? "'\\''" : *p == ':' ? "\\:" : (char []) { *p, 0 }, out);
        fputs ("'\n", out);
    }
    fprintf (out,
        "        'config:show the server, token source and context in use'\n"
        "        'completion:print a completion script (bash or zsh)'\n"
        "        'help:help for a command'\n"
        "        'man:print the manual page'\n"
        "    )\n"
        "    local -i i=2\n"
        "    while (( i < CURRENT )); do\n"
        "        case ${words[i]} in\n"
        "            --server|--token|--context|--config|-o|--output) (( i += 2 )); continue ;;\n"
        "            -*) ;;\n"
        "            *) cmd=${words[i]}; break ;;\n"
        "        esac\n"
        "        (( i++ ))\n"
        "    done\n"
        "    case ${words[CURRENT-1]} in\n"
        "        -o|--output) compadd -- json table; return ;;\n"
        "        --file|--config) _files; return ;;\n"
        "    esac\n"
        "    if [[ -z $cmd ]]; then\n"
        "        if [[ ${words[CURRENT]} == -* ]]; then\n"
        "            compadd -- --server --token --context --config --output --quiet --no-progress --help\n"
        "        else\n"
        "            _describe -t commands 'queenctl command' cmds\n"
        "        fi\n"
        "        return\n"
        "    fi\n"
        "    case $cmd in\n");
    for (const ctl_cmd_t *c = ctl_commands; c->name; c++) {
        fprintf (out, "        %s) compadd -- %s%s", c->name, s_subcommands (c->name),
                 *s_subcommands (c->name) ? " " : "");
        s_option_words (c, out);
        fprintf (out, "--help --output ;;\n");
    }
    fprintf (out,
        "        completion) compadd -- bash zsh ;;\n"
        "        help) _describe -t commands 'queenctl command' cmds ;;\n"
        "    esac\n"
        "}\n"
        "compdef _queenctl queenctl\n");
    return 0;
}

//  Roff text: backslashes and leading dots/quotes escaped.
static void
s_roff (FILE *out, const char *text)
{
    bool bol = true;
    for (const char *p = text; *p; p++) {
        if (bol && (*p == '.' || *p == '\''))
            fputs ("\\&", out);
        if (*p == '\\')
            fputs ("\\e", out);
        else if (*p == '-')
            fputs ("\\-", out);
        else
            fputc (*p, out);
        bol = *p == '\n';
    }
}

//  The manual page (man 7 man format), from the same command table as --help.
static int
s_man (FILE *out)
{
    fprintf (out,
        ".TH QUEENCTL 1 \"\" \"Queen\" \"User Commands\"\n"
        ".SH NAME\nqueenctl \\- operate a Queen broker from the terminal\n"
        ".SH SYNOPSIS\n.B queenctl\n[\\fIGLOBAL OPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]\n"
        ".SH DESCRIPTION\nqueenctl talks to a Queen broker through its HTTP API (libqueen). "
        "Long operations draw a live line on stderr when stdout and stderr are terminals; "
        "in pipes only results reach stdout.\n"
        ".SH GLOBAL OPTIONS\n"
        ".TP\n\\fB\\-\\-server\\fR \\fIURL\\fR\nbroker URL (env QUEEN_SERVER; default http://127.0.0.1:6632)\n"
        ".TP\n\\fB\\-\\-token\\fR \\fIT\\fR\nbearer token (env QUEEN_TOKEN)\n"
        ".TP\n\\fB\\-\\-context\\fR \\fINAME\\fR\ncontext of the config file (env QUEENCTL_CONTEXT)\n"
        ".TP\n\\fB\\-\\-config\\fR \\fIFILE\\fR\nconfig file (env QUEENCTL_CONFIG; ~/.config/queenctl/config)\n"
        ".TP\n\\fB\\-o\\fR, \\fB\\-\\-output\\fR \\fIjson|table\\fR\noutput format\n"
        ".TP\n\\fB\\-q\\fR, \\fB\\-\\-quiet\\fR\nno summary lines\n"
        ".TP\n\\fB\\-\\-no\\-progress\\fR\nno live line\n"
        ".SH COMMANDS\n");
    for (const ctl_cmd_t *c = ctl_commands; c->name; c++) {
        fputs (".TP\n.B ", out);
        s_roff (out, c->usage);
        fputs ("\n", out);
        s_roff (out, c->summary);
        fputs (".\n.br\n.nf\n", out);
        s_roff (out, c->help);
        fputs (".fi\n", out);
    }
    fprintf (out,
        ".SH EXIT STATUS\n0 ok, 1 failed or refused, 2 usage, 3 broker unreachable, "
        "4 not found, 5 conflict, 130 interrupted.\n"
        ".SH FILES\n~/.config/queenctl/config: \\fBcurrent\\-context = NAME\\fR, then "
        "\\fB[context NAME]\\fR sections with \\fBserver =\\fR and \\fBtoken =\\fR lines.\n"
        ".SH SEE ALSO\ndocs/queenctl.md, docs/http\\-api.md\n");
    return 0;
}

static void
s_on_signal (int sig)
{
    (void) sig;
    if (ctl_stop)
        _exit (CTL_EXIT_INTERRUPTED);     //  Second Ctrl-C: at once
    ctl_stop = 1;
}

int
main (int argc, char **argv)
{
    ctl_t ctl = { .command = NULL };
    //  The command is the first positional; parse everything with the
    //  union of the command's options once it is known.
    const ctl_cmd_t *cmd = NULL;
    const char *cmd_name = NULL;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv [i];
        if (arg [0] == '-') {
            const char *n = arg + (arg [1] == '-' ? 2 : 1);
            if (!strchr (n, '=') && s_in_list (s_global_values, n))
                i++;
            continue;
        }
        cmd_name = arg;
        break;
    }
    if (cmd_name)
        for (const ctl_cmd_t *c = ctl_commands; c->name; c++)
            if (!strcmp (c->name, cmd_name))
                cmd = c;
    ctl.command = cmd_name;
    ctl_args_t a = { .nopts = 0 };
    if (s_parse (&ctl, argc - 1, argv + 1, cmd ? cmd->values : "", cmd ? cmd->flags : "", &a))
        return CTL_EXIT_USAGE;
    //  Drop the command name from the positionals
    if (cmd_name && a.npos && a.pos [0] == cmd_name) {
        memmove (a.pos, a.pos + 1, sizeof (a.pos [0]) * (size_t) (a.npos - 1));
        a.npos--;
    }
    bool help = ctl_flag (&a, "help") || ctl_flag (&a, "h");
    if (!cmd_name) {
        s_help (help ? stdout : stderr);
        return help ? 0 : CTL_EXIT_USAGE;
    }
    if (!strcmp (cmd_name, "help")) {
        if (a.npos)
            for (const ctl_cmd_t *c = ctl_commands; c->name; c++)
                if (!strcmp (c->name, a.pos [0])) {
                    s_command_help (c, stdout);
                    return 0;
                }
        s_help (stdout);
        return a.npos ? CTL_EXIT_USAGE : 0;
    }
    if (!strcmp (cmd_name, "man"))
        return s_man (stdout);
    if (!strcmp (cmd_name, "completion")) {
        if (a.npos && !strcmp (a.pos [0], "zsh"))
            return s_completion_zsh (stdout);
        if (a.npos && strcmp (a.pos [0], "bash"))
            return ctl_usage (&ctl, "completion bash or completion zsh");
        return s_completion (stdout);
    }
    if (!cmd && strcmp (cmd_name, "config")) {
        fprintf (stderr, "queenctl: unknown command '%s' (queenctl --help)\n", cmd_name);
        return CTL_EXIT_USAGE;
    }
    if (help) {
        if (cmd)
            s_command_help (cmd, stdout);
        else
            printf ("usage: queenctl config\n\nShows the server, context and token source in use.\n");
        return 0;
    }
    const char *output = ctl_opt (&a, "output") ? ctl_opt (&a, "output") : ctl_opt (&a, "o");
    if (output && strcmp (output, "json") && strcmp (output, "table"))
        return ctl_usage (&ctl, "--output is json or table");
    ctl.json = output && !strcmp (output, "json");
    ctl.quiet = ctl_flag (&a, "quiet") || ctl_flag (&a, "q");
    ctl.progress = isatty (1) && isatty (2) && !ctl.quiet && !ctl_flag (&a, "no-progress");

    //  Server and token: flags, environment, config file context
    char *server = NULL, *token = NULL, *context = NULL;
    const char *want = ctl_opt (&a, "context") ? ctl_opt (&a, "context") : getenv ("QUEENCTL_CONTEXT");
    const char *config = ctl_opt (&a, "config") ? ctl_opt (&a, "config") : getenv ("QUEENCTL_CONFIG");
    char home_config [1024];
    if (!config && getenv ("HOME")) {
        snprintf (home_config, sizeof home_config, "%s/.config/queenctl/config", getenv ("HOME"));
        config = home_config;
    }
    const char *token_src = "none";
    if (ctl_opt (&a, "server"))
        server = strdup (ctl_opt (&a, "server"));
    else if (getenv ("QUEEN_SERVER") && *getenv ("QUEEN_SERVER"))
        server = strdup (getenv ("QUEEN_SERVER"));
    if (ctl_opt (&a, "token")) {
        token = strdup (ctl_opt (&a, "token"));
        token_src = "--token";
    }
    else if (getenv ("QUEEN_TOKEN") && *getenv ("QUEEN_TOKEN")) {
        token = strdup (getenv ("QUEEN_TOKEN"));
        token_src = "QUEEN_TOKEN";
    }
    if (want)
        context = strdup (want);
    if (config) {
        bool had_token = token != NULL;
        s_config (config, want, &context, &server, &token);
        if (!had_token && token)
            token_src = "config";
    }
    if (want && config) {
        //  An explicit context must exist
        char *s2 = NULL, *t2 = NULL, *c2 = NULL;
        s_config (config, want, &c2, &s2, &t2);
        bool found = s2 || t2;
        free (s2);
        free (t2);
        free (c2);
        if (!found) {
            fprintf (stderr, "queenctl: context '%s' not found in %s\n", want, config);
            free (server);
            free (token);
            free (context);
            return CTL_EXIT_USAGE;
        }
    }
    if (!server)
        server = strdup ("http://127.0.0.1:6632");
    ctl.server = server;
    ctl.context = context;
    int rc;
    if (!strcmp (cmd_name, "config")) {
        if (ctl.json)
            printf ("{\"server\":\"%s\",\"context\":%s%s%s,\"token\":\"%s\",\"config\":\"%s\"}\n", server,
                    context ? "\"" : "", context ? context : "null", context ? "\"" : "", token_src,
                    config ? config : "");
        else
            printf ("server   %s\ncontext  %s\ntoken    %s\nconfig   %s\n", server, context ? context : "-",
                    token_src, config ? config : "-");
        rc = 0;
    }
    else {
        queen_error_t err = { 0 };
        ctl.client = queen_new (&(queen_options_t) { .url = server, .token = token, .pool_size = 2 }, &err);
        if (!ctl.client)
            rc = ctl_usage (&ctl, "--server: %s", err.message);
        else {
            struct sigaction sa = { .sa_handler = s_on_signal };
            sigemptyset (&sa.sa_mask);
            sigaction (SIGINT, &sa, NULL);
            sigaction (SIGTERM, &sa, NULL);
            signal (SIGPIPE, SIG_IGN);
            rc = cmd->fn (&ctl, &a);
            queen_destroy (&ctl.client);
        }
        queen_error_clear (&err);
    }
    if (fflush (stdout) != 0 && rc == 0)
        rc = CTL_EXIT_FAILED;
    free (server);
    free (token);
    free (context);
    return rc;
}
