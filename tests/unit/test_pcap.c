// SPDX-License-Identifier: GPL-2.0
/*
 * lib/pcap.c on the cases t-pcap.sh's real packets do not reach: original
 * lengths where the IP header has none (TSO, IPv6 jumbograms, ARP, no
 * data), a tsc trace's times, hostile probe and task names in comments,
 * what is counted rather than written. The pcapng is parsed here from the
 * format's definition, block by block.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>

#include "pcap.h"
#include "probes.h"
#include "record.h"
#include "testutil.h"
#include "trace.h"

struct epb {
	__u32 iface;
	__u64 ts;
	__u32 caplen, orig;
	const __u8 *data;
	char comment[1024];
	__u32 flags;
	bool has_flags;
};

struct capture {
	char *buf;
	size_t len;
	__u16 linktype[16];
	char ifname[16][32];
	unsigned int nifs;
	struct epb epb[16];
	unsigned int nepb;
};

static __u32 get32(const char *p)
{
	__u32 v;

	memcpy(&v, p, 4);
	return v;
}

static __u16 get16(const char *p)
{
	__u16 v;

	memcpy(&v, p, 2);
	return v;
}

/* Options from o to end: comment, if_name, epb_flags. */
static void options(const char *o, const char *end, char *comment, char *name,
		    struct epb *e)
{
	while (o + 4 <= end) {
		__u16 code = get16(o), len = get16(o + 2);

		ck_assert(o + 4 + len <= end);
		if (!code) {
			ck_assert_uint_eq(len, 0);
			ck_assert_ptr_eq(o + 4, end);
			return;
		}
		if (code == 1 && comment) {
			memcpy(comment, o + 4, len);
			comment[len] = 0;
			ck_assert_uint_eq(strlen(comment), len);
		}
		if (code == 2 && name) {
			memcpy(name, o + 4, len);
			name[len] = 0;
		}
		if (code == 2 && e) {
			ck_assert_uint_eq(len, 4);
			e->flags = get32(o + 4);
			e->has_flags = true;
		}
		o += 4 + ((len + 3) & ~3U);
	}
	ck_abort_msg("options without opt_endofopt");
}

static void parse(struct capture *c)
{
	size_t off = 0;

	ck_assert_uint_ge(c->len, 28);
	ck_assert_uint_eq(get32(c->buf), 0x0a0d0d0a);
	ck_assert_uint_eq(get32(c->buf + 8), 0x1a2b3c4d);
	while (off < c->len) {
		const char *b = c->buf + off;
		__u32 type = get32(b), n = get32(b + 4);

		ck_assert_uint_eq(n % 4, 0);
		ck_assert_uint_ge(n, 12);
		ck_assert_uint_le(off + n, c->len);
		ck_assert_uint_eq(get32(b + n - 4), n);
		if (type == 1) {
			ck_assert_uint_lt(c->nifs, 16);
			c->linktype[c->nifs] = get16(b + 8);
			options(b + 16, b + n - 4, NULL, c->ifname[c->nifs], NULL);
			c->nifs++;
		} else if (type == 6) {
			struct epb *e = &c->epb[c->nepb++];

			e->iface = get32(b + 8);
			ck_assert_uint_lt(e->iface, c->nifs);
			e->ts = (__u64)get32(b + 12) << 32 | get32(b + 16);
			e->caplen = get32(b + 20);
			e->orig = get32(b + 24);
			e->data = (const __u8 *)b + 28;
			options(b + 28 + ((e->caplen + 3) & ~3U), b + n - 4,
				e->comment, NULL, e);
		} else {
			ck_assert_uint_eq(type, 0x0a0d0d0a);
			ck_assert_uint_eq(off, 0);
		}
		off += n;
	}
}

static const char probes_text[] =
	"16\tkprobe\tip_rcv\t0\t1\t0\t128@0\n"
	"17\tkprobe\tevil\x1b[2J name\t0\t1\t0\t128@0\n";

struct fixture {
	struct mg_trace_info info;
	struct mg_probe_table pt;
	FILE *f;
	struct mg_pcap *p;
	struct capture c;
};

