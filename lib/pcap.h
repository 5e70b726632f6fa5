/* SPDX-License-Identifier: GPL-2.0 */
/*
 * skb records as a packet capture that tcpdump and Wireshark read: pcapng
 * (one interface per link type and ifindex, a comment per packet naming
 * the probe, the task and the skb) or classic pcap (LINKTYPE_RAW, network
 * layer only). The layout is documented in docs/magnet-dump.md.
 */
#ifndef MAGNET_LIB_PCAP_H
#define MAGNET_LIB_PCAP_H

#include <stdbool.h>
#include <stdio.h>
#include <linux/magnet.h>

#include "probes.h"

#define MG_LINKTYPE_ETHERNET	1
#define MG_LINKTYPE_RAW		101	/* IPv4 or IPv6, by the version nibble */

struct mg_trace_info;

struct mg_pcap_opts {
	bool classic;				/* pcap, not pcapng */
	const struct mg_trace_info *info;	/* clock, start time, host */
	const struct mg_probe_table *probes;	/* names; may be NULL */
};

/* What became of the records given to mg_pcap_write(). */
struct mg_pcap_stats {
	__u64 packets;		/* written */
	__u64 not_skb;		/* probe records of other handlers */
	__u64 data_layer;	/* skb records of layer DATA: no header known */
	__u64 link_layer;	/* classic pcap: skb records of layer LINK */
	__u64 lost_records;	/* LOST records */
	__u64 lost;		/* records they say were lost */
	unsigned int linktypes;	/* pcapng: link types among the interfaces */
};

struct mg_pcap;

/*
 * Start a capture on f: the section header (or pcap's file header) is
 * written at once, so a trace without packets still gives a valid, empty
 * capture. Timestamps become wall-clock time from the trace header's
 * (start_realtime, start_clock) pair: a tsc trace needs tsc_khz (-EINVAL
 * otherwise). 0, -ENOMEM or -EIO (errno has the stdio error).
 */
int mg_pcap_open(struct mg_pcap **pp, FILE *f, const struct mg_pcap_opts *o);

/*
 * Every record of the trace, selected or not, in each CPU's stream order:
 * TASK records name the tasks of the packets. 0 or -ENOMEM.
 */
int mg_pcap_feed(struct mg_pcap *p, const struct magnet_record *r);

/*
 * A selected record: an skb record becomes a packet (or is counted, see
 * struct mg_pcap_stats); TASK records are ignored. 0, -ENOMEM or -EIO.
 */
int mg_pcap_write(struct mg_pcap *p, const struct magnet_record *r);

/*
 * The end of the capture. A pcapng section without any interface (no
 * packet was written) gets one, a LINKTYPE_RAW "none": libpcap refuses a
 * file without, so tcpdump could not read an empty capture. 0 or -EIO.
 */
int mg_pcap_finish(struct mg_pcap *p);

const struct mg_pcap_stats *mg_pcap_stats(const struct mg_pcap *p);

/* Frees p; f is the caller's to flush and close. */
void mg_pcap_free(struct mg_pcap *p);

#endif /* MAGNET_LIB_PCAP_H */
