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
 *
 * Two more files let the tests reach paths no well-behaved caller takes:
 *
 *	echo LEN > .../log_len		one magnet_log() claiming LEN bytes
 *					(the write fails with its error: E2BIG
 *					past what a record holds)
 *	echo 1 > .../bogus_sock		sk_stop_timer() on addresses that are
 *					no socket (it touches the socket only
 *					if the timer was pending, and it is
 *					not): food for a sock-handler probe
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/timer.h>
#include <linux/uaccess.h>
#include <net/sock.h>
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

static ssize_t mg_sample_log_len(struct file *file, const char __user *ubuf, size_t len,
				 loff_t *ppos)
{
	static const char data[64];
	unsigned int claimed;
	int ret;

	ret = kstrtouint_from_user(ubuf, len, 0, &claimed);
	if (ret)
		return ret;
	/* Only up to sizeof(data) is valid: magnet must refuse more first. */
	ret = magnet_log(mg_sample_event, 0, data, claimed);
	return ret && ret != -ENODATA ? ret : len;
}

static const struct file_operations mg_sample_log_len_fops = {
	.owner = THIS_MODULE,
	.write = mg_sample_log_len,
	.llseek = noop_llseek,
};

/* User, non-canonical and NULL-page addresses: never a struct sock. */
static const unsigned long mg_bogus_socks[] = { 0x1000, 0xdead000000000000UL, 0x7ffff000 };

static ssize_t mg_sample_bogus_sock(struct file *file, const char __user *ubuf, size_t len,
				    loff_t *ppos)
{
	struct timer_list idle;
	unsigned int i;

	timer_setup_on_stack(&idle, NULL, 0);
	for (i = 0; i < ARRAY_SIZE(mg_bogus_socks); i++)
		sk_stop_timer((struct sock *)mg_bogus_socks[i], &idle);
	destroy_timer_on_stack(&idle);
	return len;
}

static const struct file_operations mg_sample_bogus_sock_fops = {
	.owner = THIS_MODULE,
	.write = mg_sample_bogus_sock,
	.llseek = noop_llseek,
};

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
	debugfs_create_file("log_len", 0200, mg_sample_dir, NULL, &mg_sample_log_len_fops);
	debugfs_create_file("bogus_sock", 0200, mg_sample_dir, NULL, &mg_sample_bogus_sock_fops);
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
