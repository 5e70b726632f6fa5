/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Ganglia module's client of magnetd: one TOTALS exchange
 * (docs/protocol.md) at a time, bounded in time and paced, parsed into a
 * snapshot; the rates between two snapshots; names made safe for gmond.
 * No gmond or APR here, so it is unit-tested natively
 * (tests/unit/test_ganglia.c) and fuzzed (tests/fuzz/fuzz_ganglia.c).
 */
#ifndef MAGNET_GANGLIA_TOTALS_H
#define MAGNET_GANGLIA_TOTALS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#define MGG_REPLY_MAX	(32 << 20)	/* 4096 jobs, their traffic, every probe */
#define MGG_LINES_MAX	(1 << 20)

struct mgg_counter {
	char *name;			/* probe name or job path, unescaped */
	char *slurm;			/* a Slurm job's: "42.0 uid=1000"; or NULL */
	double events, sock_bytes;	/* counters: exact below 2^53 */
	bool sock;
	/* A job's: its sockets' payload bytes, all protocols (its net lines). */
	double net_tx_bytes, net_rx_bytes;
};

/*
 * A Slurm job as a gmond string shows it: Slurm's step id ("42.0",
 * "42.batch", "42" for the job's own cgroup, "/slurmstepd" after it for
 * slurmstepd's), " node=NODE" when magnetd names one and it fits, and
 * " uid=UID" when known: 59 bytes at most without the node, within a
 * gmond string's 63 (docs/ganglia.md).
 */
#define MGG_SLURM_MAX	64

struct mgg_snapshot {
	double ts;			/* seconds, the node's CLOCK_REALTIME */
	double uptime;
	bool module_up;
	double records, bytes, kernel_lost, daemon_dropped, probes;
	struct mgg_counter *probes_v, *jobs_v;	/* jobs: busiest first */
	size_t nprobes, njobs;
};

/*
 * Parse a whole TOTALS reply (the OK line and its n lines): exactly the
 * len bytes of text, which need no NUL. 0, or -EINVAL (-ENOMEM) with why
 * (at least 128 bytes) saying what was wrong.
 */
int mgg_parse(const char *text, size_t len, struct mgg_snapshot *s, char *why);
void mgg_free(struct mgg_snapshot *s);

/*
 * A reply as it arrives: start from a zeroed mgg_rx, call mgg_rx_more
 * with the whole of what came so far (len bytes at buf, the same buf
 * grown). The reply's length once it is whole (an ERR line is one line),
 * 0 while more must come, -EINVAL with why (at least 128 bytes) when it
 * can never be a reply.
 */
struct mgg_rx {
	size_t scanned;		/* bytes looked at */
	bool head;		/* the first line seen: want is known */
	long lines, want;	/* lines after the first */
};

long mgg_rx_more(struct mgg_rx *rx, const char *buf, size_t len, char *why);

/*
 * magnetd as the module reaches it. A fetch (connect, send, receive) has
 * timeout_ms in all; after a failed one none is due for 1 s, after two in
 * a row 2 s, then 4, 8, 16 and 32 s.
 */
struct mgg_link {
	struct sockaddr_storage addr;
	socklen_t addrlen;
	char where[128];	/* "127.0.0.1:8650", for messages */
	int timeout_ms;
	long long next_ms;	/* CLOCK_MONOTONIC: no fetch before */
	unsigned int failures;	/* in a row */
};

/*
 * magnetd's Unix socket at path: magnetd knows gmond's user there
 * (SO_PEERCRED) and serves it what magnetd.conf grants it (access_totals:
 * every job). 0, or -EINVAL with why.
 */
int mgg_link_init_unix(struct mgg_link *l, const char *path, int timeout_ms,
		       char *why, size_t whylen);

/* CLOCK_MONOTONIC in ms: the deadlines of a fetch. */
long long mgg_now_ms(void);
/* Wait for events on fd until the deadline: 0, -ETIMEDOUT or -errno. */
int mgg_wait_fd(int fd, short events, long long deadline);

/* host:port resolved, once. 0, or -EINVAL with why. */
int mgg_link_init(struct mgg_link *l, const char *host, const char *port,
		  int timeout_ms, char *why, size_t whylen);

/*
 * Fetch TOTALS into s if a fetch is due: 1 when fetched, 0 when none was
 * due (nothing done), a negative errno with why ("connect to
 * 127.0.0.1:8650: Connection refused") when it failed.
 */
int mgg_link_fetch(struct mgg_link *l, struct mgg_snapshot *s, char *why,
		   size_t whylen);

const struct mgg_counter *mgg_find(const struct mgg_counter *v, size_t n,
				   const char *name);

/*
 * Per-second rate of a counter between prev and cur: NaN when there is
 * no earlier sample, when magnetd restarted between them (uptime went
 * down, or the counter did), or when no time passed.
 */
double mgg_rate(const struct mgg_snapshot *prev, const struct mgg_snapshot *cur,
		double before, double now);

/* A job's name for people: its Slurm job (c->slurm), or its path. */
const char *mgg_job_name(const struct mgg_counter *c);

/* "tcp_sendmsg" -> "tcp_sendmsg", "/slurm/job 7" -> "slurm_job_7". */
void mgg_metric_word(char *dst, size_t size, const char *name);

/*
 * A name as gmond may show it: printable ASCII but % < > & " ', every
 * other byte %XX (as magnetd writes it), within size - 1 bytes; a longer
 * one is "..." and its end, never a cut %XX. gmond writes control bytes
 * as XML 1.0 forbids and bytes >= 0x80 as garbage, and gmetad writes
 * < > & " ' back raw (docs/ganglia.md).
 */
void mgg_safe_name(char *dst, size_t size, const char *name);

#endif /* MAGNET_GANGLIA_TOTALS_H */
