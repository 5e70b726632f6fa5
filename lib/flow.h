/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The flow of one packet: from an skb record's capture at the network layer
 * (its IPv4 or IPv6 header and the transport header after it), the
 * protocol, the two ends and the transport payload's size. What magnetd's
 * per-job traffic view (AGG net, docs/protocol.md) counts.
 */
#ifndef MAGNET_LIB_FLOW_H
#define MAGNET_LIB_FLOW_H

#include <linux/magnet.h>

/*
 * Capture bytes that always hold the headers mg_flow_of() reads: the
 * largest IPv4 header (60) and the TCP header's first 13 bytes; an IPv6
 * header (40) with up to 27 bytes of extension headers before TCP's (an
 * MLD report's hop-by-hop header is 8).
 */
#define MG_FLOW_CAPTURE		80

struct mg_flow {
	__u8 family;		/* AF_INET or AF_INET6 */
	__u8 proto;		/* IPPROTO_TCP, IPPROTO_UDP, ... */
	__u8 dir;		/* MAGNET_SKB_DIR_OUT or MAGNET_SKB_DIR_IN */
	__be16 sport;		/* 0 for protocols without ports */
	__be16 dport;
	__u8 saddr[16];		/* IPv4 in the first 4 bytes */
	__u8 daddr[16];
	__u32 payload;		/* transport payload bytes (see below) */
	__u32 seq;		/* TCP: the payload's first sequence number */
	__u8 has_seq;		/* seq was read (TCP with its header) */
};

/* Why mg_flow_of() cannot tell a packet's flow. */
enum mg_flow_error {
	MG_FLOW_LAYER = 1,	/* the capture does not start at the IP header */
	MG_FLOW_DIR,		/* direction unknown */
	MG_FLOW_VERSION,	/* neither IPv4 nor IPv6 */
	MG_FLOW_SHORT,		/* the capture ends before the headers do */
	MG_FLOW_LENGTH,		/* lengths that do not add up (or jumbo) */
};

/*
 * Fill *f from skb record payload k: 0, or -enum mg_flow_error. payload is
 * the TCP or UDP data (the IP header's length minus the IP and transport
 * headers: a GSO packet counts whole; a TCP segment whose skb is longer
 * than that, merged with the next ones in a socket's backlog, the skb's
 * bytes after its TCP header), for other protocols the IP
 * payload, and for a non-first fragment its bytes (no ports). IPv6
 * extension headers are walked to the protocol after them (their bytes are
 * not payload); ports are read only for TCP and UDP, and TCP's sequence
 * number (a SYN's data, TCP Fast Open's, starts one after it, where the
 * flags are captured), what lib/seqtrack.h counts once.
 */
int mg_flow_of(const struct magnet_skb *k, struct mg_flow *f);

/* "tcp", "udp", "icmp", "icmpv6", or "ipprotoN" in buf (at least 16 bytes). */
const char *mg_flow_proto_name(unsigned int proto, char *buf, size_t len);

/*
 * The remote end: the destination of a packet sent, the source of one
 * received. "A.B.C.D:PORT" or "[V6]:PORT" in buf (MG_FLOW_PEER_MAX).
 */
#define MG_FLOW_PEER_MAX	56
const char *mg_flow_peer(const struct mg_flow *f, char *buf, size_t len);

#endif /* MAGNET_LIB_FLOW_H */
