// SPDX-License-Identifier: GPL-2.0
/* 5.14: task_struct.state became __state, an unsigned int. */
#include <linux/sched.h>
unsigned int mg_probe(struct task_struct *t) { return READ_ONCE(t->__state); }
