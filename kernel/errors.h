/*  kernel/errors.h - the broker's error codes
    Functions return 0 (or a count) for success and a negative QN_E* for
    failure. Listed once here; numbers are append-only.
*/
#ifndef QN_KERNEL_ERRORS_H
#define QN_KERNEL_ERRORS_H

#define QN_OK           0
#define QN_EAGAIN      -1       //  Downstream full: retry later, input still yours
#define QN_EPROTO      -2       //  Malformed message
#define QN_ENOENT      -3       //  No such actor / resource
#define QN_ETIMEDOUT   -4       //  Deadline passed
#define QN_EINVAL      -5       //  Bad argument
#define QN_ESHUTDOWN   -6       //  Kernel is stopping
#define QN_EIO         -7       //  Socket or file error
#define QN_EDB         -8       //  Database unavailable

const char *qn_strerror (int rc);

#endif
