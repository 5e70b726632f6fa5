// SPDX-License-Identifier: GPL-2.0
/* 6.12: struct ftrace_regs is opaque; arch_ftrace_regs() opens it. */
#include <linux/ftrace.h>
struct pt_regs *mg_probe(struct ftrace_regs *fregs)
{
	return &arch_ftrace_regs(fregs)->regs;
}
