// SPDX-License-Identifier: GPL-2.0
/*
 * magnet: Monitoring Apparatus for General kerNel-Event Tracing.
 *
 *   insmod magnet.ko [buf_size=BYTES] [mode=discard|overwrite]
 *                    [clock=mono|tsc] [probes=SPEC[,SPEC...]]
 *
 * buf_size and mode may be changed later through
 * /sys/module/magnet/parameters/ while no reader is attached (EBUSY
 * otherwise); the buffered records are dropped, the counters kept.
 * A probes= entry that cannot be parsed or registered fails the load, and
 * the kernel log names the entry and why: a half-configured sensor is
 * worse than none.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>
#include "alarm.h"
#include "btf.h"
#include "buffer.h"
#include "fs.h"
#include "netlink.h"
#include "probe.h"

static unsigned long buf_size = 1UL << 20;
static enum mg_ring_mode buf_mode = MG_RING_DISCARD;
static char *clock = "mono";
static char *probes;
static DEFINE_MUTEX(mg_param_lock);
static bool mg_live;

static int mg_param_set_size(const char *val, const struct kernel_param *kp)
{
	unsigned long size;
	char *end;
	int ret;

	size = memparse(val, &end);	/* 1048576, 1024K, 1M, ... */
	if (end == val || (*end && !(*end == '\n' && !end[1]))) {
		pr_err("buf_size=%s: expected a size like 1048576, 1024K or 1M\n", val);
		return -EINVAL;
	}
	if (size < MG_RING_MIN_SIZE || size > MG_RING_MAX_SIZE || !is_power_of_2(size)) {
		pr_err("buf_size=%lu: must be a power of two from %lu to %lu\n",
		       size, MG_RING_MIN_SIZE, MG_RING_MAX_SIZE);
		return -EINVAL;
	}
	mutex_lock(&mg_param_lock);
	ret = mg_live ? mg_buffers_resize(size, -1) : 0;
	if (!ret)
		buf_size = size;
	else if (ret == -EBUSY)
		pr_warn("buf_size: a reader is attached; close it first\n");
	mutex_unlock(&mg_param_lock);
	return ret;
}

static int mg_param_set_mode(const char *val, const struct kernel_param *kp)
{
	enum mg_ring_mode mode;
	int ret;

	if (sysfs_streq(val, "discard")) {
		mode = MG_RING_DISCARD;
	} else if (sysfs_streq(val, "overwrite")) {
		mode = MG_RING_OVERWRITE;
	} else {
		pr_err("mode=%s: expected discard or overwrite\n", val);
		return -EINVAL;
	}
	mutex_lock(&mg_param_lock);
	ret = mg_live ? mg_buffers_resize(0, mode) : 0;
	if (!ret)
		buf_mode = mode;
	else if (ret == -EBUSY)
		pr_warn("mode: a reader is attached; close it first\n");
	mutex_unlock(&mg_param_lock);
	return ret;
}

static int mg_param_get_mode(char *buffer, const struct kernel_param *kp)
{
	enum mg_ring_mode mode = mg_live ? mg_buffers_mode() : buf_mode;

	return sysfs_emit(buffer, "%s\n", mode == MG_RING_OVERWRITE ? "overwrite" : "discard");
}

/* Netlink may have resized since load: report what is in force. */
static int mg_param_get_size(char *buffer, const struct kernel_param *kp)
{
	return sysfs_emit(buffer, "%lu\n", mg_live ? mg_buffers_size() : buf_size);
}

static const struct kernel_param_ops mg_size_ops = {
	.set = mg_param_set_size,
	.get = mg_param_get_size,
};

static const struct kernel_param_ops mg_mode_ops = {
	.set = mg_param_set_mode,
	.get = mg_param_get_mode,
};

module_param_cb(buf_size, &mg_size_ops, &buf_size, 0644);
MODULE_PARM_DESC(buf_size, "bytes per CPU ring, a power of two, K/M/G suffixes (default 1M)");
module_param_cb(mode, &mg_mode_ops, NULL, 0644);
MODULE_PARM_DESC(mode, "full ring: discard new records (default) or overwrite oldest");
module_param(clock, charp, 0444);
MODULE_PARM_DESC(clock, "record timestamps: mono (default, ns) or tsc (cycles)");
module_param(probes, charp, 0400);	/* what is probed: root only */
MODULE_PARM_DESC(probes, "probes to insert at load, comma-separated: kprobe:SYM[+OFF][:NARGS[:LEN@ARG]], kretprobe:SYM[:NARGS[:LEN@ARG]], fentry:SYM[:NARGS[:LEN@ARG]]");

/*
 * Each step has one init and one exit; what user space can reach (the
 * netlink family, then the debugfs files) comes last, so a load that fails
 * never had a user.
 */
static int __init mg_init(void)
{
	int ret;

	if (!strcmp(clock, "mono")) {
		mg_clock = MG_CLOCK_MONO;
	} else if (!strcmp(clock, "tsc")) {
		mg_clock = MG_CLOCK_TSC;
	} else {
		pr_err("clock=%s: expected mono or tsc\n", clock);
		return -EINVAL;
	}
	ret = mg_buffers_init(buf_size, buf_mode);
	if (ret)
		goto err_buffers;
	ret = mg_alarm_init();
	if (ret)
		goto err_alarm;
	ret = mg_fs_init();
	if (ret)
		goto err_fs;
	if (probes && *probes) {
		ret = mg_probes_add_list(probes);
		if (ret)
			goto err_probes;
	}
	ret = mg_netlink_init();
	if (ret) {
		pr_err("cannot register the generic netlink family (%d)\n", ret);
		goto err_netlink;
	}
	mg_fs_publish();
	mutex_lock(&mg_param_lock);
	mg_live = true;
	mutex_unlock(&mg_param_lock);
	pr_info("%u CPUs, %lu-byte %s rings, clock %s\n", num_possible_cpus(), buf_size,
		buf_mode == MG_RING_OVERWRITE ? "overwrite" : "discard", clock);
	return 0;

err_netlink:
	mg_probes_exit();
err_probes:
	mg_fs_exit();
err_fs:
	mg_alarm_exit();
err_alarm:
	mg_buffers_exit();
err_buffers:
	return ret;
}

static void __exit mg_exit(void)
{
	mutex_lock(&mg_param_lock);
	mg_live = false;
	mutex_unlock(&mg_param_lock);
	mg_netlink_exit();	/* no control operation after this */
	mg_probes_exit();	/* no writer runs after this */
	mg_btf_exit();
	mg_fs_exit();
	mg_alarm_exit();
	mg_buffers_exit();
}

module_init(mg_init);
module_exit(mg_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("magnet: dynamic kernel-event sensor with per-CPU rings in debugfs");
MODULE_AUTHOR("magnet developers");
MODULE_VERSION(MAGNET_RELEASE);
