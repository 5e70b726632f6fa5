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
 * Network: the packets of skb records (lib/flow.h reads their headers),
 *         per job, under their *socket's* cgroup (the record's
 *         sk_cgroup), not the header's: a packet received in softirq
 *         is written by whatever task the interrupt found, and counts
 *         for the job whose socket takes it. Per job: packets and
 *         transport payload bytes, sent and received, per protocol (tcp,
 *         udp, icmp, icmpv6, and any other as one), and per peer host
 *         (the other end's address, no port), at most MG_TOTALS_PEERS
 *         of them: the rest in the job's "other" peer (see Peers).
 *         Packets without a socket (sk_cgroup 0) count towards "other".
 *         Every packet seen is counted, but TCP's bytes once per flow
 *         and direction (lib/seqtrack.h): a segment sent again, or
 *         received again, counts its bytes seen before as repeated
 *         bytes, apart; what the tasks wrote and read, not the wire's.
 *
 * TASK records are not events: not counted anywhere here.
 *
 * Series. A job is a cgroup, and its records count in its own series,
 * unless the server says they count in another job's
 * (mg_totals_job_series): a Slurm task's cgroup in its step's, so that a
 * step of many tasks is one series, one place among the exported ones
 * (docs/slurm.md). Its counts so far join that series, which then counts
 * all of them, TOTALS included; the cgroup stays in the table only so
 * that its records find their series, and leaves it when its cgroup is
 * removed, or with its series. A cgroup is told before any view shows
 * it, but one met just before a view (or whose series had no room in the
 * table) may be shown alone first: then its series, which a monitor saw,
 * ends when it joins, and the series it joins counts only what came
 * after (mg_totals_shown), so that no count shows twice.
 *
 * Peers. A job lists the peers it met first, up to MG_TOTALS_PEERS;
 * a peer met when the list is full takes the place of the listed peer
 * with the fewest bytes among those idle (not counted in the job's last
 * MG_TOTALS_PEER_IDLE packets), which folds into "other" (its counts
 * and its series: an eviction, counted); with none idle, the newcomer's
 * packets count in "other". So a job that floods a host with new
 * addresses churns only its idle places, never those of peers it talks
 * to, and the peers' counts (listed and "other") always add up to the
 * job's. A peer's series is its job's (below): one that folds into
 * "other" adds its series to other's, so the series of a job's peers
 * add up to those of its protocols at every moment, and a peer series
 * ends only by an eviction (counted) or with its job's.
 *
 * Thread-safe: magnetd's collection thread counts each read as it hands
 * it on, so the totals count every record read whether or not the server
 * thread ever sees it; the server thread takes the views.
 *
 * Jobs are at most MG_TOTALS_JOBS; a record of a job met when the table is
 * full counts towards "other". For monitors that need bounded label sets
 * (Prometheus, Supermon) at most `exported_max` jobs are *exported*: each
 * has a series of its own, and every other job's events are summed into
 * "other". A job met while fewer are exported is exported at once. When
 * more jobs are met, mg_totals_rank (at most once a second) keeps the
 * most active, so that jobs met first cannot keep later ones out for
 * good:
 *
 *   - each job's rate is its events and packets (its sockets') per
 *     second, averaged over about the last 30 seconds: a job that only
 *     receives, in softirq, is as busy as its traffic;
 *   - an exported job keeps its place until a job not exported is busier
 *     than it by a margin (1.5 times its rate, plus 1 event per second):
 *     jobs of like rates do not take turns;
 *   - where jobs have an owner (mg_totals_job_owner), the owners whose
 *     jobs are active share the places: none takes more than its share
 *     while another's active job waits, so one user's many busy cgroups
 *     cannot push another user's jobs out. Places nobody else claims go
 *     to the busiest jobs, whoever owns them.
 *
 * Counters. Each exported job's series counts its events since it was
 * last exported (a job that enters starts at 0; one that leaves ends
 * its series, and Prometheus marks it stale); "other" counts every event
 * of a job that was not exported when it was counted. So every event is
 * in exactly one series, the one its job had then: each series only goes
 * up, and over any interval the increases of all series, ended ones
 * included, add up to the node's. TOTALS gives each job's counts since
 * it was first met, exported or not. A job whose cgroup is removed stops
 * being exported (its series ends) and frees its place; its events stay
 * counted in the node totals.
 */
#ifndef MAGNET_DAEMON_TOTALS_H
#define MAGNET_DAEMON_TOTALS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <arpa/inet.h>
#include <sys/types.h>
#include <linux/types.h>

#include "slurm.h"

#define MG_TOTALS_JOBS		4096
#define MG_TOTALS_PEERS		16	/* peer hosts listed per job */
#define MG_TOTALS_PEER_IDLE	1024	/* a peer not counted in this many of
					 * its job's packets may be replaced */
