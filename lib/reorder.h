/* SPDX-License-Identifier: GPL-2.0 */
/*
 * TCP packets put back in the order they were written. Each CPU's ring
 * is in time order, but a reader gets the rings one after another: a
 * flow's segments sent from two CPUs (the task's, and the softirq's that
 * an ACK clocked out) come interleaved by ring, not by time. The
 * sequence tracker (seqtrack.h) must see a flow's segments in the order
 * they were sent or received, or an earlier segment read late would look
 * like one sent again. A reorder buffer holds each packet until it has
 * waited `settle` ns since it was read (long enough for every ring to be
 * read once more: a few read latencies) and gives them out lowest
 * timestamp first; ties keep the order they came in.
 *
 * Fixed capacity, allocated once: a packet pushed into a full buffer
 * first gives out the lowest one early (counted). Not thread-safe.
 */
#ifndef MAGNET_LIB_REORDER_H
#define MAGNET_LIB_REORDER_H

#include <stdbool.h>
#include <linux/types.h>

#include "flow.h"

struct mg_reorder_item {
	__u64 ts;		/* the record's timestamp */
	__u64 read_ns;		/* when it was read (CLOCK_MONOTONIC) */
	__u64 sk_cgroup;	/* its socket's cgroup */
	__u64 order;		/* private: ties in push order */
	struct mg_flow f;
};

struct mg_reorder;

/* capacity: items held at most (1 to 1 << 24). 0, -EINVAL or -ENOMEM. */
int mg_reorder_create(unsigned int capacity, struct mg_reorder **out);
void mg_reorder_free(struct mg_reorder *r);

/*
 * Hold it (copied). When the buffer was full, the lowest item goes out
 * first, into *early, and true is returned: the caller counts it now.
 */
bool mg_reorder_push(struct mg_reorder *r, const struct mg_reorder_item *it,
		     struct mg_reorder_item *early);

/*
 * The lowest item, if it was read at least settle ns before now (every
 * item if settle is 0), into *out. False when none is due.
 */
bool mg_reorder_pop(struct mg_reorder *r, __u64 now, __u64 settle,
		    struct mg_reorder_item *out);

unsigned int mg_reorder_len(const struct mg_reorder *r);
/* Items given out early since creation (the buffer was full). */
__u64 mg_reorder_early(const struct mg_reorder *r);
/*
 * Items pushed after a later one had gone out (read more than settle
 * after a later one was: the order was not kept for them).
 */
__u64 mg_reorder_late(const struct mg_reorder *r);

#endif /* MAGNET_LIB_REORDER_H */
