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
 * (headers included) per the IP header. Non-first fragments pass
 * ports = false: their bytes are all payload.
 */
static int transport(const struct magnet_skb *k, struct mg_flow *f, unsigned int off,
		     unsigned int l4, int ports)
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
	return 0;
}

int mg_flow_of(const struct magnet_skb *k, struct mg_flow *f)
{
	const __u8 *d = k->data;
	unsigned int ihl, total;

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
		return transport(k, f, ihl, total - ihl, !(be16_at(d + 6) & 0x1fff));
	case 6:
		if (k->caplen < 40)
			return -MG_FLOW_SHORT;
		total = be16_at(d + 4);
		if (!total && k->len > 40)
			return -MG_FLOW_LENGTH;	/* a jumbogram: no length here */
		f->family = AF_INET6;
		f->proto = d[6];
		memcpy(f->saddr, d + 8, 16);
		memcpy(f->daddr, d + 24, 16);
		return transport(k, f, 40, total, 1);
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
