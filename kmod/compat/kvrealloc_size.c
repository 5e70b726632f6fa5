// SPDX-License-Identifier: GPL-2.0
/* 6.12: kvrealloc(p, size, gfp): the old size is known to the allocator. */
#include <linux/mm.h>
#include <linux/slab.h>
void *mg_probe(void *p) { return kvrealloc(p, 16, GFP_KERNEL); }
