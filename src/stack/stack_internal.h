/* stack_internal.h - every part of the stack's inside at once, for the unit
 * tests that drive the parts directly; the stack's own files include the
 * headers of the parts they call. */
#ifndef SS_STACK_STACK_INTERNAL_H
#define SS_STACK_STACK_INTERNAL_H

#include "stack/stack.h"
#include "stack/stack_app.h"
#include "stack/stack_cc.h"
#include "stack/stack_conn.h"
#include "stack/stack_cookie.h"
#include "stack/stack_fork.h"
#include "stack/stack_listen.h"
#include "stack/stack_loop.h"
#include "stack/stack_send.h"

#endif
