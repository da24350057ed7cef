/*  kernel/errors.c - names of the QN_E* codes (see errors.h) */
#include "kernel/errors.h"

const char *
qn_strerror (int rc)
{
    switch (rc) {
        case QN_OK: return "ok";
        case QN_EAGAIN: return "destination full";
        case QN_EPROTO: return "malformed message";
        case QN_ENOENT: return "not found";
        case QN_ETIMEDOUT: return "timed out";
        case QN_EINVAL: return "invalid argument";
        case QN_ESHUTDOWN: return "shutting down";
        case QN_EIO: return "i/o error";
        case QN_EDB: return "database unavailable";
        default: return "unknown error";
    }
}
