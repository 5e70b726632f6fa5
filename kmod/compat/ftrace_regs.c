// SPDX-License-Identifier: GPL-2.0
/*
 * 5.11: ftrace callbacks take struct ftrace_regs, and guard recursion
 * with ftrace_test_recursion_trylock() themselves.
 */
#include <linux/ftrace.h>
#include <linux/trace_recursion.h>
static void hit(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
		struct ftrace_regs *fregs)
{
	int bit = ftrace_test_recursion_trylock(ip, pip);

	if (bit >= 0)
		ftrace_test_recursion_unlock(bit);
}

struct ftrace_ops mg_probe = { .func = hit };
