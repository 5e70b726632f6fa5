/* SPDX-License-Identifier: GPL-2.0 */
/*
 * magnet/stats: a header line, then per CPU
 * "cpu\twritten\tbytes\tlost_full\tlost_too_big\tlost_nesting\toverwritten".
 */
#ifndef MAGNET_LIB_STATS_H
#define MAGNET_LIB_STATS_H

#include <stddef.h>
#include <linux/types.h>

struct mg_kstats {
	__u32 cpu;
	__u64 written;
	__u64 bytes;
	__u64 lost_full;
	__u64 lost_too_big;
	__u64 lost_nesting;
	__u64 overwritten;
};

/*
 * Parse the text (need not be NUL-terminated) into *out, a malloc'd array
 * of *n entries in file order. Lines not starting with a digit (the header)
 * are skipped. 0, -EINVAL for a CPU line that does not parse, or -ENOMEM.
 */
int mg_stats_parse(const char *text, size_t len, struct mg_kstats **out,
		   size_t *n);

/* Entry for cpu, or NULL. */
const struct mg_kstats *mg_stats_find(const struct mg_kstats *v, size_t n,
				      __u32 cpu);

#endif /* MAGNET_LIB_STATS_H */