static void start(struct fixture *x, bool classic, const char *clock,
		  __u32 tsc_khz)
{
	struct mg_pcap_opts o = { .classic = classic };

	memset(x, 0, sizeof(*x));
	x->info.ncpus = 1;
	x->info.start_realtime_ns = 1700000000000000000ULL;
	x->info.start_clock_ns = 1000;
	snprintf(x->info.clock, sizeof(x->info.clock), "%s", clock);
	x->info.tsc_khz = tsc_khz;
	snprintf(x->info.hostname, sizeof(x->info.hostname), "h");
	snprintf(x->info.release, sizeof(x->info.release), "6.1");
	ck_assert_int_eq(mg_probes_parse(&x->pt, probes_text, sizeof(probes_text) - 1), 0);
	o.info = &x->info;
	o.probes = &x->pt;
	x->f = open_memstream(&x->c.buf, &x->c.len);
	ck_assert_ptr_nonnull(x->f);
	ck_assert_int_eq(mg_pcap_open(&x->p, x->f, &o), 0);
}

static void finish(struct fixture *x, bool classic)
{
	ck_assert_int_eq(mg_pcap_finish(x->p), 0);
	ck_assert_int_eq(fclose(x->f), 0);
	if (!classic)
		parse(&x->c);
}

static void stop(struct fixture *x)
{
	mg_pcap_free(x->p);
	mg_probes_free(&x->pt);
	free(x->c.buf);
}

/* One skb record through feed and write. */
static void skb(struct fixture *x, __u16 id, __u64 ts, __u32 pid, __u8 layer,
		__u16 proto, __u32 len, const void *data, __u32 caplen)
{
	__u64 buf[MAGNET_RECORD_MAX / 8];
	struct mg_record_hdr h = {
		.event_id = id, .timestamp = ts, .pid = pid, .tgid = pid,
		.cgroup = 7, .abstract_id = 0xabc,
	};
	struct magnet_skb s = {
		.len = len, .caplen = caplen, .ifindex = 4,
		.protocol = htons(proto), .direction = MAGNET_SKB_DIR_IN,
		.layer = layer,
	};

	ck_assert_int_gt(mg_record_encode_skb(buf, sizeof(buf), &h, &s, data, 128), 0);
	ck_assert_int_eq(mg_pcap_feed(x->p, (void *)buf), 0);
	ck_assert_int_eq(mg_pcap_write(x->p, (void *)buf), 0);
}

START_TEST(orig_lengths)
{
	struct fixture x;
	__u8 v4[40] = { 0x45 }, v6[48] = { 0x60 }, arp[42] = { 0 }, junk[20];

	start(&x, false, "mono", 0);
	/* TSO: total length 0; skb->len says 64000. */
	skb(&x, 16, 2000, 1, MAGNET_SKB_LAYER_NETWORK, ETH_P_IP, 64000, v4, 40);
	/* IPv6 payload length 0: a jumbogram or BIG TCP. */
	skb(&x, 16, 2001, 1, MAGNET_SKB_LAYER_NETWORK, ETH_P_IPV6, 70000, v6, 48);
	/* ARP received: skb->data already past the 14 bytes data[] starts with. */
	arp[12] = 0x08;
	arp[13] = 0x06;
	skb(&x, 16, 2002, 1, MAGNET_SKB_LAYER_LINK, ETH_P_ARP, 28, arp, 42);
	/* Nothing captured. */
	skb(&x, 16, 2003, 1, MAGNET_SKB_LAYER_NETWORK, ETH_P_IP, 1500, NULL, 0);
	/* Not IP, skb->len below caplen (a bogus record): caplen. */
	memset(junk, 0xee, sizeof(junk));
	skb(&x, 16, 2004, 1, MAGNET_SKB_LAYER_NETWORK, ETH_P_IP, 10, junk, 20);
	/* IPv4 length 60 in a 20-byte capture, skb->len 74 (MAC header too). */
	v4[3] = 60;
	skb(&x, 16, 2005, 1, MAGNET_SKB_LAYER_NETWORK, ETH_P_IP, 74, v4, 20);
	finish(&x, false);

	ck_assert_uint_eq(x.c.nepb, 6);
	ck_assert_uint_eq(x.c.nifs, 2);
	ck_assert_uint_eq(x.c.linktype[0], MG_LINKTYPE_RAW);
	ck_assert_uint_eq(x.c.linktype[1], MG_LINKTYPE_ETHERNET);
	ck_assert_str_eq(x.c.ifname[0], "ifindex4");
	ck_assert_uint_eq(x.c.epb[0].orig, 64000);
	ck_assert_uint_eq(x.c.epb[1].orig, 70000);
	ck_assert_uint_eq(x.c.epb[2].orig, 42);
	ck_assert_uint_eq(x.c.epb[2].iface, 1);
	ck_assert_uint_eq(x.c.epb[3].caplen, 0);
	ck_assert_uint_eq(x.c.epb[3].orig, 1500);
	ck_assert_uint_eq(x.c.epb[4].orig, 20);
	ck_assert_uint_eq(x.c.epb[5].caplen, 20);
	ck_assert_uint_eq(x.c.epb[5].orig, 60);
	ck_assert_int_eq(memcmp(x.c.epb[4].data, junk, 20), 0);
	ck_assert(x.c.epb[0].has_flags);
	ck_assert_uint_eq(x.c.epb[0].flags, 1);		/* inbound */
	ck_assert_uint_eq(mg_pcap_stats(x.p)->packets, 6);
	ck_assert_uint_eq(mg_pcap_stats(x.p)->linktypes, 2);
	stop(&x);
}
END_TEST

