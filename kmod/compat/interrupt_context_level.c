// SPDX-License-Identifier: GPL-2.0
/* 6.0: the interrupt level a probe runs at (nmi, irq, softirq, task). */
#include <linux/preempt.h>
unsigned char mg_probe(void) { return interrupt_context_level(); }
