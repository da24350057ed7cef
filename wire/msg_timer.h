/*  wire/msg_timer.h - telling the timer actor about a new timer
    QN_MSG_TIMER_ARM   codec_http -> timer_wheel
        [id, due_us]   a timer this broker just created (committed), due at
                       due_us (database clock, us since the Unix epoch), so
                       a short timer need not wait for the next load
    The decoder returns 0, or -1 when malformed. Pure.
*/
#ifndef QN_WIRE_MSG_TIMER_H
#define QN_WIRE_MSG_TIMER_H

#include <msgpack.h>
#include <stdint.h>

typedef struct {
    int64_t id;
    int64_t due_us;
} qn_msg_timer_arm_t;

void qn_msg_timer_arm_encode (msgpack_packer *pk, const qn_msg_timer_arm_t *m);
int qn_msg_timer_arm_decode (const char *buf, size_t len, qn_msg_timer_arm_t *out);

#endif
