// SPDX-License-Identifier: GPL-2.0
/* 5.15: kvrealloc(p, oldsize, newsize, gfp). */
#include <linux/mm.h>
#include <linux/slab.h>
void *mg_probe(void *p) { return kvrealloc(p, 8, 16, GFP_KERNEL); }
