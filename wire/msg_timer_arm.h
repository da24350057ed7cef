/*  wire/msg_timer_arm.h - body of QN_MSG_TIMER_ARM
    codec_http (the timer routes and the transaction bundle) tells the
    "timers" actor about a timer it just created, so a short timer fires on
    time without waiting for the actor's next load. A hint: the load finds
    the timer anyway.
    Body: msgpack [id, due_us]
        id      int64   queen.timers.id
        due_us  int64   due time on the database clock, us since the epoch
    Pure: no I/O, no globals.
*/
#ifndef QN_WIRE_MSG_TIMER_ARM_H
#define QN_WIRE_MSG_TIMER_ARM_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

typedef struct {
    int64_t id;
    int64_t due_us;
} qn_msg_timer_arm_t;

//  Appends the body to out.
void qn_msg_timer_arm_encode (const qn_msg_timer_arm_t *msg, qn_buf_t *out);
//  0, or -1 when buf is not such a body (msg is then undefined).
int qn_msg_timer_arm_decode (const void *buf, size_t len, qn_msg_timer_arm_t *msg);

#endif
