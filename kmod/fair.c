// SPDX-License-Identifier: GPL-2.0
/*
 * Per-job fairness (UAPI: FAIRNESS): the threshold (module parameter
 * fair=, BUFFER_SET), and the tables as magnet/jobs and JOBS_GET show
 * them. The rule itself runs in the record writer: fair.h.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpumask.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/seq_file.h>
#include <linux/string.h>
#include "buffer.h"
#include "fair.h"

unsigned int mg_fair_fill = MAGNET_FAIR_FILL_DEFAULT;

unsigned int mg_fair_get_fill(void)
{
	return READ_ONCE(mg_fair_fill);
}

/* Writers read it once a record: a new value applies from the next one. */
void mg_fair_set_fill(unsigned int fill)
{
	WRITE_ONCE(mg_fair_fill, fill);
}

static int mg_param_set_fair(const char *val, const struct kernel_param *kp)
{
	unsigned int fill;

	if (kstrtouint(val, 10, &fill) || fill > MAGNET_FAIR_FILL_MAX) {
		pr_err("fair=%.*s: expected a percentage of the ring from 0 (off) to %u\n",
		       (int)strcspn(val, "\n"), val, MAGNET_FAIR_FILL_MAX);
		return -EINVAL;
	}
	mg_fair_set_fill(fill);
	return 0;
}

static int mg_param_get_fair(char *buffer, const struct kernel_param *kp)
{
	return sysfs_emit(buffer, "%u\n", mg_fair_get_fill());
}

static const struct kernel_param_ops mg_fair_ops = {
	.set = mg_param_set_fair,
	.get = mg_param_get_fair,
};

module_param_cb(fair, &mg_fair_ops, NULL, 0644);
MODULE_PARM_DESC(fair, "per-job fairness: ring fill in percent above which a job over its share loses its records (0: off; default "
		 __stringify(MAGNET_FAIR_FILL_DEFAULT) ")");

static u64 mg_rd(const local_t *l)
{
	return (unsigned long)local_read(l);
}

/*
 * Entry @idx of a CPU's table: 0 the shared job, 1..MG_FAIR_SLOTS the
 * slots, then the orphan (a job whose slot went, losses still to report).
 * -ENOENT for an empty one. A racy snapshot: writers run meanwhile.
 */
int mg_fair_entry(const struct mg_fair_cpu *fc, unsigned int idx, struct mg_fair_stat *st)
{
	const struct mg_fair_job *j;

	memset(st, 0, sizeof(*st));
	if (idx == MG_FAIR_ENTRIES - 1) {
		st->pending = mg_rd(&fc->orphan);
		st->cgroup = READ_ONCE(fc->orphan_id);
		return st->pending ? 0 : -ENOENT;
	}
	j = idx ? &fc->jobs[idx - 1] : &fc->shared;
	st->cgroup = READ_ONCE(j->id);
	st->written = mg_rd(&j->written);
	st->lost_fair = mg_rd(&j->lost_fair);
	st->pending = mg_rd(&j->pending);
	st->lost_ring = mg_rd(&j->lost_ring);
	if (idx)
		return st->cgroup ? 0 : -ENOENT;
	return st->written || st->lost_fair || st->lost_ring ? 0 : -ENOENT;
}

unsigned long mg_fair_lost(const struct mg_fair_cpu *fc)
{
	return local_read(&fc->lost_fair);
}

static int mg_jobs_show(struct seq_file *m, void *v)
{
	struct mg_fair_stat st;
	unsigned int cpu, i;

	seq_puts(m, "cpu\tcgroup\twritten\tlost_fair\tpending\tlost_ring\n");
	for_each_possible_cpu(cpu) {
		for (i = 0; i < MG_FAIR_ENTRIES; i++) {
			if (mg_fair_entry(&mg_bufs[cpu]->fair, i, &st))
				continue;
			seq_printf(m, "%u\t%llu\t%llu\t%llu\t%llu\t%llu\n", cpu, st.cgroup,
				   st.written, st.lost_fair, st.pending, st.lost_ring);
		}
	}
	return 0;
}

static int mg_jobs_open(struct inode *inode, struct file *file)
{
	return single_open(file, mg_jobs_show, NULL);
}

/* fs.c creates magnet/jobs with the other control files. */
const struct file_operations mg_jobs_fops = {
	.owner = THIS_MODULE,
	.open = mg_jobs_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
};
