/* SPDX-License-Identifier: GPL-2.0 */
/*
 * magnetd's totals: counters that only go up, kept since the daemon
 * started, over every record it reads. They feed the monitors (the
 * TOTALS command that the Ganglia module reads, Prometheus' /metrics,
 * Supermon's samples): a monitor samples them when it likes and computes
 * rates from two samples, so nothing is lost between its polls and
 * nothing depends on how often it polls.
 *
 * Node:   records and bytes read, what the kernel reported lost, what the
 *         server's queue refused (counted here, missed by its clients).
 * Probes: per event id, events, and for "sock" handler probes the bytes
 *         of their size argument (bytes sent or received).
 * Jobs:   per cgroup (the job: the record header's cgroup, that of the
 *         thread when it wrote the record), events, sock bytes, the
 *         events of those written in interrupt context (their job is
 *         the interrupted task's), and the records the fairness rule
 *         dropped (its JOB_LOST records; UAPI FAIRNESS). Records of
 *         cgroup 0 (no job known: format-2 streams; the shared job's
 *         losses) count towards "other".
 *
 * TASK records are not events: not counted anywhere here.
 *
 * Thread-safe: magnetd's collection thread counts each read as it hands
 * it on, so the totals count every record read whether or not the server
 * thread ever sees it; the server thread takes the views.
 *
 * Jobs are at most MG_TOTALS_JOBS; a record of a job met when the table is
 * full counts towards "other". For monitors that need bounded label sets
 * (Prometheus, Supermon) a job is *exported* on its own (its own label)
 * or summed into "other"; the choice is made once, when the job is first
 * met (exported while fewer than `exported_max` jobs are), so every
 * exported counter and "other" only ever go up. A job whose cgroup is
 * removed stops being exported (its series ends) and frees its place for
 * a job met later; its events stay counted in the node totals.
 */
#ifndef MAGNET_DAEMON_TOTALS_H
#define MAGNET_DAEMON_TOTALS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#define MG_TOTALS_JOBS		4096
#define MG_TOTALS_NAME_MAX	128	/* probe names are cut to this */
#define MG_TOTALS_PATH_MAX	256

struct magnet_record;
struct mg_totals;

struct mg_totals_node {
	char node[64];			/* hostname */
	__u64 now_ns;			/* CLOCK_REALTIME of the snapshot */
	__u64 uptime_ns;		/* since the daemon started */
	bool module_up;			/* the daemon reads the rings now */
	unsigned int cpus;
	__u64 records;			/* event records read */
	__u64 bytes;			/* bytes of those records */
	__u64 kernel_lost;		/* records the kernel's LOST and
					 * JOB_LOST records reported lost */
	__u64 daemon_dropped;		/* records counted that the server's
					 * queue refused */
	unsigned int probes;		/* probes loaded now (magnet/probes) */
	unsigned int jobs;		/* jobs in the table */
};

struct mg_totals_probe {
	unsigned int id;		/* event id */
	char type[16];			/* kprobe, kretprobe, custom */
	char name[MG_TOTALS_NAME_MAX];	/* the probe's name, as in PROBES */
	char symbol[MG_TOTALS_NAME_MAX];	/* its target ("" unknown) */
	bool loaded;			/* in magnet/probes now */
	bool sock;			/* saw records of the sock handler */
	__u64 events;
	__u64 sock_bytes;		/* sum of magnet_sock.size */
};

struct mg_totals_job {
	__u64 cgroup;			/* cgroup id (0: "other") */
	char path[MG_TOTALS_PATH_MAX];	/* under the cgroup root; "other" */
	bool exported;			/* its own series (else in "other") */
	__u64 events;
	__u64 sock_bytes;
	__u64 intr_events;		/* of those, MAGNET_REC_INTR records */
	__u64 lost_fair;		/* dropped by the fairness rule */
};

/* A copy of the counters at one moment, for a renderer. */
struct mg_totals_view {
	struct mg_totals_node node;
	size_t nprobes;
	struct mg_totals_probe *probes;	/* by id */
	size_t njobs;
	struct mg_totals_job *jobs;	/* busiest first */
	struct mg_totals_job other;	/* the jobs not exported, summed, and
					 * records of no known job */
};

int mg_totals_create(unsigned int exported_max, struct mg_totals **out);
void mg_totals_free(struct mg_totals *t);

/*
 * Count one record: an event under its header's cgroup; LOST records
 * towards kernel_lost; JOB_LOST records towards kernel_lost and their
 * job's lost_fair; TASK records not at all.
 */
void mg_totals_add(struct mg_totals *t, const struct magnet_record *r);

/* Count a read's records: whole and checked (the collection thread's). */
void mg_totals_add_read(struct mg_totals *t, const void *data, size_t len);

/* Records counted that the server's queue refused (its clients missed them). */
void mg_totals_dropped(struct mg_totals *t, __u64 records);

/* A cgroup is gone: it stops being exported (see above). */
void mg_totals_job_gone(struct mg_totals *t, __u64 cgroup);

/* Fill a view (caller frees with mg_totals_view_free). 0 or -ENOMEM. */
int mg_totals_view(struct mg_totals *t, struct mg_totals_view *v);
void mg_totals_view_free(struct mg_totals_view *v);

#endif /* MAGNET_DAEMON_TOTALS_H */
