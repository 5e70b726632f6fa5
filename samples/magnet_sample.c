// SPDX-License-Identifier: GPL-2.0
/*
 * magnet_sample: a custom module joining magnet through its kernel API
 * (include/magnet/kapi.h), as the paper's §3.5 describes. It registers one
 * event, "magnet_sample", and logs it on demand:
 *
 *	echo N > /sys/kernel/debug/magnet_sample/fire
 *
 * logs N records with abstract ids 1..N and the payload "sample N" (the
 * sequence number in text), and counts in /sys/kernel/debug/magnet_sample/
 * stats how many magnet_log() calls were recorded, filtered out or lost.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/uaccess.h>
#include <magnet/kapi.h>

static struct magnet_event *mg_sample_event;
static struct dentry *mg_sample_dir;
static unsigned long mg_sample_seq, mg_sample_recorded, mg_sample_dropped, mg_sample_lost;
static DEFINE_MUTEX(mg_sample_lock);

static ssize_t mg_sample_fire(struct file *file, const char __user *ubuf, size_t len,
			      loff_t *ppos)
{
	unsigned long n, i;
	char text[32];
	int ret;

	ret = kstrtoul_from_user(ubuf, len, 0, &n);
	if (ret)
		return ret;
	if (n > 10000000)
		return -ERANGE;
	mutex_lock(&mg_sample_lock);
	for (i = 0; i < n; i++) {
		int tlen = scnprintf(text, sizeof(text), "sample %lu", ++mg_sample_seq);

		ret = magnet_log(mg_sample_event, mg_sample_seq, text, tlen);
		if (!ret)
			mg_sample_recorded++;
		else if (ret == -ENODATA)
			mg_sample_dropped++;
		else
			mg_sample_lost++;
		if (!(i & 1023))
			cond_resched();
	}
	mutex_unlock(&mg_sample_lock);
	return len;
}

static const struct file_operations mg_sample_fire_fops = {
	.owner = THIS_MODULE,
	.write = mg_sample_fire,
	.llseek = noop_llseek,
};

static int mg_sample_stats_show(struct seq_file *m, void *v)
{
	mutex_lock(&mg_sample_lock);
	seq_printf(m, "event %u\nlogged %lu\nrecorded %lu\nfiltered_or_sampled %lu\nlost %lu\n",
		   magnet_event_id(mg_sample_event), mg_sample_seq, mg_sample_recorded,
		   mg_sample_dropped, mg_sample_lost);
	mutex_unlock(&mg_sample_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(mg_sample_stats);

static int __init mg_sample_init(void)
{
	mg_sample_event = magnet_event_register("magnet_sample");
	if (IS_ERR(mg_sample_event))
		return PTR_ERR(mg_sample_event);
	mg_sample_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_file("fire", 0200, mg_sample_dir, NULL, &mg_sample_fire_fops);
	debugfs_create_file("stats", 0400, mg_sample_dir, NULL, &mg_sample_stats_fops);
	return 0;
}

static void __exit mg_sample_exit(void)
{
	debugfs_remove(mg_sample_dir);
	magnet_event_unregister(mg_sample_event);
}

module_init(mg_sample_init);
module_exit(mg_sample_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("magnet sample: a custom module logging through magnet's kernel API");