/*
 * TCP flows (a direction each) whose sequence numbers seen are kept, to
 * count each byte once: 184 bytes each, 2.9 MiB (pages untouched until a
 * flow takes them). A flow needs its entry
 * only while it may still send a segment again (a few round trips):
 * 16384 hold 8192 busy connections both ways, beyond a node's working
 * set; the least recently active go first (net_seq_evictions).
 */
#define MG_TOTALS_SEQ_FLOWS	16384
/*
 * TCP packets held until every ring was read again (lib/reorder.h): at
 * most this many, 88 bytes each (11 MiB if all are there: net_settle's
 * second of 131,072 packets/s), untouched memory while the traffic is less.
 */
#define MG_TOTALS_REORDER	131072
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
	__u64 probe_missed;		/* their hits the kernel skipped */
	unsigned int jobs;		/* jobs in the table */
	__u64 net_packets;		/* skb records' packets counted */
	__u64 net_bytes;		/* their transport payload, TCP's once */
	__u64 net_unkeyed;		/* skb records without a readable flow */
	__u64 net_repeated_bytes;	/* TCP payload seen before (not in net_bytes) */
	__u64 net_seq_evictions;	/* TCP flows forgotten for others */
	__u64 net_seq_holes_dropped;	/* ranges not seen yet given up */
	__u64 net_order_early;		/* TCP packets counted before they
					 * settled: the reorder buffer was full */
	__u64 net_order_late;		/* ...read after a later one was
					 * counted: net_settle was too short */
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
	/*
	 * Hits the kernel skipped, no record written (magnet/probes' missed,
	 * since the probe was added; 0 once removed): a kprobe hit while
	 * another kprobe's handler ran on the CPU, a hit re-entered from
	 * magnet's own handler, or one where RCU is not watching.
	 */
	__u64 missed;
};

/* What the monitors' series of a job (or "other") count. */
struct mg_totals_series {
	__u64 events;
	__u64 sock_bytes;
	__u64 intr_events;
	__u64 lost_fair;
	__u64 packets;		/* network packets (the job's sockets') */
};

/* The protocols a job's traffic is counted by: a fixed set, bounded. */
enum mg_totals_proto {
	MG_TOTALS_TCP,
	MG_TOTALS_UDP,
	MG_TOTALS_ICMP,
	MG_TOTALS_ICMPV6,
	MG_TOTALS_PROTO_OTHER,		/* any other IP protocol */
	MG_TOTALS_PROTOS
};

/* "tcp", "udp", "icmp", "icmpv6", "other". */
static inline const char *mg_totals_proto_name(unsigned int proto)
{
	static const char *const names[MG_TOTALS_PROTOS] = {
		[MG_TOTALS_TCP] = "tcp", [MG_TOTALS_UDP] = "udp",
		[MG_TOTALS_ICMP] = "icmp", [MG_TOTALS_ICMPV6] = "icmpv6",
		[MG_TOTALS_PROTO_OTHER] = "other",
	};

	return proto < MG_TOTALS_PROTOS ? names[proto] : "other";
}

/* Bytes: TCP's once; repeated: TCP's seen before, sent or received again. */
struct mg_totals_counts {
	__u64 tx_packets, tx_bytes;	/* sent */
	__u64 rx_packets, rx_bytes;	/* received */
	__u64 tx_repeated_bytes, rx_repeated_bytes;
};

struct mg_totals_peer {
	__u8 family;			/* AF_INET, AF_INET6; 0: "other" */
	__u8 addr[16];			/* IPv4 in the first 4 bytes */
	struct mg_totals_counts n;	/* since the job was first met */
	struct mg_totals_counts series;	/* its series' (exported jobs) */
};

/* A peer's address as text ("10.0.0.2", "fe80::1"), "other" for family 0. */
#define MG_TOTALS_PEER_NAME_MAX	48
static inline const char *mg_totals_peer_name(const struct mg_totals_peer *p,
					      char *buf, size_t size)
{
	if (!p->family || !inet_ntop(p->family, p->addr, buf, size))
		snprintf(buf, size, "other");
	return buf;
}

/* Anything counted? (a protocol's line is shown only then) */
static inline bool mg_totals_counts_any(const struct mg_totals_counts *c)
{
	return c->tx_packets || c->rx_packets;
}

/*
 * A job's network traffic, counted as its other counts are: n since it
 * was first met (TOTALS), series since it was last exported (for
 * "other", the same).
 */
struct mg_totals_net {
	struct mg_totals_counts proto[MG_TOTALS_PROTOS];
	struct mg_totals_counts proto_series[MG_TOTALS_PROTOS];
	size_t npeers;
	struct mg_totals_peer *peers;	/* listed: most bytes first */
	struct mg_totals_peer other;	/* every peer not listed */
	__u64 evictions, evictions_series;	/* peers folded into other */
};

