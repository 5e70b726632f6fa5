/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The sensor directory (/sys/kernel/debug/magnet): what every reader of
 * the rings needs from it, and where the rings are opened. Shared by
 * magnet-read and magnetd.
 *
 * Where a ring is opened, the one rule (mg_sensor_open_cpu): DIR/cpuN,
 * and /dev/magnet/cpuN (the same ring, a character device) when debugfs
 * refuses DIR/cpuN (EPERM: kernel lockdown, which lets debugfs open no
 * file with an ioctl or mmap) or DIR/cpuN does not exist (debugfs not
 * mounted). The control files (version, probes, buffers, stats) are only
 * in DIR: read-only, lockdown lets debugfs open them.
 */
#ifndef MAGNET_LIB_SENSOR_H
#define MAGNET_LIB_SENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>
#include <linux/types.h>

#include "trace.h"

#define MG_SENSOR_DIR	"/sys/kernel/debug/magnet"
#define MG_SENSOR_DEV_DIR	"/dev/magnet"

/* magnet/version: "magnet R\nformat N\nclock C\ncpus N\ntsc_khz N\n". */
struct mg_sensor_version {
	char release[32];
	unsigned int format;	/* MAGNET_FORMAT_VERSION of the records */
	char clock[16];		/* "mono" or "tsc" */
	unsigned int cpus;	/* possible CPUs; 0 if absent */
	unsigned int tsc_khz;	/* 0 if absent or unknown */
};

/*
 * A whole small text file of dir, NUL-terminated (malloc'd), its length
 * in *len when len is not NULL. NULL with errno set.
 */
char *mg_sensor_read(const char *dir, const char *name, size_t *len);

/*
 * Parse dir/version; lines it does not know are skipped, a missing
 * clock reads as "mono". 0, or -errno of the read (-ENOENT: no module).
 */
int mg_sensor_version(const char *dir, struct mg_sensor_version *v);

/*
 * The cpuN files of dir (of MG_SENSOR_DEV_DIR when dir does not exist), N
 * ascending (need not be contiguous): a malloc'd array of *n numbers. 0,
 * -errno of opendir (dir's), or -ENOENT for none.
 */
int mg_sensor_cpus(const char *dir, unsigned int **cpus, unsigned int *n);

/*
 * Open CPU cpu's ring by the rule above, with open(2)'s flags. The fd,
 * and in path the path it opened; or -errno (the device's when it exists,
 * else dir/cpuN's), path naming the file that failed, and err saying why,
 * for each file tried ("DIR/cpuN: Operation not permitted (kernel
 * lockdown?); /dev/magnet/cpuN: No such file or directory").
 */
int mg_sensor_open_cpu(const char *dir, unsigned int cpu, int flags, char *path,
		       size_t size, char *err, size_t errlen);

/*
 * Whether magnet is loaded though its version file was not found: its
 * devices exist, so debugfs is not mounted (the control files are only
 * there). MG_SENSOR_NO_DEBUGFS says so.
 */
bool mg_sensor_loaded(void);
#define MG_SENSOR_NO_DEBUGFS "debugfs is not mounted: magnet is loaded (" MG_SENSOR_DEV_DIR \
	" exists), but its control files are only in debugfs (mount -t debugfs none /sys/kernel/debug)"

/* Ring size of cpu in the text of dir/buffers, or 0. */
unsigned long mg_sensor_ring_size(const char *buffers, unsigned int cpu);

__u64 mg_now_ns(clockid_t id);

/* Now on the trace clock the version names: TSC cycles or mono ns. */
__u64 mg_trace_clock_now(const char *clock);

/*
 * A trace header for the sensor as it is now: clock, host, release, the
 * trace clock paired with CLOCK_REALTIME. probes (dir/probes text, or
 * NULL) is referenced, not copied.
 */
void mg_sensor_trace_info(struct mg_trace_info *info,
			  const struct mg_sensor_version *v, __u32 ncpus,
			  const char *probes, size_t probes_len);

#endif /* MAGNET_LIB_SENSOR_H */
