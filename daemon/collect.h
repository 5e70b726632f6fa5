/* SPDX-License-Identifier: GPL-2.0 */
/*
 * magnetd's collection thread: MG_COLLECT_READS AIO reads outstanding on
 * every cpuN file of the sensor directory, completions signalled on an
 * eventfd, so the thread sleeps in poll() while nothing happens (the
 * kernel completes a read at the byte watermark, or at the latency timeout
 * once a record is there). The module serves a file's reads in the order
 * they were submitted and they complete in it (UAPI header, AIO), so the
 * next ones drain the ring while the thread hands one on. Each completed
 * read is handed, whole, to the sink callback on this thread, a ring's in
 * the order of its records: the sink must never block (magnetd's queues to
 * the server and the trace writer refuse and count instead).
 *
 * With cfg.mapped (the default) discard-mode rings are read in place
 * instead (UAPI header, MAPPED): each is mapped read-only, the thread
 * polls the rings and the control eventfd, and hands the records on from
 * the mapping in pieces of at most read_buffer bytes, as the reads would
 * have, giving them back to the ring once the sink has them: no AIO, no
 * kworker copy. Overwrite-mode rings cannot be mapped: AIO reads them.
 *
 * The module's lifetime. An open cpuN file pins the module, so rmmod fails
 * (EBUSY) while the rings are held. mg_collect_release() lets go of them:
 * the thread cancels its reads, delivers what they held, closes the files
 * and waits for the module to go away and come back (or, if it stays, for
 * MG_COLLECT_RELEASE_NS), then reopens the rings and logs it; a module
 * that came back has its rings grown first (rings.h). A read that
 * ends (EOF) or fails the same way is treated as the module going away.
 */
#ifndef MAGNET_DAEMON_COLLECT_H
#define MAGNET_DAEMON_COLLECT_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/magnet.h>

#include "sensor.h"

/* How long released rings wait for an rmmod before being reopened. */
#define MG_COLLECT_RELEASE_NS	(30 * 1000000000ULL)
/* While the module is away, how often to look for it. */
#define MG_COLLECT_WAIT_MS	200
/* AIO reads in flight per ring, each of read_buffer bytes. */
#define MG_COLLECT_READS	4

struct mg_collect;

struct mg_collect_cfg {
	const char *dir;		/* the sensor directory */
	size_t read_buffer;		/* bytes per read, per CPU */
	size_t watermark;		/* byte watermark (clamped to half a ring) */
	unsigned int latency_ms;	/* read timeout, 0: none */
	bool mapped;			/* read discard-mode rings in place */
	size_t ring_size, ring_memory;	/* grow a module's rings (rings.h) when it comes back */
};

/* Per CPU, since the daemon started (reads of every load of the module). */
struct mg_collect_cpu {
	__u64 records;			/* event records (LOST, TASK, JOB_LOST excluded) */
	__u64 bytes;
	struct magnet_lost lost;	/* sums of the LOST records read */
	__u64 lost_fair;		/* of the JOB_LOST records read */
};

/*
 * Called on the collection thread for each completed read: len bytes of
 * whole, valid records of cpu, records of them events, tasks of them TASK
 * records. Must not block. The read counts in mg_collect_cpu_stats once
 * the sink returns.
 */
typedef void (*mg_collect_sink)(void *arg, __u32 cpu, const void *data,
				size_t len, __u64 records, __u64 tasks);
typedef void (*mg_collect_log)(void *arg, int prio, const char *msg);

/*
 * Open the rings (synchronously, so the caller can report what is
 * missing) and start the thread. 0; or -errno with err filled ("magnet
 * module not loaded: /sys/kernel/debug/magnet/version not found", "run as
 * root", "cpu0 already has a reader", ...).
 */
int mg_collect_start(const struct mg_collect_cfg *cfg, mg_collect_sink sink,
		     void *sink_arg, mg_collect_log log, void *log_arg,
		     struct mg_collect **out, char *err, size_t errlen);

/* Let go of the rings so the module can be unloaded (see above). */
void mg_collect_release(struct mg_collect *c);

/*
 * Stop: cancel the reads, deliver what they and the rings still hold
 * (a last non-blocking drain), close, join. Idempotent.
 */
void mg_collect_stop(struct mg_collect *c);
void mg_collect_free(struct mg_collect *c);

/* Any thread. */
bool mg_collect_up(const struct mg_collect *c);
unsigned int mg_collect_reloads(const struct mg_collect *c);
/* Highest CPU number + 1 (fixed at start). */
unsigned int mg_collect_ncpus(const struct mg_collect *c);
/* The version of the module as last opened. */
void mg_collect_version(struct mg_collect *c, struct mg_sensor_version *v);
/*
 * Bytes per CPU of the rings as last opened (the smallest one), and how
 * often this magnetd grew them (rings.h).
 */
void mg_collect_rings(const struct mg_collect *c, unsigned long *size, unsigned int *grown);
/* out: mg_collect_ncpus() entries, indexed by CPU. */
void mg_collect_cpu_stats(struct mg_collect *c, struct mg_collect_cpu *out);

#endif /* MAGNET_DAEMON_COLLECT_H */