struct mg_totals_job {
	__u64 cgroup;			/* cgroup id (0: "other") */
	char path[MG_TOTALS_PATH_MAX];	/* under the cgroup root; "other" */
	bool exported;			/* its own series (else in "other") */
	bool named;			/* mg_totals_job_series said where it counts */
	bool has_owner;			/* owner known (mg_totals_job_owner) */
	uid_t owner;
	/* Set by the server, not here: a Slurm job's series (slurm.h). */
	bool is_slurm;
	struct mg_slurm slurm;
	char slurm_node[MG_SLURM_NODE_MAX];	/* "" unless its scope names one */
	/* Since the job was first met (TOTALS). */
	__u64 events;
	__u64 sock_bytes;
	__u64 intr_events;		/* of those, MAGNET_REC_INTR records */
	__u64 lost_fair;		/* dropped by the fairness rule */
	/*
	 * Its series (exported jobs): since it was last exported. For
	 * "other", the same as the counts above.
	 */
	struct mg_totals_series series;
	double rate;			/* events and packets per second, recently */
	/* Its sockets' traffic; has_net: any packet counted (else all 0). */
	bool has_net;
	struct mg_totals_net net;
};

/* A cgroup whose records count in another job's series. */
struct mg_totals_member {
	__u64 cgroup, series;
};

/* A copy of the counters at one moment, for a renderer. */
struct mg_totals_view {
	struct mg_totals_node node;
	size_t nprobes;
	struct mg_totals_probe *probes;	/* by id */
	size_t njobs;
	struct mg_totals_job *jobs;	/* the series, busiest first */
	size_t nmembers;
	struct mg_totals_member *members;	/* cgroups counted in another's */
	struct mg_totals_job other;	/* the jobs not exported, summed, and
					 * records of no known job */
	struct mg_totals_peer *peer_pool;	/* the jobs' net.peers */
};

int mg_totals_create(unsigned int exported_max, struct mg_totals **out);
void mg_totals_free(struct mg_totals *t);

/*
 * How long a TCP packet's record waits, once read, before it is counted
 * (0, the default: not at all): records of the other CPUs' rings written
 * before it, read after it, are counted first, so that each flow's
 * segments are counted in the order they were sent (lib/reorder.h).
 * magnetd sets its `net_settle`. A view counts those settled by then.
 */
void mg_totals_set_settle(struct mg_totals *t, __u64 settle_ns);

/*
 * Count one record: an event under its header's cgroup, and an skb
 * record's packet under its socket's; LOST records towards kernel_lost;
 * JOB_LOST records towards kernel_lost and their job's lost_fair; TASK
 * records not at all. A TCP packet is counted once it has settled (below).
 */
void mg_totals_add(struct mg_totals *t, const struct magnet_record *r);

/* Count a read's records: whole and checked (the collection thread's). */
void mg_totals_add_read(struct mg_totals *t, const void *data, size_t len);

/* Records counted that the server's queue refused (its clients missed them). */
void mg_totals_dropped(struct mg_totals *t, __u64 records);

/* A cgroup is gone: it stops being exported (see above). */
void mg_totals_job_gone(struct mg_totals *t, __u64 cgroup);

/*
 * The records of cgroup count in the series of job `series` from now on,
 * and its counts so far join it (see Series above); series == cgroup: in
 * its own. Once per cgroup met: a cgroup told is named, and never moves
 * again. A cgroup not in the table, or a series the table has no room
 * for, is left as it was (not named: told again later).
 */
void mg_totals_job_series(struct mg_totals *t, __u64 cgroup, __u64 series);

/*
 * The uid that owns the job's cgroup (its tasks' user), for the share of
 * exported places per owner; the job is made if need be. Jobs without one
 * are ranked by their rate alone.
 */
void mg_totals_job_owner(struct mg_totals *t, __u64 cgroup, uid_t owner);

/*
 * Update the rates and choose the exported jobs (see above); does nothing
 * if it ran less than a second before now (CLOCK_MONOTONIC ns).
 */
void mg_totals_rank(struct mg_totals *t, __u64 now_ns);

/* Fill a view (caller frees with mg_totals_view_free). 0 or -ENOMEM. */
int mg_totals_view(struct mg_totals *t, struct mg_totals_view *v);
void mg_totals_view_free(struct mg_totals_view *v);

/*
 * View v is what the monitors are shown: its exported jobs not named yet
 * showed series of their own, which end if they join another (see Series).
 */
void mg_totals_shown(struct mg_totals *t, const struct mg_totals_view *v);

#endif /* MAGNET_DAEMON_TOTALS_H */
