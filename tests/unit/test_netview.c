// SPDX-License-Identifier: GPL-2.0
/*
 * lib/flow.c and daemon/netview.c (AGG net): flows read from IPv4 and IPv6
 * headers as the skb handler captures them (TCP with options, UDP, other
 * protocols, fragments, TCP segments a socket's backlog merged, every
 * refusal); the per-job and per-flow (peer and
 * local end, as the other host would see them swapped) tables
 * exact under capacity, against a reference over random traffic, and at
 * capacity with evictions counted so that bytes always add up; LOST
 * records folded, other records ignored, unreadable packets unkeyed; a
 * series function's jobs (a Slurm step for its tasks' sockets); TCP's
 * sequence number read, and its bytes counted once (retransmissions and
 * duplicates as repeated bytes).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "flow.h"
#include "netview.h"
#include "sensor.h"
#include "record.h"
#include "testutil.h"

static __u64 rec64[(MAGNET_RECORD_MAX + 7) / 8];
#define REC	((struct magnet_record *)rec64)

struct pkt {
	int family;
	int proto;
	const char *src, *dst;
	unsigned int sport, dport;
	unsigned int payload;
	unsigned int tcp_opts;	/* bytes of TCP options */
	unsigned int ip_opts;	/* bytes of IPv4 options */
	unsigned int frag_off;	/* IPv4 fragment offset (8-byte units) */
	__u32 seq;		/* TCP's; 0: the end of the last packet made */
	__u8 tcp_flags;
};

