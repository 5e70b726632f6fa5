// SPDX-License-Identifier: GPL-2.0
/* A packet's flow from its captured headers; see flow.h. */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "flow.h"

static unsigned int be16_at(const __u8 *p)
{
	return (unsigned int)p[0] << 8 | p[1];
}

/*
 * Ports and payload after a transport header at d + off, l4 bytes long
 * (headers included) per the IP header, whose packet is iptot bytes.
 * Non-first fragments pass ports = false: their bytes are all payload.
 *
 * A TCP segment whose skb holds more than its IP header says (k->len,
 * counted from skb->data, past iptot) is one the socket's backlog merged
 * the next segments into (tcp_add_backlog): its IP header is the first
 * segment's, the bytes after its TCP header are all of them. skb->data
 * is then at the TCP header (a socket's receive path), so the payload is
 * k->len less that header. Anywhere else skb->len is at most iptot.
 */
static int transport(const struct magnet_skb *k, struct mg_flow *f, unsigned int off,
		     unsigned int l4, unsigned int iptot, int ports)
{
	const __u8 *d = k->data;
	unsigned int hlen;

	if (!ports || (f->proto != IPPROTO_TCP && f->proto != IPPROTO_UDP)) {
		f->payload = l4;
		return 0;
	}
	if (f->proto == IPPROTO_TCP) {
		if (k->caplen < off + 13)
			return -MG_FLOW_SHORT;
		hlen = (d[off + 12] >> 4) * 4;
		if (hlen < 20)
			return -MG_FLOW_LENGTH;
	} else {
		if (k->caplen < off + 4)
			return -MG_FLOW_SHORT;
		hlen = 8;
	}
	if (l4 < hlen)
		return -MG_FLOW_LENGTH;
	memcpy(&f->sport, d + off, 2);
	memcpy(&f->dport, d + off + 2, 2);
	f->payload = l4 - hlen;
	if (f->proto != IPPROTO_TCP)
		return 0;
	/* Merged segments follow each other: the first one's seq is theirs. */
	if (k->len > iptot)
		f->payload = k->len - hlen;
	f->seq = (__u32)d[off + 4] << 24 | (__u32)d[off + 5] << 16 |
		 (__u32)d[off + 6] << 8 | d[off + 7];
	if (k->caplen > off + 13 && (d[off + 13] & 0x02))
		f->seq++;	/* SYN */
	f->has_seq = 1;
	return 0;
}

/*
 * IPv6: past the extension headers that may precede the transport one
 * (hop-by-hop, as MLD's, routing, fragment, destination options, AH), to
 * the protocol and where its header starts. 0 or -enum mg_flow_error.
 */
static int ipv6_upper(const struct magnet_skb *k, unsigned int *off, unsigned int *l4,
		      int *ports, __u8 *proto)
{
	const __u8 *d = k->data;
	unsigned int len;

	for (;;) {
		switch (*proto) {
		case 0:		/* hop-by-hop options */
		case 43:	/* routing */
		case 60:	/* destination options */
		case 44:	/* fragment */
		case 51:	/* authentication header */
			break;
		default:
			return 0;
		}
		if (k->caplen < *off + 8)
			return -MG_FLOW_SHORT;
		if (*proto == 44) {
			len = 8;
			/* Only the first fragment (offset 0) has the ports. */
			if (be16_at(d + *off + 2) & 0xfff8)
				*ports = 0;
		} else if (*proto == 51) {
			len = (d[*off + 1] + 2) * 4;
		} else {
			len = (d[*off + 1] + 1) * 8;
		}
		if (*l4 < len)
			return -MG_FLOW_LENGTH;
		*proto = d[*off];
		*off += len;
		*l4 -= len;
	}
}

int mg_flow_of(const struct magnet_skb *k, struct mg_flow *f)
{
	unsigned int off = 40;
	int ports = 1, ret;
	__u8 proto;
	const __u8 *d = k->data;
	unsigned int ihl, total, iptot;

	memset(f, 0, sizeof(*f));
	if (k->layer != MAGNET_SKB_LAYER_NETWORK)
		return -MG_FLOW_LAYER;
	if (k->direction != MAGNET_SKB_DIR_OUT && k->direction != MAGNET_SKB_DIR_IN)
		return -MG_FLOW_DIR;
	f->dir = k->direction;
	if (k->caplen < 1)
		return -MG_FLOW_SHORT;
	switch (d[0] >> 4) {
	case 4:
		if (k->caplen < 20)
			return -MG_FLOW_SHORT;
		ihl = (d[0] & 15) * 4;
		total = be16_at(d + 2);
		if (ihl < 20 || total < ihl)
			return -MG_FLOW_LENGTH;
		if (k->caplen < ihl)
			return -MG_FLOW_SHORT;
		f->family = AF_INET;
		f->proto = d[9];
		memcpy(f->saddr, d + 12, 4);
		memcpy(f->daddr, d + 16, 4);
		/* Only the first fragment (offset 0) has the ports. */
		return transport(k, f, ihl, total - ihl, total, !(be16_at(d + 6) & 0x1fff));
	case 6:
		if (k->caplen < 40)
			return -MG_FLOW_SHORT;
		total = be16_at(d + 4);
		if (!total && k->len > 40)
			return -MG_FLOW_LENGTH;	/* a jumbogram: no length here */
		f->family = AF_INET6;
		proto = d[6];
		memcpy(f->saddr, d + 8, 16);
		memcpy(f->daddr, d + 24, 16);
		iptot = 40 + total;
		ret = ipv6_upper(k, &off, &total, &ports, &proto);
		f->proto = proto;
		if (ret)
			return ret;
		return transport(k, f, off, total, iptot, ports);
	default:
		return -MG_FLOW_VERSION;
	}
}

const char *mg_flow_proto_name(unsigned int proto, char *buf, size_t len)
{
	if (proto == IPPROTO_TCP)
		return "tcp";
	if (proto == IPPROTO_UDP)
		return "udp";
	if (proto == IPPROTO_ICMP)
		return "icmp";
	if (proto == IPPROTO_ICMPV6)
		return "icmpv6";
	snprintf(buf, len, "ipproto%u", proto);
	return buf;
}

const char *mg_flow_peer(const struct mg_flow *f, char *buf, size_t len)
{
	bool out = f->dir == MAGNET_SKB_DIR_OUT;
	const __u8 *addr = out ? f->daddr : f->saddr;
	char a[INET6_ADDRSTRLEN];

	if (!inet_ntop(f->family, addr, a, sizeof(a)))
		snprintf(a, sizeof(a), "?");
	snprintf(buf, len, f->family == AF_INET6 ? "[%s]:%u" : "%s:%u", a,
		 ntohs(out ? f->dport : f->sport));
	return buf;
}
