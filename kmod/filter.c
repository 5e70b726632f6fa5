// SPDX-License-Identifier: GPL-2.0
/*
 * Filters, evaluated in the probe path before any ring space is reserved
 * (the paper's mechanism 2, in magnet_add()).
 *
 * A probe's filters form one immutable set. Control operations build a new
 * set and publish it with rcu_assign_pointer(); handlers, which run with
 * preemption disabled, read it with rcu_dereference_sched() and never wait.
 * A hit is recorded iff it matches no EXCLUDE filter and, for every kind
 * that has INCLUDE filters, at least one of them.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cgroup.h>
#include <linux/kprobes.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include "filter.h"
#include "probe.h"

void mg_filter_set_free(struct mg_filter_set *fs)
{
	unsigned int i;

	if (!fs)
		return;
	for (i = 0; i < fs->n; i++)
		bitmap_free(fs->f[i].cpus);
	kfree(fs);
}

static void mg_filter_set_free_rcu(struct rcu_head *rcu)
{
	mg_filter_set_free(container_of(rcu, struct mg_filter_set, rcu));
}

/* A copy of @old with room for @extra more filters; bitmaps duplicated. */
static struct mg_filter_set *mg_filter_set_copy(const struct mg_filter_set *old, unsigned int extra)
{
	unsigned int n = old ? old->n : 0, i;
	struct mg_filter_set *fs;

	fs = kzalloc(struct_size(fs, f, n + extra), GFP_KERNEL);
	if (!fs)
		return NULL;
	for (i = 0; i < n; i++) {
		fs->f[i] = old->f[i];
		if (old->f[i].cpus) {
			fs->f[i].cpus = bitmap_alloc(nr_cpu_ids, GFP_KERNEL);
			if (!fs->f[i].cpus) {
				fs->n = i;
				mg_filter_set_free(fs);
				return NULL;
			}
			bitmap_copy(fs->f[i].cpus, old->f[i].cpus, nr_cpu_ids);
		}
	}
	fs->n = n;
	return fs;
}

static void mg_filter_set_index(struct mg_filter_set *fs)
{
	unsigned int i;

	fs->include_kinds = 0;
	for (i = 0; i < fs->n; i++)
		if (fs->f[i].action == MAGNET_FILTER_INCLUDE)
			fs->include_kinds |= 1U << fs->f[i].kind;
}

static void mg_filter_publish(struct mg_probe *p, struct mg_filter_set *fs)
{
	struct mg_filter_set *old;

	if (fs && !fs->n) {
		mg_filter_set_free(fs);
		fs = NULL;	/* no filters: the fast path tests one pointer */
	} else if (fs) {
		mg_filter_set_index(fs);
	}
	old = rcu_replace_pointer(p->filters, fs, lockdep_is_held(&mg_probes_lock));
	if (old)
		call_rcu(&old->rcu, mg_filter_set_free_rcu);
}

int mg_filter_add(struct mg_probe *p, const struct mg_filter *tmpl, u32 *id)
{
	struct mg_filter_set *old = rcu_dereference_protected(p->filters,
							      lockdep_is_held(&mg_probes_lock));
	struct mg_filter_set *fs;
	struct mg_filter *f;

	if (old && old->n >= MAGNET_FILTERS_MAX)
		return -ENOSPC;
	fs = mg_filter_set_copy(old, 1);
	if (!fs)
		return -ENOMEM;
	f = &fs->f[fs->n];
	*f = *tmpl;
	f->cpus = NULL;
	if (tmpl->kind == MAGNET_FILTER_CPU) {
		f->cpus = bitmap_alloc(nr_cpu_ids, GFP_KERNEL);
		if (!f->cpus) {
			mg_filter_set_free(fs);
			return -ENOMEM;
		}
		bitmap_copy(f->cpus, tmpl->cpus, nr_cpu_ids);
	}
	f->id = ++p->next_filter_id;
	fs->n++;
	*id = f->id;
	mg_filter_publish(p, fs);
	return 0;
}

int mg_filter_del(struct mg_probe *p, u32 id)
{
	struct mg_filter_set *old = rcu_dereference_protected(p->filters,
							      lockdep_is_held(&mg_probes_lock));
	struct mg_filter_set *fs;
	unsigned int i, j;

	for (i = 0; old && i < old->n; i++)
		if (old->f[i].id == id)
			break;
	if (!old || i == old->n)
		return -ENOENT;
	fs = mg_filter_set_copy(old, 0);
	if (!fs)
		return -ENOMEM;
	bitmap_free(fs->f[i].cpus);
	for (j = i; j + 1 < fs->n; j++)
		fs->f[j] = fs->f[j + 1];
	fs->n--;
	mg_filter_publish(p, fs);
	return 0;
}

/* The job a task belongs to is its cgroup or one above it. */
static bool mg_in_cgroup(u64 id)
{
	struct cgroup *cgrp;

	for (cgrp = task_dfl_cgroup(current); cgrp; cgrp = cgroup_parent(cgrp))
		if (cgroup_id(cgrp) == id)
			return true;
	return false;
}

NOKPROBE_SYMBOL(mg_in_cgroup);

bool mg_filter_match(const struct mg_filter_set *fs, u64 abstract_id)
{
	unsigned int cpu = smp_processor_id(), i;
	u8 matched = 0;

	for (i = 0; i < fs->n; i++) {
		const struct mg_filter *f = &fs->f[i];
		bool m;

		switch (f->kind) {
		case MAGNET_FILTER_CPU:
			m = test_bit(cpu, f->cpus);
			break;
		case MAGNET_FILTER_TGID:
			m = current->tgid == f->value;
			break;
		case MAGNET_FILTER_ABSTRACT_ID:
			m = abstract_id == f->value;
			break;
		case MAGNET_FILTER_CGROUP:
			m = mg_in_cgroup(f->value);
			break;
		default:
			m = false;
		}
		if (!m)
			continue;
		if (f->action == MAGNET_FILTER_EXCLUDE)
			return false;
		matched |= 1U << f->kind;
	}
	return (matched & fs->include_kinds) == fs->include_kinds;
}

NOKPROBE_SYMBOL(mg_filter_match);
