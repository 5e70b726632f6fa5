// SPDX-License-Identifier: GPL-2.0
/*
 * gen-pcap: write a trace file of skb records holding real packets built
 * here (IPv4 and IPv6, UDP and TCP, with correct checksums; one cut short,
 * as a probe's capture length cuts it; Ethernet, loopback's all-zero MAC
 * header, a tunnel's frame without one), with TASK, LOST, a data-layer skb
 * and a generic probe record around them, for tests/unit/t-pcap.sh.
 *
 * On stdout: one line per packet magnet-dump --pcap must write, in order,
 * tab-separated: the fields t-pcap asks tshark for (frame.time_epoch
 * frame.cap_len frame.len frame.interface_id frame.packet_flags_direction
 * ip.src ip.dst ipv6.src ipv6.dst udp.srcport udp.dstport tcp.srcport
 * tcp.dstport udp.payload tcp.payload frame.comment), then two of its own:
 * the captured bytes in hex (what tcpdump -xx shows) and the start of
 * tcpdump's line. All of it is worked out here from the packets and from
 * docs/magnet-dump.md, not from lib/pcap.c.
 *
 * gen-pcap [-c] [-e] FILE: -c the lines for --pcap-classic (network-layer
 * packets only); -e a trace with no skb record at all (no lines).
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "record.h"
#include "trace.h"

#define CLOCK0		1000000000000ULL	/* mono ns at the trace's start */
#define REALTIME0	1700000000123456789ULL	/* the epoch at that instant */
#define NCPUS		2

enum { NET = MAGNET_SKB_LAYER_NETWORK, LINK = MAGNET_SKB_LAYER_LINK,
       DATA = MAGNET_SKB_LAYER_DATA };
enum { ETH, LO, NOMAC };		/* what is in front of IP at LINK */

struct pkt {
	unsigned int cpu, id, pid;
	const char *comm;		/* NULL: no TASK record names it */
	bool intr;
	__u32 cgroup;
	__u64 skb;
	unsigned int layer, mac, dir, ifindex;
	int family, proto;		/* AF_INET/AF_INET6, 6/17 */
	const char *src, *dst;
	unsigned int sport, dport;
	const char *payload;		/* NULL: plen bytes 0, 1, 2... */
	unsigned int plen;
	unsigned int caplen;		/* 0: all of it */
	int len_adj;			/* skb->len - the IP packet's length */
};

static const char *const names[] = {
	[16] = "ip_output", [17] = "__netif_receive_skb", [18] = "ip6_output",
	[19] = "dev_queue_xmit", [20] = "kfree_skb", [21] = "tcp_sendmsg",
};

static const struct pkt pkts[] = {
	/* Before magnet-read started: earlier than the header's instant. */
	{ 0, 16, 4242, "curl", false, 4321, 0xffff888003a1c000ULL, NET, 0,
	  MAGNET_SKB_DIR_OUT, 2, AF_INET, 17, "10.1.2.3", "192.0.2.77",
	  40001, 53000, "hello, magnet udp", 0, 0, 0 },
	/* Received: data[] at the MAC header, skb->data already past it. */
	{ 1, 17, 77, "ksoftirqd/1", true, 1, 0xffff888003a1d000ULL, LINK, ETH,
	  MAGNET_SKB_DIR_IN, 3, AF_INET, 6, "198.51.100.9", "10.1.2.3",
	  34567, 45678, NULL, 32, 0, 0 },
	{ 0, 18, 4300, "Web Content", false, 9876, 0xffff888003a1e000ULL, NET, 0,
	  MAGNET_SKB_DIR_OUT, 2, AF_INET6, 17, "2001:db8::1", "2001:db8:0:1::2",
	  33333, 44444, "six over udp", 0, 0, 0 },
	/* Cut to 96 bytes by the probe's capture length. */
	{ 1, 17, 4242, "curl", false, 4321, 0xffff888003a1f000ULL, NET, 0,
	  MAGNET_SKB_DIR_IN, 2, AF_INET, 17, "192.0.2.77", "10.1.2.3",
	  53000, 40001, NULL, 1000, 96, 0 },
	{ 0, 19, 4242, "curl", false, 4321, 0xffff888003a20000ULL, LINK, LO,
	  MAGNET_SKB_DIR_OUT, 1, AF_INET, 6, "127.0.0.1", "127.0.0.1",
	  50000, 50001, "ping over lo", 0, 0, 14 },
	/* A tunnel's frame has no MAC header; nobody named pid 999. */
	{ 1, 17, 999, NULL, true, 1, 0xffff888003a21000ULL, LINK, NOMAC,
	  MAGNET_SKB_DIR_UNKNOWN, 5, AF_INET, 17, "172.16.0.1", "172.16.0.2",
	  40100, 40200, "tunnelled", 0, 0, 0 },
	/* The first packet again, further down the stack. */
	{ 0, 19, 4242, "curl", false, 4321, 0xffff888003a1c000ULL, LINK, ETH,
	  MAGNET_SKB_DIR_OUT, 2, AF_INET, 17, "10.1.2.3", "192.0.2.77",
	  40001, 53000, "hello, magnet udp", 0, 0, 14 },
	/* Not written: no header offset known. */
	{ 1, 20, 4242, "curl", false, 4321, 0xffff888003a22000ULL, DATA, 0,
	  MAGNET_SKB_DIR_UNKNOWN, 0, AF_INET, 17, "10.9.9.9", "10.9.9.8",
	  1, 2, "data layer", 0, 0, 0 },
};
#define NPKTS (sizeof(pkts) / sizeof(pkts[0]))

