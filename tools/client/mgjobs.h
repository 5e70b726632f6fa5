/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mgjobs: jobs' traffic across nodes, from what each node's magnetd says
 * (docs/magnet-jobs.md): its TOTALS (each job's traffic since magnetd
 * started, per protocol and per peer host) and one AGG net report (the
 * flows of an interval, each with both its ends). Pure functions over
 * parsed replies, no I/O: magnet-jobs reads the nodes, the unit tests
 * feed made-up replies.
 *
 * Jobs are grouped across nodes by name: a Slurm job's series (any of its
 * steps) as "slurm=<id>", any other job by its cgroup path. A peer host
 * is a queried node when that node's flows have it as their local
 * address (a loopback address is the reporting node's own); a flow's peer
 * job is the job of the flow that node reports with the same protocol
 * and the two ends swapped.
 */
#ifndef MAGNET_CLIENT_MGJOBS_H
#define MAGNET_CLIENT_MGJOBS_H

#include <stdbool.h>
#include <stddef.h>

#include "mgclient.h"

#define MGJ_KEY_MAX		280	/* a job's name: a path, or slurm=N */
#define MGJ_ADDR_MAX		64	/* an address, no port */
#define MGJ_PEER_JOBS_MAX	8	/* peer jobs listed per peer host */

/* One node as read. */
struct mgj_node {
	const char *name;			/* TOTALS' node=, or the server */
	const struct mgc_totals *totals;	/* NULL: not read */
	const struct mgc_net *flows;		/* NULL: none read */
};

/* A job of another node that a flow reaches. */
struct mgj_peer_job {
	size_t node;
	char job[MGJ_KEY_MAX];
};

/* A job's traffic with one peer host on one node (TOTALS' peer lines). */
struct mgj_peer {
	char addr[MGJ_ADDR_MAX];	/* "10.0.0.2", "fe80::1", "other" */
	int node;			/* the queried node it is, or -1 */
	struct mgc_counts c;
	size_t njobs, more;		/* peer jobs found, and those not listed */
	struct mgj_peer_job jobs[MGJ_PEER_JOBS_MAX];
};

struct mgj_proto {
	char proto[16];
	struct mgc_counts c;
};

/* A job on one node: its series there summed (a Slurm job's steps). */
struct mgj_row {
	size_t node;
	struct mgc_counts c;		/* all protocols */
	size_t nprotos, npeers;
	struct mgj_proto protos[8];
	struct mgj_peer *peers;		/* most bytes first, "other" last */
};

/* A job across the nodes. */
struct mgj_group {
	char key[MGJ_KEY_MAX];		/* "slurm=42", "/system.slice/x.service" */
	bool slurm;
	__u32 slurm_job;
	struct mgc_counts c;		/* all nodes */
	size_t nrows;
	struct mgj_row *rows;		/* in the nodes' order */
};

/* A job's name across nodes into buf: "slurm=<id>", or its path. */
const char *mgj_job_key(const struct mgc_totals_job *j, char *buf, size_t size);

/* "10.0.0.2:5001" -> "10.0.0.2", "[fe80::1]:80" -> "fe80::1", into buf. */
const char *mgj_addr_of(const char *end, char *buf, size_t size);

/* The queried node whose address addr is (seen from node self), or -1. */
int mgj_addr_node(const struct mgj_node *nodes, size_t n, size_t self,
		  const char *addr);

/*
 * The flow of another node (or of self, for a loopback one) that is f's
 * other end: the same protocol, ends swapped. Its node's index, *other
 * set; -1 when no node reports one (or f has no local end).
 */
int mgj_match(const struct mgj_node *nodes, size_t n, size_t self,
	      const struct mgc_net_peer *f, const struct mgc_net_peer **other);

/*
 * The jobs of all nodes, grouped, the most bytes first; jobs without
 * traffic, and "other", left out. 0 or -ENOMEM. mgj_free frees them.
 */
int mgj_build(const struct mgj_node *nodes, size_t n,
	      struct mgj_group **groups, size_t *ngroups);
void mgj_free(struct mgj_group *g, size_t n);

#endif /* MAGNET_CLIENT_MGJOBS_H */
