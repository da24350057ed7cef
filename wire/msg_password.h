/*  wire/msg_password.h - queen-proxy's password work, off its event loop
    QN_MSG_PW_WORK   proxy -> proxy_hasher (qn_request)
        [op, password (bin), hash (str)]
        op 0 (VERIFY): does password match hash? An empty hash verifies
                       against the hasher's own dummy hash (same cost,
                       always false: an unknown user costs what a known
                       one does);
        op 1 (HASH):   Argon2id of password at the interactive cost.
    QN_MSG_PW_DONE   proxy_hasher -> proxy (the reply)
        [ok, hash (str)]  VERIFY: ok = match, hash ""; HASH: ok = hashed,
                          hash the new hash.
    Decoders return 0, or -1 when malformed; slices point into buf. Pure.
*/
#ifndef QN_WIRE_MSG_PASSWORD_H
#define QN_WIRE_MSG_PASSWORD_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QN_PW_VERIFY  0
#define QN_PW_HASH    1
#define QN_PW_MAX_LEN 1024      //  Longest password accepted

typedef struct {
    int op;                     //  QN_PW_VERIFY or QN_PW_HASH
    const char *password;
    size_t password_len;
    const char *hash;           //  VERIFY: the stored hash, or "" (dummy)
    size_t hash_len;
} qn_msg_pw_work_t;

typedef struct {
    bool ok;
    const char *hash;
    size_t hash_len;
} qn_msg_pw_done_t;

void qn_msg_pw_work_encode (msgpack_packer *pk, const qn_msg_pw_work_t *m);
int qn_msg_pw_work_decode (const char *buf, size_t len, qn_msg_pw_work_t *out);
void qn_msg_pw_done_encode (msgpack_packer *pk, const qn_msg_pw_done_t *m);
int qn_msg_pw_done_decode (const char *buf, size_t len, qn_msg_pw_done_t *out);

#endif
