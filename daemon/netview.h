/* SPDX-License-Identifier: GPL-2.0 */
/*
 * AGG net (docs/protocol.md): the traffic of skb records per job and
 * protocol, and per job, protocol, peer and local end (a flow, as its
 * end on this host sees it), in two fixed-size tables allocated once. A
 * packet's job is its socket's cgroup (the record's sk_cgroup, low 32
 * bits as every job key), or the series a function makes of that cgroup
 * (magnetd: a Slurm task's step, docs/slurm.md); its peer the remote end
 * (lib/flow.h), its local end this host's; bytes are transport payload,
 * TCP's counted once per flow and direction (lib/seqtrack.h, in a
 * tracker of `capacity` flows kept across resets): a segment sent or
 * received again counts as a packet, its bytes seen before as repeated.
 * Two hosts' reports of one flow have each other's ends: a client that
 * reads both matches them (magnet-jobs).
 *
 * Each table holds at most `capacity` entries; a new key in a full table
 * evicts, among the MG_NETVIEW_EVICT_SAMPLE entries met first from its
 * home slot, the one with the fewest bytes, ties to the least recently
 * counted (agg.h's policy, by bytes). Evictions and the bytes they took
 * are counted: bytes == sum of a table's entries + its evicted bytes.
 */
#ifndef MAGNET_DAEMON_NETVIEW_H
#define MAGNET_DAEMON_NETVIEW_H

#include <linux/magnet.h>

#define MG_NETVIEW_EVICT_SAMPLE	32

struct mg_netview;

/* A job entry has family 0, ports 0 and zero addresses. */
struct mg_netview_entry {
	__u32 job;
	__u8 proto;
	__u8 family;
	__be16 port;		/* the peer's */
	__u8 addr[16];
	__be16 lport;		/* the local end's */
	__u8 laddr[16];
	__u64 tx_packets, tx_bytes;
	__u64 rx_packets, rx_bytes;
};

struct mg_netview_table_stats {
	__u64 evictions;
	__u64 evicted_bytes;
	unsigned int used;
};

/* Since creation or the last mg_netview_reset. */
struct mg_netview_stats {
	__u64 packets;		/* skb records counted */
	__u64 bytes;		/* their transport payload, TCP's once */
	__u64 repeated_bytes;	/* TCP payload seen before (not in bytes) */
	__u64 seq_evictions;	/* flows the TCP tracker forgot for others */
	__u64 seq_holes_dropped;	/* ranges not seen yet it gave up */
	__u64 order_early;	/* TCP packets counted before they settled
				 * (the reorder buffer was full) */
	__u64 order_late;	/* read after a later one was counted */
	__u64 unkeyed;		/* skb records without a readable flow */
	struct magnet_lost lost;	/* what LOST records reported */
	struct mg_netview_table_stats jobs, peers;
	unsigned int capacity;
};

/* capacity: entries per table, a power of two up to 1 << 24. */
int mg_netview_create(unsigned int capacity, struct mg_netview **out);
void mg_netview_free(struct mg_netview *v);

/*
 * Hold each TCP packet settle_ns once read (0, the default: not at all;
 * 8 x capacity at most, then the lowest goes out early, counted),
 * so that a flow's segments are counted in the order they were written,
 * whichever ring they were read from (lib/reorder.h): a report counts
 * those settled by then (mg_netview_settle), the others the next one.
 */
void mg_netview_set_settle(struct mg_netview *v, __u64 settle_ns);
void mg_netview_settle(struct mg_netview *v, __u64 now);

/* Count each packet under series(arg, its socket's cgroup) from now on. */
void mg_netview_set_series(struct mg_netview *v,
			   __u32 (*series)(void *arg, __u32 cgroup), void *arg);

/*
 * Count record r: an skb record's packet, a LOST record's losses; other
 * records are no packets and are ignored. Never allocates.
 */
void mg_netview_add_record(struct mg_netview *v, const struct magnet_record *r);

void mg_netview_stats(const struct mg_netview *v, struct mg_netview_stats *st);

/*
 * The n job (or peer) entries with the most bytes (tx + rx), most first,
 * then the most packets, then by key, copied to out. Returns how many.
 */
unsigned int mg_netview_top_jobs(const struct mg_netview *v, unsigned int n,
				 struct mg_netview_entry *out);
unsigned int mg_netview_top_peers(const struct mg_netview *v, unsigned int n,
				  struct mg_netview_entry *out);

/* Empty both tables and zero the stats: the next interval. O(1). */
void mg_netview_reset(struct mg_netview *v);

#endif /* MAGNET_DAEMON_NETVIEW_H */