struct stream {
	__u64 buf[8192];
	size_t len;
	__u32 named[MAGNET_TASK_SLOTS];
};

static struct stream streams[NCPUS];

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static void append(unsigned int cpu, ssize_t n)
{
	if (n < 0) {
		fprintf(stderr, "gen-pcap: encode: %zd\n", n);
		exit(2);
	}
	streams[cpu].len += n;
}

static void *tail(unsigned int cpu, size_t *room)
{
	struct stream *s = &streams[cpu];

	*room = sizeof(s->buf) - s->len;
	return (char *)s->buf + s->len;
}

static __u32 csum_add(__u32 sum, const __u8 *b, size_t n)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		sum += b[i] << 8 | b[i + 1];
	if (n & 1)
		sum += b[n - 1] << 8;
	return sum;
}

static __u16 csum_fold(__u32 sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

static void put16(__u8 *b, unsigned int v)
{
	b[0] = v >> 8;
	b[1] = v;
}

/* The IP packet of p at out; its length. */
static size_t build_ip(const struct pkt *p, __u8 *out)
{
	size_t iph = p->family == AF_INET ? 20 : 40;
	size_t l4h = p->proto == 17 ? 8 : 20;
	size_t plen = p->payload ? strlen(p->payload) : p->plen;
	size_t total = iph + l4h + plen, i;
	__u8 *l4 = out + iph, pseudo[40];
	__u32 sum;

	memset(out, 0, total);
	if (p->family == AF_INET) {
		out[0] = 0x45;
		put16(out + 2, total);
		put16(out + 4, 0x1234);		/* id */
		out[6] = 0x40;			/* DF */
		out[8] = 64;
		out[9] = p->proto;
		inet_pton(AF_INET, p->src, out + 12);
		inet_pton(AF_INET, p->dst, out + 16);
		put16(out + 10, csum_fold(csum_add(0, out, 20)));
	} else {
		out[0] = 0x60;
		put16(out + 4, l4h + plen);
		out[6] = p->proto;
		out[7] = 64;
		inet_pton(AF_INET6, p->src, out + 8);
		inet_pton(AF_INET6, p->dst, out + 24);
	}
	put16(l4, p->sport);
	put16(l4 + 2, p->dport);
	if (p->proto == 17) {
		put16(l4 + 4, l4h + plen);
	} else {
		put16(l4 + 4, 0x0001);		/* seq 0x00010000 */
		put16(l4 + 10, 0x0002);		/* ack 0x00000002 */
		l4[12] = 5 << 4;
		l4[13] = 0x18;			/* PSH, ACK */
		put16(l4 + 14, 512);
	}
	for (i = 0; i < plen; i++)
		l4[l4h + i] = p->payload ? (__u8)p->payload[i] : (__u8)i;
	/* The pseudo-header, then the segment. */
	memset(pseudo, 0, sizeof(pseudo));
	if (p->family == AF_INET) {
		memcpy(pseudo, out + 12, 8);
		pseudo[9] = p->proto;
		put16(pseudo + 10, l4h + plen);
		sum = csum_add(0, pseudo, 12);
	} else {
		memcpy(pseudo, out + 8, 32);
		sum = csum_add(0, pseudo, 32);
		sum += l4h + plen + p->proto;
	}
	put16(l4 + (p->proto == 17 ? 6 : 16), csum_fold(csum_add(sum, l4, l4h + plen)));
	return total;
}

static void hex(FILE *f, const __u8 *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		fprintf(f, "%02x", b[i]);
}

/* What docs/magnet-dump.md says text escaping of a comm does here. */
static void comm_field(char *out, const char *comm)
{
	for (; *comm; comm++)
		out += *comm == ' ' ? sprintf(out, "\\x20") : sprintf(out, "%c", *comm);
	*out = 0;
}

static void task_record(unsigned int cpu, const struct pkt *p, __u64 ts)
{
	struct stream *s = &streams[cpu];
	struct mg_record_hdr h = {
		.cpu = cpu, .pid = p->pid, .tgid = p->pid, .cgroup = p->cgroup,
		.abstract_id = p->cgroup, .timestamp = ts,
	};
	size_t room;
	void *at = tail(cpu, &room);

	if (!p->comm || s->named[p->pid % MAGNET_TASK_SLOTS] == p->pid)
		return;
	s->named[p->pid % MAGNET_TASK_SLOTS] = p->pid;
	append(cpu, mg_record_encode_task(at, room, &h, p->comm));
}

int main(int argc, char **argv)
{
	static const char probes_text[] =
		"16\tkprobe\tip_output\t0\t9\t0\t128@0\n"
		"17\tkprobe\t__netif_receive_skb\t0\t9\t0\t96@0\n"
		"18\tkprobe\tip6_output\t0\t9\t0\t128@0\n"
		"19\tkprobe\tdev_queue_xmit\t0\t9\t0\t128@0\n"
		"20\tkprobe\tkfree_skb\t0\t9\t0\t128@0\n"
		"21\tkprobe\ttcp_sendmsg\t3\t9\t0\n";
	struct mg_trace_info info = {
		.ncpus = NCPUS,
		.start_realtime_ns = REALTIME0,
		.start_clock_ns = CLOCK0,
		.clock = "mono",
		.hostname = "pcaphost",
		.release = "6.1.0-test",
		.probes = probes_text,
		.probes_len = sizeof(probes_text) - 1,
	};
	struct mg_trailer_cpu tc[NCPUS] = { { .cpu = 0 }, { .cpu = 1 } };
	struct mg_trailer tr = {
		.stop_realtime_ns = REALTIME0 + 1000000000ULL,
		.stop_clock_ns = CLOCK0 + 1000000000ULL,
		.ncpus = NCPUS, .cpu = tc,
	};
	static const char *const dirs[] = { "unknown", "out", "in" };
	bool classic = false, empty = false;
	unsigned int i, ifs[16][2], nifs = 0;
	int opt, fd;
	__u64 ts = CLOCK0 - 5000;

	while ((opt = getopt(argc, argv, "ce")) != -1) {
		if (opt == 'c')
			classic = true;
		else if (opt == 'e')
			empty = true;
		else
			goto usage;
	}
	if (optind + 1 != argc) {
usage:
		fprintf(stderr, "usage: gen-pcap [-c] [-e] FILE\n");
		return 1;
	}

	for (i = 0; i < NPKTS && !empty; i++, ts += 100000 + 7 * i) {
		const struct pkt *p = &pkts[i];
		struct mg_record_hdr h = {
			.event_id = p->id, .intr = p->intr, .cpu = p->cpu,
			.cgroup = p->cgroup, .abstract_id = p->skb, .timestamp = ts,
			.pid = p->pid, .tgid = p->pid,
		};
		unsigned int lt = p->layer == LINK && p->mac != NOMAC ? 1 : 101;
		unsigned int id, caplen, orig;
		__u8 frame[2048];
		size_t off = 0, iplen, room;
		void *at;
		struct magnet_skb s = { 0 };
		char comm[80] = "", wantcomm[100] = "";
		__u64 wall = REALTIME0 + (ts - CLOCK0);

		if (p->layer == LINK && p->mac == ETH) {
			static const __u8 mac[12] = {
				0x02, 0, 0, 0, 0, 0x01, 0x02, 0, 0, 0, 0, 0x02 };

			memcpy(frame, mac, 12);
			off = 14;
		} else if (p->layer == LINK && p->mac == LO) {
			memset(frame, 0, 12);
			off = 14;
		}
		if (off)
			put16(frame + 12, p->family == AF_INET ? 0x0800 : 0x86dd);
		iplen = build_ip(p, frame + off);
		orig = off + iplen;
		caplen = p->caplen ? p->caplen : orig;
		s.len = iplen + p->len_adj;
		s.caplen = caplen;
		s.ifindex = p->ifindex;
		s.protocol = htons(p->family == AF_INET ? 0x0800 : 0x86dd);
		s.direction = p->dir;
		s.layer = p->layer;

		task_record(p->cpu, p, ts);
		at = tail(p->cpu, &room);
		append(p->cpu, mg_record_encode_skb(at, room, &h, &s, frame, 128));
		tc[p->cpu].records++;
		if (p->layer == DATA || (classic && p->layer != NET))
			continue;

		/* pcapng interface ids: one per (link type, ifindex), as met. */
		for (id = 0; id < nifs; id++)
			if (ifs[id][0] == lt && ifs[id][1] == p->ifindex)
				break;
		if (id == nifs) {
			ifs[nifs][0] = lt;
			ifs[nifs++][1] = p->ifindex;
		}
		printf("%llu.%09llu\t%u\t%u\t", (unsigned long long)(wall / 1000000000ULL),
		       (unsigned long long)(wall % 1000000000ULL), caplen, orig);
		if (classic)		/* no interfaces, no flags */
			printf("\t\t");
		else if (p->dir)	/* epb_flags: 1 inbound, 2 outbound */
			printf("%u\t0x%08x\t", id,
			       p->dir == MAGNET_SKB_DIR_IN ? 1 : 2);
		else
			printf("%u\t\t", id);
		if (p->family == AF_INET)
			printf("%s\t%s\t\t\t", p->src, p->dst);
		else
			printf("\t\t%s\t%s\t", p->src, p->dst);
		if (p->proto == 17)
			printf("%u\t%u\t\t\t", p->sport, p->dport);
		else
			printf("\t\t%u\t%u\t", p->sport, p->dport);
		{
			size_t l4 = off + (p->family == AF_INET ? 20 : 40) +
				    (p->proto == 17 ? 8 : 20);

			if (p->proto == 6)
				putchar('\t');
			if (caplen > l4)
				hex(stdout, frame + l4, caplen - l4);
			if (p->proto == 17)
				putchar('\t');
			putchar('\t');
		}
		if (!classic) {
			if (p->comm) {
				comm_field(comm, p->comm);
				snprintf(wantcomm, sizeof(wantcomm), " comm=%s", comm);
			}
			printf("probe=%s(%u) ts=%llu.%09llu cpu=%u pid=%u tgid=%u%s cgroup=%u skb=0x%llx dir=%s ifindex=%u layer=%s len=%u%s",
			       names[p->id], p->id,
			       (unsigned long long)(ts / 1000000000ULL),
			       (unsigned long long)(ts % 1000000000ULL), p->cpu,
			       p->pid, p->pid, wantcomm, p->cgroup,
			       (unsigned long long)p->skb, dirs[p->dir],
			       p->ifindex, p->layer == NET ? "network" : "link",
			       s.len, p->intr ? " intr" : "");
		}
		putchar('\t');
		hex(stdout, frame, caplen);
		printf("\t%llu.%09llu %s %s.%u > %s.%u: \n",
		       (unsigned long long)(wall / 1000000000ULL),
		       (unsigned long long)(wall % 1000000000ULL),
		       p->family == AF_INET ? "IP" : "IP6", p->src, p->sport,
		       p->dst, p->dport);
	}

	/* Around the packets: a generic probe's record and a LOST record. */
	{
		struct mg_record_hdr h = {
			.event_id = 21, .cpu = 0, .cgroup = 4321,
			.abstract_id = 0xffff888003b00000ULL, .timestamp = ts,
			.pid = 4242, .tgid = 4242,
		};
		struct magnet_lost lost = { .full = 3, .overwritten = 2 };
		__u64 args[3] = { 1, 2, 3 };
		size_t room;
		void *at;

		task_record(0, &pkts[0], ts);
		at = tail(0, &room);
		append(0, mg_record_encode_kprobe(at, room, &h, args, 3));
		tc[0].records++;
		h.cpu = 1;
		h.pid = h.tgid = h.cgroup = 0;
		h.abstract_id = 0;
		h.timestamp = ts + 1;
		at = tail(1, &room);
		append(1, mg_record_encode_lost(at, room, &h, &lost));
		tc[1].lost = lost;
	}

	fd = open(argv[optind], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die(argv[optind]);
	if (mg_trace_write_header(fd, &info))
		die("header");
	for (i = 0; i < NCPUS; i++) {
		tc[i].bytes = streams[i].len;
		if (mg_trace_write_chunk(fd, i, streams[i].buf, streams[i].len))
			die("chunk");
	}
	if (mg_trace_write_trailer(fd, &tr) || close(fd))
		die("trailer");
	return 0;
}
