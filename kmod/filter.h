/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _MAGNET_FILTER_H
#define _MAGNET_FILTER_H

#include <linux/rcupdate.h>
#include <linux/types.h>

struct mg_probe;

struct mg_filter {
	u32 id;
	u8 kind;		/* enum magnet_filter_kind */
	u8 action;		/* enum magnet_filter_action */
	u64 value;
	unsigned long *cpus;	/* MAGNET_FILTER_CPU: nr_cpu_ids bits */
};

/* Immutable once published; replaced whole under RCU (copy-update). */
struct mg_filter_set {
	struct rcu_head rcu;
	unsigned int n;
	u8 include_kinds;	/* bit k: some INCLUDE filter of kind k */
	struct mg_filter f[];
};

int mg_filter_add(struct mg_probe *p, const struct mg_filter *tmpl, u32 *id);
int mg_filter_del(struct mg_probe *p, u32 id);
void mg_filter_set_free(struct mg_filter_set *fs);
bool mg_filter_match(const struct mg_filter_set *fs, u64 abstract_id);

#endif /* _MAGNET_FILTER_H */