static void put16(unsigned char *p, unsigned int v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static struct pkt mk(int family, int proto, const char *src, const char *dst,
		      unsigned int sport, unsigned int dport, unsigned int payload)
{
	struct pkt p = { .family = family, .proto = proto, .src = src, .dst = dst,
			 .sport = sport, .dport = dport, .payload = payload };

	return p;
}

/* The packet's headers as they sit in the skb: returns their length. */
static size_t headers(const struct pkt *p, unsigned char *b, size_t *total)
{
	size_t ip, l4 = 0;

	memset(b, 0, 128);
	if (p->proto == IPPROTO_TCP)
		l4 = 20 + p->tcp_opts;
	else if (p->proto == IPPROTO_UDP)
		l4 = 8;
	if (p->frag_off)
		l4 = 0;
	if (p->family == AF_INET) {
		ip = 20 + p->ip_opts;
		b[0] = 0x40 | ip / 4;
		*total = ip + l4 + p->payload;
		put16(b + 2, *total);
		put16(b + 6, p->frag_off);
		b[8] = 64;
		b[9] = p->proto;
		ck_assert_int_eq(inet_pton(AF_INET, p->src, b + 12), 1);
		ck_assert_int_eq(inet_pton(AF_INET, p->dst, b + 16), 1);
	} else {
		ip = 40;
		b[0] = 0x60;
		put16(b + 4, l4 + p->payload);
		*total = 40 + l4 + p->payload;
		b[6] = p->proto;
		b[7] = 64;
		ck_assert_int_eq(inet_pton(AF_INET6, p->src, b + 8), 1);
		ck_assert_int_eq(inet_pton(AF_INET6, p->dst, b + 24), 1);
	}
	if (l4) {
		put16(b + ip, p->sport);
		put16(b + ip + 2, p->dport);
	}
	if (p->proto == IPPROTO_TCP && l4)
		tu_tcp_header(b + ip, p->seq, p->payload, l4, p->tcp_flags);
	if (p->proto == IPPROTO_UDP && l4)
		put16(b + ip + 4, l4 + p->payload);
	return ip + l4;
}

/* An skb record of p, sent or received, for job, capturing cap bytes. */
static const struct magnet_skb *skb_rec(const struct pkt *p, int dir, __u64 job, size_t cap)
{
	struct mg_record_hdr h = { .event_id = 20, .cpu = 1, .cgroup = 99, .pid = 7, .tgid = 7 };
	unsigned char b[128];
	size_t total, hl = headers(p, b, &total);
	struct magnet_skb k = {
		.len = total, .ifindex = 1, .direction = dir,
		.layer = MAGNET_SKB_LAYER_NETWORK, .sk_cgroup = job,
		.protocol = htons(p->family == AF_INET ? 0x0800 : 0x86dd),
	};

	k.caplen = cap < hl ? cap : hl;
	ck_assert_int_gt(mg_record_encode_skb(rec64, sizeof(rec64), &h, &k, b, cap), 0);
	return mg_record_skb(REC);
}

static struct mg_flow flow(const struct pkt *p, int dir, size_t cap, int want)
{
	struct mg_flow f;

	ck_assert_int_eq(mg_flow_of(skb_rec(p, dir, 5, cap), &f), want);
	return f;
}

static const char *peer(const struct mg_flow *f)
{
	static char buf[MG_FLOW_PEER_MAX];

	return mg_flow_peer(f, buf, sizeof(buf));
}

START_TEST(flows)
{
	struct pkt p = mk(AF_INET, IPPROTO_TCP, "10.0.0.1", "10.0.0.2", 40000, 80, 1448);
	struct mg_flow f;

	p.tcp_opts = 12;
	p.seq = 0xdeadbeef;
	f = flow(&p, MAGNET_SKB_DIR_OUT, 128, 0);

	ck_assert_uint_eq(f.proto, IPPROTO_TCP);
	ck_assert_uint_eq(f.payload, 1448);
	ck_assert_uint_eq(f.seq, 0xdeadbeef);
	ck_assert_uint_eq(f.has_seq, 1);
	/* A SYN's data (TCP Fast Open) starts one after it; flags not captured: as is. */
	p.tcp_flags = 0x02;
	f = flow(&p, MAGNET_SKB_DIR_OUT, 128, 0);
	ck_assert_uint_eq(f.seq, 0xdeadbef0);
	f = flow(&p, MAGNET_SKB_DIR_OUT, 20 + 13, 0);
	ck_assert_uint_eq(f.seq, 0xdeadbeef);
	p.tcp_flags = 0x10;	/* ACK */
	f = flow(&p, MAGNET_SKB_DIR_OUT, 128, 0);
	ck_assert_uint_eq(f.seq, 0xdeadbeef);
	p.tcp_flags = 0;
	p.seq = 0;
	ck_assert_str_eq(peer(&f), "10.0.0.2:80");
	f = flow(&p, MAGNET_SKB_DIR_IN, 128, 0);
	ck_assert_str_eq(peer(&f), "10.0.0.1:40000");
	/* IPv4 options (60-byte header) and TCP's data offset: 80 bytes hold them. */
	p.ip_opts = 40;
	p.tcp_opts = 40;
	f = flow(&p, MAGNET_SKB_DIR_OUT, MG_FLOW_CAPTURE, 0);
	ck_assert_uint_eq(f.payload, 1448);
	flow(&p, MAGNET_SKB_DIR_OUT, 60 + 12, -MG_FLOW_SHORT);
	/* UDP: 8 bytes of header, whatever the capture after it. */
	p = mk(AF_INET, IPPROTO_UDP, "127.0.0.1", "127.0.0.3", 5353, 53, 0);
	f = flow(&p, MAGNET_SKB_DIR_OUT, 28, 0);
	ck_assert_uint_eq(f.payload, 0);
	ck_assert_uint_eq(f.has_seq, 0);
	ck_assert_str_eq(peer(&f), "127.0.0.3:53");
	flow(&p, MAGNET_SKB_DIR_OUT, 23, -MG_FLOW_SHORT);
	/* Other protocols: the IP payload, no ports. */
	p = mk(AF_INET, IPPROTO_ICMP, "192.0.2.1", "192.0.2.9", 0, 0, 56);
	f = flow(&p, MAGNET_SKB_DIR_OUT, 20, 0);
	ck_assert_uint_eq(f.payload, 56);
	ck_assert_str_eq(peer(&f), "192.0.2.9:0");
	/* A later fragment: all payload, no ports even for UDP. */
	p = mk(AF_INET, IPPROTO_UDP, "192.0.2.1", "192.0.2.9", 1, 2, 1480);
	p.frag_off = 185;
	f = flow(&p, MAGNET_SKB_DIR_IN, 20, 0);
	ck_assert_uint_eq(f.payload, 1480);
	ck_assert_str_eq(peer(&f), "192.0.2.1:0");
	/* IPv6. */
	p = mk(AF_INET6, IPPROTO_UDP, "::1", "2001:db8::7", 1000, 2000, 300);
	f = flow(&p, MAGNET_SKB_DIR_OUT, 48, 0);
	ck_assert_uint_eq(f.payload, 300);
	ck_assert_str_eq(peer(&f), "[2001:db8::7]:2000");
	p.proto = IPPROTO_TCP;
	f = flow(&p, MAGNET_SKB_DIR_IN, 53, 0);
	ck_assert_uint_eq(f.payload, 300);
	ck_assert_str_eq(peer(&f), "[::1]:1000");
	flow(&p, MAGNET_SKB_DIR_IN, 39, -MG_FLOW_SHORT);
	/*
	 * Received by a socket (tcp_rcv_established: skb->data at the TCP header),
	 * its skb's len the TCP header and payload, less than the IP
	 * packet: the IP header's payload. Merged with two more segments in
	 * the socket's backlog: the IP header is the first's, the skb's
	 * bytes after the TCP header are all three's.
	 */
	p = mk(AF_INET, IPPROTO_TCP, "10.0.0.2", "10.0.0.1", 5001, 40000, 1448);
	p.tcp_opts = 12;
	p.seq = 7000;
	skb_rec(&p, MAGNET_SKB_DIR_IN, 5, 128);
	((struct magnet_skb *)mg_record_skb(REC))->len = 32 + 1448;
	ck_assert_int_eq(mg_flow_of(mg_record_skb(REC), &f), 0);
	ck_assert_uint_eq(f.payload, 1448);
	((struct magnet_skb *)mg_record_skb(REC))->len = 32 + 3 * 1448;
	ck_assert_int_eq(mg_flow_of(mg_record_skb(REC), &f), 0);
	ck_assert_uint_eq(f.payload, 3 * 1448);
	ck_assert_uint_eq(f.seq, 7000);	/* the first's: the others follow it */
	p.seq = 0;
	p.family = AF_INET6;
	p.src = "2001:db8::2";
	p.dst = "2001:db8::1";
	skb_rec(&p, MAGNET_SKB_DIR_IN, 5, 128);
	((struct magnet_skb *)mg_record_skb(REC))->len = 32 + 2 * 1448;
	ck_assert_int_eq(mg_flow_of(mg_record_skb(REC), &f), 0);
	ck_assert_uint_eq(f.payload, 2 * 1448);
	/* Not TCP: the IP header's length, whatever the skb's. */
	p = mk(AF_INET, IPPROTO_UDP, "10.0.0.2", "10.0.0.1", 53, 40000, 100);
	skb_rec(&p, MAGNET_SKB_DIR_IN, 5, 128);
	((struct magnet_skb *)mg_record_skb(REC))->len = 4000;
	ck_assert_int_eq(mg_flow_of(mg_record_skb(REC), &f), 0);
	ck_assert_uint_eq(f.payload, 100);
	/* Refusals. */
	p = mk(AF_INET6, IPPROTO_TCP, "::1", "2001:db8::7", 1000, 2000, 300);
	flow(&p, MAGNET_SKB_DIR_UNKNOWN, 128, -MG_FLOW_DIR);
	skb_rec(&p, MAGNET_SKB_DIR_IN, 5, 128);
	((struct magnet_skb *)mg_record_skb(REC))->layer = MAGNET_SKB_LAYER_LINK;
	ck_assert_int_eq(mg_flow_of(mg_record_skb(REC), &f), -MG_FLOW_LAYER);
	skb_rec(&p, MAGNET_SKB_DIR_IN, 5, 128);
	((struct magnet_skb *)mg_record_skb(REC))->data[0] = 0x50;
	ck_assert_int_eq(mg_flow_of(mg_record_skb(REC), &f), -MG_FLOW_VERSION);
	p = mk(AF_INET, IPPROTO_TCP, "10.0.0.1", "10.0.0.2", 1, 2, 0);
	skb_rec(&p, MAGNET_SKB_DIR_IN, 5, 128);
	((struct magnet_skb *)mg_record_skb(REC))->data[3] = 30;	/* < 20 + 20 */
	ck_assert_int_eq(mg_flow_of(mg_record_skb(REC), &f), -MG_FLOW_LENGTH);
	skb_rec(&p, MAGNET_SKB_DIR_IN, 5, 128);
	((struct magnet_skb *)mg_record_skb(REC))->data[32] = 0x40;	/* doff 16 */
	ck_assert_int_eq(mg_flow_of(mg_record_skb(REC), &f), -MG_FLOW_LENGTH);
}
END_TEST

/* An IPv6 packet: next header nh, then ext (extension headers), then l4. */
static const struct magnet_skb *v6_rec(__u8 nh, const unsigned char *ext, size_t elen,
				       const unsigned char *l4, size_t l4len, size_t cap)
{
	struct mg_record_hdr h = { .event_id = 20, .cpu = 1, .cgroup = 99, .pid = 7, .tgid = 7 };
	unsigned char b[256] = { 0x60 };
	struct magnet_skb k = {
		.len = 40 + elen + l4len, .ifindex = 1, .direction = MAGNET_SKB_DIR_OUT,
		.layer = MAGNET_SKB_LAYER_NETWORK, .sk_cgroup = 5, .protocol = htons(0x86dd),
	};

	ck_assert_uint_le(40 + elen + l4len, sizeof(b));
	put16(b + 4, elen + l4len);
	b[6] = nh;
	ck_assert_int_eq(inet_pton(AF_INET6, "fe80::1", b + 8), 1);
	ck_assert_int_eq(inet_pton(AF_INET6, "ff02::16", b + 24), 1);
	memcpy(b + 40, ext, elen);
	memcpy(b + 40 + elen, l4, l4len);
	k.caplen = cap < k.len ? cap : k.len;
	ck_assert_int_gt(mg_record_encode_skb(rec64, sizeof(rec64), &h, &k, b, cap), 0);
	return mg_record_skb(REC);
}

/* IPv6 extension headers are walked to the protocol behind them. */
START_TEST(ipv6_extensions)
{
	/* An MLDv2 report: hop-by-hop (router alert, 8 bytes), ICMPv6 (28). */
	static const unsigned char hbh[8] = { IPPROTO_ICMPV6, 0, 5, 2, 0, 0, 1, 0 };
	static const unsigned char frag[8] = { IPPROTO_UDP, 0, 0, 1, 0, 0, 0, 9 };
	static const unsigned char later[8] = { IPPROTO_UDP, 0, 0x05, 0xa9, 0, 0, 0, 9 };
	/* destination options (16 bytes) then a fragment header */
	static const unsigned char dst_frag[24] = { 44, 1, [16] = IPPROTO_UDP, [19] = 1 };
	unsigned char icmp[28] = { 143 }, udp[8 + 100] = { 0x13, 0x88, 0x00, 0x35 };
	char buf[16];
	struct mg_flow f;

	ck_assert_int_eq(mg_flow_of(v6_rec(0, hbh, 8, icmp, 28, 128), &f), 0);
	ck_assert_uint_eq(f.proto, IPPROTO_ICMPV6);
	ck_assert_str_eq(mg_flow_proto_name(f.proto, buf, sizeof(buf)), "icmpv6");
	ck_assert_uint_eq(f.payload, 28);
	ck_assert_str_eq(peer(&f), "[ff02::16]:0");
	/* The first fragment has the ports; a later one is all payload. */
	ck_assert_int_eq(mg_flow_of(v6_rec(44, frag, 8, udp, sizeof(udp), 128), &f), 0);
	ck_assert_uint_eq(f.proto, IPPROTO_UDP);
	ck_assert_uint_eq(f.payload, 100);
	ck_assert_str_eq(peer(&f), "[ff02::16]:53");
	ck_assert_int_eq(mg_flow_of(v6_rec(44, later, 8, udp, sizeof(udp), 128), &f), 0);
	ck_assert_uint_eq(f.payload, sizeof(udp));
	ck_assert_str_eq(peer(&f), "[ff02::16]:0");
	ck_assert_int_eq(mg_flow_of(v6_rec(60, dst_frag, 24, udp, sizeof(udp), 128), &f), 0);
	ck_assert_uint_eq(f.proto, IPPROTO_UDP);
	ck_assert_uint_eq(f.payload, 100);
	ck_assert_str_eq(peer(&f), "[ff02::16]:53");
	/* A capture that ends inside the chain, a chain longer than the packet. */
	ck_assert_int_eq(mg_flow_of(v6_rec(60, dst_frag, 24, udp, sizeof(udp), 60), &f),
			 -MG_FLOW_SHORT);
	ck_assert_int_eq(mg_flow_of(v6_rec(60, dst_frag, 16, udp, 0, 128), &f), -MG_FLOW_SHORT);
	ck_assert_int_eq(mg_flow_of(v6_rec(0, hbh, 4, udp, 0, 128), &f), -MG_FLOW_SHORT);
	v6_rec(60, dst_frag, 24, udp, sizeof(udp), 128);
	((struct magnet_skb *)mg_record_skb(REC))->data[5] = 20;	/* payload < the chain */
	ck_assert_int_eq(mg_flow_of(mg_record_skb(REC), &f), -MG_FLOW_LENGTH);
	ck_assert_str_eq(mg_flow_proto_name(IPPROTO_ICMP, buf, sizeof(buf)), "icmp");
	ck_assert_str_eq(mg_flow_proto_name(132, buf, sizeof(buf)), "ipproto132");
}
END_TEST

static struct mg_netview *create(unsigned int cap)
{
	struct mg_netview *v;

	ck_assert_int_eq(mg_netview_create(cap, &v), 0);
	return v;
}

static void add(struct mg_netview *v, const struct pkt *p, int dir, __u64 job)
{
	skb_rec(p, dir, job, 128);
	mg_netview_add_record(v, REC);
}

static struct mg_netview_stats stats(const struct mg_netview *v)
{
	struct mg_netview_stats st;

	mg_netview_stats(v, &st);
	return st;
}

/* Both tables' bytes add up to the view's, evictions included. */
static void check_sums(const struct mg_netview *v)
{
	static struct mg_netview_entry e[1024];
	struct mg_netview_stats st = stats(v);
	unsigned long long jb = 0, pb = 0, jp = 0;
	unsigned int i, n;

	n = mg_netview_top_jobs(v, 1024, e);
	ck_assert_uint_eq(n, st.jobs.used);
	for (i = 0; i < n; i++) {
		jb += e[i].tx_bytes + e[i].rx_bytes;
		jp += e[i].tx_packets + e[i].rx_packets;
		if (i)
			tu_assert(e[i - 1].tx_bytes + e[i - 1].rx_bytes >=
				  e[i].tx_bytes + e[i].rx_bytes);
	}
	n = mg_netview_top_peers(v, 1024, e);
	ck_assert_uint_eq(n, st.peers.used);
	for (i = 0; i < n; i++)
		pb += e[i].tx_bytes + e[i].rx_bytes;
	ck_assert_uint_eq(jb + st.jobs.evicted_bytes, st.bytes);
	ck_assert_uint_eq(pb + st.peers.evicted_bytes, st.bytes);
	if (!st.jobs.evictions)
		ck_assert_uint_eq(jp, st.packets);
}

START_TEST(exact)
{
	struct mg_netview *v = create(16);
	struct pkt a = mk(AF_INET, IPPROTO_TCP, "127.0.0.1", "127.0.0.2", 40000, 5001, 1000);
	struct pkt u = mk(AF_INET, IPPROTO_UDP, "127.0.0.1", "127.0.0.3", 40001, 5002, 300);
	struct pkt r = mk(AF_INET, IPPROTO_TCP, "127.0.0.2", "127.0.0.1", 5001, 40000, 7);
	struct mg_netview_entry e[8];
	struct mg_netview_stats st;
	struct magnet_lost lost = { .full = 3, .overwritten = 4 };
	struct mg_record_hdr h = { .event_id = MAGNET_EVENT_LOST };
	unsigned int n;

	add(v, &a, MAGNET_SKB_DIR_OUT, 0x100000010ULL);	/* job 0x10 (low 32 bits) */
	add(v, &a, MAGNET_SKB_DIR_OUT, 0x10);
	add(v, &u, MAGNET_SKB_DIR_OUT, 0x10);
	add(v, &r, MAGNET_SKB_DIR_IN, 0x10);
	add(v, &a, MAGNET_SKB_DIR_IN, 0x20);		/* the server's side */
	add(v, &a, MAGNET_SKB_DIR_UNKNOWN, 0x20);	/* unkeyed */
	ck_assert_int_gt(mg_record_encode_lost(rec64, sizeof(rec64), &h, &lost), 0);
	mg_netview_add_record(v, REC);
	st = stats(v);
	ck_assert_uint_eq(st.packets, 5);
	ck_assert_uint_eq(st.bytes, 2000 + 300 + 7 + 1000);
	ck_assert_uint_eq(st.unkeyed, 1);
	ck_assert_uint_eq(mg_lost_total(&st.lost), 7);
	n = mg_netview_top_jobs(v, 8, e);
	ck_assert_uint_eq(n, 3);
	/* job 0x10 tcp: 2 sent (2000), 1 received (7); then job 0x20, then udp. */
	ck_assert_uint_eq(e[0].job, 0x10);
	ck_assert_uint_eq(e[0].proto, IPPROTO_TCP);
	ck_assert_uint_eq(e[0].tx_packets, 2);
	ck_assert_uint_eq(e[0].tx_bytes, 2000);
	ck_assert_uint_eq(e[0].rx_packets, 1);
	ck_assert_uint_eq(e[0].rx_bytes, 7);
	ck_assert_uint_eq(e[0].family, 0);
	ck_assert_uint_eq(e[1].job, 0x20);
	ck_assert_uint_eq(e[1].rx_bytes, 1000);
	ck_assert_uint_eq(e[2].proto, IPPROTO_UDP);
	ck_assert_uint_eq(e[2].tx_bytes, 300);
	n = mg_netview_top_peers(v, 8, e);
	ck_assert_uint_eq(n, 3);
	/*
	 * The client's peer 127.0.0.2:5001 both ways, from its end
	 * 127.0.0.1:40000; the server's peer 127.0.0.1:40000, from its end
	 * 127.0.0.2:5001: each has the other's ends, as two hosts' would.
	 */
	ck_assert_uint_eq(e[0].job, 0x10);
	ck_assert_uint_eq(e[0].port, htons(5001));
	ck_assert_uint_eq(e[0].lport, htons(40000));
	ck_assert(!memcmp(e[0].laddr, "\x7f\0\0\x01", 4));
	ck_assert(!memcmp(e[0].addr, "\x7f\0\0\x02", 4));
	ck_assert_uint_eq(e[0].tx_bytes, 2000);
	ck_assert_uint_eq(e[0].rx_bytes, 7);
	ck_assert_uint_eq(e[1].job, 0x20);
	ck_assert_uint_eq(e[1].port, htons(40000));
	ck_assert_uint_eq(e[1].lport, htons(5001));
	ck_assert(!memcmp(e[1].laddr, e[0].addr, 16) && !memcmp(e[1].addr, e[0].laddr, 16));
	ck_assert_uint_eq(e[2].port, htons(5002));
	ck_assert_uint_eq(e[2].lport, htons(40001));
	/* Only the first n, best first. */
	ck_assert_uint_eq(mg_netview_top_peers(v, 1, e), 1);
	ck_assert_uint_eq(e[0].tx_bytes, 2000);
	/* The same peer from another local port: a flow of its own. */
	a.sport = 40002;
	add(v, &a, MAGNET_SKB_DIR_OUT, 0x10);
	ck_assert_uint_eq(mg_netview_top_peers(v, 8, e), 4);
	for (n = 0; n < 4 && e[n].lport != htons(40002); n++)
		;
	ck_assert_uint_lt(n, 4);
	ck_assert_uint_eq(e[n].port, htons(5001));
	ck_assert_uint_eq(e[n].tx_bytes, 1000);
	check_sums(v);
	mg_netview_reset(v);
	st = stats(v);
	ck_assert_uint_eq(st.packets + st.bytes + st.unkeyed + st.jobs.used + st.peers.used, 0);
	ck_assert_uint_eq(st.capacity, 16);
	mg_netview_free(v);
	ck_assert_int_eq(mg_netview_create(3, &v), -EINVAL);
	ck_assert_int_eq(mg_netview_create(0, &v), -EINVAL);
}
END_TEST

/* Tasks 0x501 and 0x502 of step 0x500: their packets counted as the step's. */
static __u32 step_of(void *arg, __u32 cgroup)
{
	++*(unsigned int *)arg;
	return cgroup == 0x501 || cgroup == 0x502 ? 0x500 : cgroup;
}

START_TEST(series)
{
	struct mg_netview *v = create(16);
	struct pkt a = mk(AF_INET, IPPROTO_TCP, "10.0.0.1", "10.0.0.2", 40000, 5001, 1000);
	struct pkt b = mk(AF_INET, IPPROTO_TCP, "10.0.0.1", "10.0.0.3", 40001, 5001, 300);
	struct mg_netview_entry e[8];
	unsigned int calls = 0, n;

	mg_netview_set_series(v, step_of, &calls);
	add(v, &a, MAGNET_SKB_DIR_OUT, 0x501);
	add(v, &b, MAGNET_SKB_DIR_OUT, 0x502);
	add(v, &a, MAGNET_SKB_DIR_OUT, 0x7);
	add(v, &a, MAGNET_SKB_DIR_OUT, 0);	/* no socket: job 0, not asked */
	ck_assert_uint_eq(calls, 3);
	n = mg_netview_top_jobs(v, 8, e);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(e[0].job, 0x500);
	ck_assert_uint_eq(e[0].tx_packets, 2);
	ck_assert_uint_eq(e[0].tx_bytes, 1300);
	n = mg_netview_top_peers(v, 8, e);
	ck_assert_uint_eq(n, 4);
	/* Its two peers under the step, each with its own bytes. */
	for (calls = 0; n--; )
		if (e[n].job == 0x500)
			calls += e[n].tx_bytes;
	ck_assert_uint_eq(calls, 1300);
	check_sums(v);
	mg_netview_free(v);
}
END_TEST

/*
 * Random traffic: exact against a reference under capacity, sums over it;
 * again in the same tables after a reset (nothing of the last interval
 * left in them).
 */
START_TEST(random_traffic)
{
	enum { JOBS = 6, PEERS = 40 };
	static unsigned long long ref[JOBS][PEERS][2];
	struct mg_netview *big = create(512), *small = create(8);
	struct mg_netview_entry e[512];
	unsigned int i, j, k, n, round;
	char addr[32];

	srand(42);
	for (round = 0; round < 3; round++) {
		memset(ref, 0, sizeof(ref));
		if (round) {
			mg_netview_reset(big);
			mg_netview_reset(small);
	}
	for (i = 0; i < 20000 / (round + 1); i++) {
		struct pkt p = mk(AF_INET, IPPROTO_UDP, "10.1.0.1", addr, 999, 0, 0);
		int dir = rand() % 2 ? MAGNET_SKB_DIR_OUT : MAGNET_SKB_DIR_IN;

		j = rand() % JOBS;
		k = rand() % PEERS;
		/* Peers with a skewed size: the busiest stay in a small table. */
		p.payload = (k < 4 ? 1400 : 10) + rand() % 10;
		snprintf(addr, sizeof(addr), "10.2.0.%u", k);
		p.dport = 1000 + k;
		if (dir == MAGNET_SKB_DIR_IN) {
			p.src = addr;
			p.dst = "10.1.0.1";
			p.sport = 1000 + k;
			p.dport = 999;	/* the same flow: its local end */
		}
		ref[j][k][dir == MAGNET_SKB_DIR_OUT] += p.payload;
		add(big, &p, dir, j + 1);
		add(small, &p, dir, j + 1);
	}
	check_sums(big);
	check_sums(small);
	ck_assert_uint_eq(stats(big).peers.evictions, 0);
	n = mg_netview_top_peers(big, 512, e);
	ck_assert_uint_eq(n, JOBS * PEERS);
	for (i = 0; i < n; i++) {
		k = ntohs(e[i].port) - 1000;
		ck_assert_uint_eq(e[i].tx_bytes, ref[e[i].job - 1][k][1]);
		ck_assert_uint_eq(e[i].rx_bytes, ref[e[i].job - 1][k][0]);
	}
	ck_assert_uint_gt(stats(small).peers.evictions, 0);
	ck_assert_uint_eq(stats(small).peers.used, 8);
	ck_assert_uint_eq(stats(small).jobs.evictions, 0);
	}
	mg_netview_free(big);
	mg_netview_free(small);
}
END_TEST

/*
 * Two CPUs' rings read one after the other: a flow's first segment (ts
 * 10, from the softirq's CPU) read after the next ones (ts 20, 30, from
 * the task's). Held until they settle, they count in the order sent, all
 * new, and not before they settle; counted as read (settle 0), the first
 * looks like one sent again: that is why magnetd holds them.
 */
START_TEST(tcp_rings)
{
	static const __u32 seq[] = { 1449, 2897, 1 };
	static const __u64 ts[] = { 20, 30, 10 };
	int settle;

	for (settle = 0; settle < 2; settle++) {
		struct mg_netview *v = create(4);
		struct pkt a = mk(AF_INET, IPPROTO_TCP, "10.0.0.1", "10.0.0.2", 40000, 5001, 1448);
		struct mg_netview_stats st;
		unsigned int i;

		if (settle)
			mg_netview_set_settle(v, 50000000ULL);
		for (i = 0; i < 3; i++) {
			a.seq = seq[i];
			skb_rec(&a, MAGNET_SKB_DIR_OUT, 0x10, 128);
			REC->timestamp = ts[i];
			mg_netview_add_record(v, REC);
		}
		if (settle) {
			mg_netview_settle(v, mg_now_ns(CLOCK_MONOTONIC));
			ck_assert_uint_eq(stats(v).packets, 0);
			usleep(60000);
			mg_netview_settle(v, mg_now_ns(CLOCK_MONOTONIC));
		}
		st = stats(v);
		ck_assert_uint_eq(st.packets, 3);
		ck_assert_uint_eq(st.bytes, settle ? 3 * 1448 : 2 * 1448);
		ck_assert_uint_eq(st.repeated_bytes, settle ? 0 : 1448);
		ck_assert_uint_eq(st.order_early, 0);
		check_sums(v);
		mg_netview_free(v);
	}
}
END_TEST

/*
 * TCP's bytes once per flow and direction: a segment sent again, and a
 * duplicate received, count as packets and repeated bytes, not bytes; a
 * segment received after the next one (a hole) counts once, its copy not;
 * the tracker outlives a reset (an interval), so a retransmission in the
 * next interval is repeated too; a full tracker evicts, counted.
 */
START_TEST(tcp_once)
{
	struct mg_netview *v = create(4);
	struct pkt a = mk(AF_INET, IPPROTO_TCP, "10.0.0.1", "10.0.0.2", 40000, 5001, 1448);
	struct pkt b = mk(AF_INET, IPPROTO_TCP, "10.0.0.2", "10.0.0.1", 5001, 40000, 1000);
	struct mg_netview_entry e[8];
	struct mg_netview_stats st;
	unsigned int i;

	for (i = 0; i < 4; i++) {
		a.seq = 1 + i * 1448;
		add(v, &a, MAGNET_SKB_DIR_OUT, 0x10);
	}
	a.seq = 1 + 1448;		/* the second sent again */
	add(v, &a, MAGNET_SKB_DIR_OUT, 0x10);
	b.seq = 9000;
	add(v, &b, MAGNET_SKB_DIR_IN, 0x10);
	b.seq = 11000;			/* [10000, 11000) not yet */
	add(v, &b, MAGNET_SKB_DIR_IN, 0x10);
	b.seq = 10000;
	add(v, &b, MAGNET_SKB_DIR_IN, 0x10);
	add(v, &b, MAGNET_SKB_DIR_IN, 0x10);	/* a duplicate */
	st = stats(v);
	ck_assert_uint_eq(st.packets, 9);
	ck_assert_uint_eq(st.bytes, 4 * 1448 + 3000);
	ck_assert_uint_eq(st.repeated_bytes, 1448 + 1000);
	ck_assert_uint_eq(mg_netview_top_jobs(v, 8, e), 1);
	ck_assert_uint_eq(e[0].tx_packets, 5);
	ck_assert_uint_eq(e[0].tx_bytes, 4 * 1448);
	ck_assert_uint_eq(e[0].rx_packets, 4);
	ck_assert_uint_eq(e[0].rx_bytes, 3000);
	ck_assert_uint_eq(mg_netview_top_peers(v, 8, e), 1);
	ck_assert_uint_eq(e[0].tx_bytes, 4 * 1448);
	ck_assert_uint_eq(e[0].rx_bytes, 3000);
	check_sums(v);
	/* The next interval: a late retransmission of the first interval's. */
	mg_netview_reset(v);
	a.seq = 1;
	add(v, &a, MAGNET_SKB_DIR_OUT, 0x10);
	st = stats(v);
	ck_assert_uint_eq(st.packets, 1);
	ck_assert_uint_eq(st.bytes, 0);
	ck_assert_uint_eq(st.repeated_bytes, 1448);
	ck_assert_uint_eq(mg_netview_top_jobs(v, 8, e), 1);
	ck_assert_uint_eq(e[0].tx_packets, 1);
	ck_assert_uint_eq(e[0].tx_bytes, 0);
	/* 4 flows' places: 6 more flows evict, counted per interval. */
	ck_assert_uint_eq(st.seq_evictions, 0);
	for (i = 0; i < 6; i++) {
		a.sport = 41000 + i;
		a.seq = 1;
		add(v, &a, MAGNET_SKB_DIR_OUT, 0x10);
	}
	ck_assert_uint_eq(stats(v).seq_evictions, 4);
	mg_netview_reset(v);
	ck_assert_uint_eq(stats(v).seq_evictions + stats(v).repeated_bytes, 0);
	mg_netview_free(v);
}
END_TEST

/* Records that are not packets do not count. */
START_TEST(other_records)
{
	struct mg_netview *v = create(4);
	struct mg_record_hdr h = { .event_id = 16, .pid = 1, .tgid = 1 };
	__u64 args[2] = { 1, 2 };

	ck_assert_int_gt(mg_record_encode_kprobe_cap(rec64, sizeof(rec64), &h, args, 2, NULL), 0);
	mg_netview_add_record(v, REC);
	ck_assert_uint_eq(stats(v).packets + stats(v).unkeyed, 0);
	mg_netview_free(v);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("netview");
	TCase *tc = tcase_create("netview");

	tcase_add_test(tc, flows);
	tcase_add_test(tc, ipv6_extensions);
	tcase_add_test(tc, exact);
	tcase_add_test(tc, random_traffic);
	tcase_add_test(tc, other_records);
	tcase_add_test(tc, series);
	tcase_add_test(tc, tcp_once);
	tcase_add_test(tc, tcp_rings);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
