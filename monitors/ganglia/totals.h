/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Ganglia module's client of magnetd: one TOTALS exchange
 * (docs/protocol.md) over TCP, parsed into a snapshot, and the rates
 * between two snapshots. No gmond or APR here, so it is unit-tested
 * natively (tests/unit/test_ganglia.c).
 */
#ifndef MAGNET_GANGLIA_TOTALS_H
#define MAGNET_GANGLIA_TOTALS_H

#include <stdbool.h>
#include <stddef.h>

struct mgg_counter {
	char *name;			/* probe name or job path, unescaped */
	double events, sock_bytes;	/* counters: exact below 2^53 */
	bool sock;
};

struct mgg_snapshot {
	double ts;			/* seconds, the node's CLOCK_REALTIME */
	double uptime;
	bool module_up;
	double records, bytes, kernel_lost, daemon_dropped, probes;
	struct mgg_counter *probes_v, *jobs_v;	/* jobs: busiest first */
	size_t nprobes, njobs;
};

/*
 * Parse a whole TOTALS reply (the OK line and its n lines). 0, or -EINVAL
 * with why (at least 128 bytes) saying what was wrong.
 */
int mgg_parse(const char *text, size_t len, struct mgg_snapshot *s, char *why);
void mgg_free(struct mgg_snapshot *s);

/*
 * Ask magnetd at host:port for TOTALS, within timeout_ms in all. 0, or a
 * negative errno with why saying what failed ("connect: Connection
 * refused").
 */
int mgg_fetch(const char *host, const char *port, int timeout_ms,
	      struct mgg_snapshot *s, char *why, size_t whylen);

const struct mgg_counter *mgg_find(const struct mgg_counter *v, size_t n,
				   const char *name);

/*
 * Per-second rate of a counter between prev and cur: NaN when there is
 * no earlier sample, when magnetd restarted between them (uptime went
 * down, or the counter did), or when no time passed.
 */
double mgg_rate(const struct mgg_snapshot *prev, const struct mgg_snapshot *cur,
		double before, double now);

/* "tcp_sendmsg" -> "tcp_sendmsg", "/slurm/job 7" -> "slurm_job_7". */
void mgg_metric_word(char *dst, size_t size, const char *name);

#endif /* MAGNET_GANGLIA_TOTALS_H */