START_TEST(tsc_times)
{
	struct fixture x;
	struct mg_pcap *p;
	struct mg_pcap_opts o = { 0 };
	__u8 v4[20] = { 0x45, 0, 0, 20 };
	FILE *f;

	/* 2 GHz: 2 cycles a ns; 1000 cycles before the start, 3000 after. */
	start(&x, false, "tsc", 2000000);
	skb(&x, 16, 0, 1, MAGNET_SKB_LAYER_NETWORK, ETH_P_IP, 20, v4, 20);
	skb(&x, 16, 4000, 1, MAGNET_SKB_LAYER_NETWORK, ETH_P_IP, 20, v4, 20);
	finish(&x, false);
	ck_assert_uint_eq(x.c.nepb, 2);
	ck_assert_uint_eq(x.c.epb[0].ts, 1700000000000000000ULL - 500);
	ck_assert_uint_eq(x.c.epb[1].ts, 1700000000000000000ULL + 1500);
	ck_assert_msg(strstr(x.c.epb[1].comment, " ts=4000 "), "%s", x.c.epb[1].comment);
	stop(&x);

	/* Cycles cannot become time without the frequency. */
	x.info.tsc_khz = 0;
	o.info = &x.info;
	f = fopen("/dev/null", "w");
	ck_assert_int_eq(mg_pcap_open(&p, f, &o), -EINVAL);
	ck_assert_ptr_null(p);
	fclose(f);
}
END_TEST

START_TEST(comments)
{
	struct fixture x;
	__u64 buf[16];
	struct mg_record_hdr h = { .cpu = 0, .pid = 42, .tgid = 40, .abstract_id = 7 };
	__u8 v4[20] = { 0x45, 0, 0, 20 };
	const unsigned char *c;

	start(&x, false, "mono", 0);
	ck_assert_int_gt(mg_record_encode_task(buf, sizeof(buf), &h, "a b\xff\x1b"), 0);
	ck_assert_int_eq(mg_pcap_feed(x.p, (void *)buf), 0);
	ck_assert_int_eq(mg_pcap_write(x.p, (void *)buf), 0);
	skb(&x, 17, 1000000002000ULL, 42, MAGNET_SKB_LAYER_NETWORK, ETH_P_IP, 20, v4, 20);
	skb(&x, 99, 1000000002001ULL, 43, MAGNET_SKB_LAYER_NETWORK, ETH_P_IP, 20, v4, 20);
	finish(&x, false);
	ck_assert_uint_eq(x.c.nepb, 2);
	ck_assert_str_eq(x.c.epb[0].comment,
			 "probe=evil\\x1b[2J\\x20name(17) ts=1000.000002000 cpu=0 pid=42 tgid=42 comm=a\\x20b\\xff\\x1b cgroup=7 skb=0xabc dir=in ifindex=4 layer=network len=20");
	/* No TASK record for 43: no comm; an id not in the table. */
	ck_assert_str_eq(x.c.epb[1].comment,
			 "probe=unknown(99) ts=1000.000002001 cpu=0 pid=43 tgid=43 cgroup=7 skb=0xabc dir=in ifindex=4 layer=network len=20");
	for (c = (const unsigned char *)x.c.epb[0].comment; *c; c++)
		ck_assert(*c >= 0x20 && *c < 0x7f);
	stop(&x);
}
END_TEST

