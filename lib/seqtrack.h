/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Each TCP byte counted once. The skb probes see a segment sent again
 * (a retransmission, through ip_output) or received again (a duplicate,
 * through tcp_rcv_established) as any other: counted on the wire, a job's
 * traffic would count those bytes twice. A tracker remembers, per flow
 * (family, addresses, ports) and direction, the sequence space seen: the
 * highest end, and up to MG_SEQTRACK_HOLES holes below it (ranges not
 * seen: a segment lost, or received out of order, as SACK's blocks), so
 * that a segment filling a hole is new and one seen before is repeated.
 *
 * - A segment without payload (SYN, pure ACK, FIN) changes nothing.
 * - A flow's first segment is all new, and its start the flow's base:
 *   bytes below it (a flow first seen mid-stream) are repeated.
 * - Sequence numbers wrap at 2^32 (serial number arithmetic, RFC 1982).
 *   A segment more than MG_SEQTRACK_WINDOW from the highest end, ahead
 *   or behind, is no retransmission (no TCP window is larger): a new
 *   connection on the same ends, or records lost; the flow starts anew
 *   with it, all new. A hole as far behind is given up.
 * - A new hole when MG_SEQTRACK_HOLES are open drops the lowest (counted):
 *   its bytes, if they come, are repeated.
 * - The table has a fixed capacity (a power of two), allocated once: a
 *   new flow takes a free slot among the MG_SEQTRACK_PROBE from its home,
 *   or the least recently used one's (an eviction, counted); a flow
 *   evicted starts anew if it comes back (its next segment all new).
 *
 * Not thread-safe: one tracker per counting thread.
 */
#ifndef MAGNET_LIB_SEQTRACK_H
#define MAGNET_LIB_SEQTRACK_H

#include "flow.h"

/*
 * A receiver's holes at once: a loss per packet sent again, and 10 % of
 * a window lost on a bad LAN is several (make cluster-check saw more than
 * 4 in one flow: two segments taken for repeated ones).
 */
#define MG_SEQTRACK_HOLES	16
#define MG_SEQTRACK_PROBE	8
#define MG_SEQTRACK_WINDOW	(1U << 30)
#define MG_SEQTRACK_MAX_CAPACITY	(1U << 24)

struct mg_seqtrack;

struct mg_seqtrack_stats {
	__u64 evictions;	/* flows that lost their slot to another */
	__u64 holes_dropped;	/* holes given up (list full, or too old) */
	unsigned int used, capacity;
};

/* capacity: flows, a power of two up to MG_SEQTRACK_MAX_CAPACITY. */
int mg_seqtrack_create(unsigned int capacity, struct mg_seqtrack **out);
void mg_seqtrack_free(struct mg_seqtrack *t);

/*
 * The bytes of f's payload its flow and direction had not carried before
 * (f->payload less them are repeated); all of them for a packet without
 * a TCP sequence number (UDP, other protocols). Never allocates.
 */
unsigned int mg_seqtrack_new_bytes(struct mg_seqtrack *t, const struct mg_flow *f);

void mg_seqtrack_stats(const struct mg_seqtrack *t, struct mg_seqtrack_stats *st);

#endif /* MAGNET_LIB_SEQTRACK_H */