START_TEST(counted)
{
	struct fixture x;
	__u64 buf[16];
	struct mg_record_hdr h = { .event_id = 16, .pid = 1, .tgid = 1 };
	struct magnet_lost lost = { .full = 4, .nesting = 1 };
	__u8 v4[20] = { 0x45, 0, 0, 20 };
	__u8 eth[34] = { [12] = 0x08, [14] = 0x45, [17] = 20 };
	const struct mg_pcap_stats *st;
	struct {
		__u32 magic;
		__u16 major, minor;
		__u32 zone, sigfigs, snaplen, linktype;
		__u32 sec, nsec, caplen, orig;
		__u8 data[20];
	} __attribute__((packed)) *pc;

	start(&x, true, "mono", 0);
	ck_assert_int_gt(mg_record_encode_kprobe(buf, sizeof(buf), &h, NULL, 0), 0);
	ck_assert_int_eq(mg_pcap_write(x.p, (void *)buf), 0);
	ck_assert_int_gt(mg_record_encode_lost(buf, sizeof(buf), &h, &lost), 0);
	ck_assert_int_eq(mg_pcap_write(x.p, (void *)buf), 0);
	skb(&x, 16, 1000, 1, MAGNET_SKB_LAYER_DATA, ETH_P_IP, 20, v4, 20);
	skb(&x, 16, 1000, 1, MAGNET_SKB_LAYER_LINK, ETH_P_IP, 20, eth, 34);
	skb(&x, 16, 1001, 1, MAGNET_SKB_LAYER_NETWORK, ETH_P_IP, 20, v4, 20);
	finish(&x, true);
	st = mg_pcap_stats(x.p);
	ck_assert_uint_eq(st->packets, 1);
	ck_assert_uint_eq(st->not_skb, 1);
	ck_assert_uint_eq(st->data_layer, 1);
	ck_assert_uint_eq(st->link_layer, 1);
	ck_assert_uint_eq(st->lost_records, 1);
	ck_assert_uint_eq(st->lost, 5);
	ck_assert_uint_eq(x.c.len, sizeof(*pc));
	pc = (void *)x.c.buf;
	ck_assert_uint_eq(pc->magic, 0xa1b23c4d);
	ck_assert_uint_eq(pc->linktype, MG_LINKTYPE_RAW);
	ck_assert_uint_eq(pc->sec, 1700000000);
	ck_assert_uint_eq(pc->nsec, 1);
	ck_assert_uint_eq(pc->caplen, 20);
	ck_assert_uint_eq(pc->orig, 20);
	ck_assert_int_eq(memcmp(pc->data, v4, 20), 0);
	stop(&x);
}
END_TEST

START_TEST(empty)
{
	struct fixture x;

	start(&x, false, "mono", 0);
	finish(&x, false);
	ck_assert_uint_eq(x.c.nepb, 0);
	ck_assert_uint_eq(x.c.nifs, 1);
	ck_assert_uint_eq(x.c.linktype[0], MG_LINKTYPE_RAW);
	ck_assert_str_eq(x.c.ifname[0], "none");
	stop(&x);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pcap");
	TCase *tc = tcase_create("pcap");

	tcase_add_test(tc, orig_lengths);
	tcase_add_test(tc, tsc_times);
	tcase_add_test(tc, comments);
	tcase_add_test(tc, counted);
	tcase_add_test(tc, empty);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
