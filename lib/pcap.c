// SPDX-License-Identifier: GPL-2.0
/*
 * pcapng and classic pcap from skb records (lib/pcap.h).
 *
 * Both formats are written in host byte order, which their magic numbers
 * announce, so readers on any host swap as needed. pcapng blocks are built
 * whole in a buffer and written with one fwrite: a block's total length
 * appears at both ends and must be exact, tshark refuses the file
 * otherwise. Everything in a block is padded to 32 bits.
 *
 * Times: records carry the trace clock (CLOCK_MONOTONIC ns, or TSC
 * cycles); captures want the epoch. The trace header sampled the trace
 * clock and CLOCK_REALTIME at the same instant, which is what magnet-dump
 * -w uses too, so a packet's time is start_realtime + (ts - start_clock).
 * An NTP step during the trace is not seen; at most that much is wrong.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>

#include "escape.h"
#include "pcap.h"
#include "print.h"
#include "record.h"
#include "tasks.h"
#include "trace.h"

/* pcapng block types and options (draft-ietf-opsawg-pcapng). */
#define SHB_TYPE		0x0a0d0d0aU
#define SHB_MAGIC		0x1a2b3c4dU
#define IDB_TYPE		0x00000001U
#define EPB_TYPE		0x00000006U
#define OPT_END			0
#define OPT_COMMENT		1
#define SHB_OS			3
#define SHB_USERAPPL		4
#define IF_NAME			2
#define IF_DESCRIPTION		3
#define IF_TSRESOL		9
#define EPB_FLAGS		2
#define EPB_FLAG_IN		1U	/* epb_flags bits 0-1: direction */
#define EPB_FLAG_OUT		2U

/* Classic pcap with nanosecond timestamps (tcpdump and libpcap >= 1.5). */
#define PCAP_MAGIC_NS		0xa1b23c4dU
/* Bigger than any skb record's data: nothing is ever cut by it. */
#define SNAPLEN			262144U

struct iface {
	__u16 linktype;
	__u32 ifindex;
};

struct mg_pcap {
	FILE *f;
	bool classic;
	const struct mg_trace_info *info;
	const struct mg_probe_table *probes;
	struct mg_print_opts clock;	/* trace clock to ns, as -w */
	struct mg_tasks *tasks;
	struct iface *ifs;		/* pcapng interface ids, by index */
	size_t nifs;
	unsigned char *buf;		/* the block being built */
	size_t len, size;
	struct mg_pcap_stats stats;
};

static int room(struct mg_pcap *p, size_t n)
{
	unsigned char *b;
	size_t size = p->size ? p->size : 8192;

	if (p->len + n <= p->size)
		return 0;
	while (size < p->len + n)
		size *= 2;
	b = realloc(p->buf, size);
	if (!b)
		return -ENOMEM;
	p->buf = b;
	p->size = size;
	return 0;
}

/* Append n bytes (data NULL: zeros) and zeros up to 32 bits. */
static int put(struct mg_pcap *p, const void *data, size_t n)
{
	size_t pad = -n & 3;

	if (room(p, n + pad))
		return -ENOMEM;
	if (data)
		memcpy(p->buf + p->len, data, n);
	else
		memset(p->buf + p->len, 0, n);
	memset(p->buf + p->len + n, 0, pad);
	p->len += n + pad;
	return 0;
}

static int put32(struct mg_pcap *p, __u32 v)
{
	return put(p, &v, 4);
}

static int put16(struct mg_pcap *p, __u16 v)
{
	if (room(p, 2))
		return -ENOMEM;
	memcpy(p->buf + p->len, &v, 2);
	p->len += 2;
	return 0;
}

static int put_opt(struct mg_pcap *p, __u16 code, const void *v, size_t n)
{
	if (n > 0xffff)
		n = 0xffff;
	if (put16(p, code) || put16(p, n))
		return -ENOMEM;
	return put(p, v, n);
}

static int put_opt_str(struct mg_pcap *p, __u16 code, const char *s)
{
	return put_opt(p, code, s, strlen(s));
}

static void block_start(struct mg_pcap *p, __u32 type)
{
	__u32 hdr[2] = { type, 0 };

	p->len = 0;
	put(p, hdr, sizeof(hdr));	/* the initial 8 KiB always hold it */
}

/* End the options, fill in both total lengths, write the block. */
static int block_end(struct mg_pcap *p, bool opts)
{
	__u32 total;

	if (opts && (put16(p, OPT_END) || put16(p, 0)))
		return -ENOMEM;
	if (room(p, 4))
		return -ENOMEM;
	total = p->len + 4;
	memcpy(p->buf + 4, &total, 4);
	memcpy(p->buf + p->len, &total, 4);
	p->len += 4;
	return fwrite(p->buf, p->len, 1, p->f) == 1 ? 0 : -EIO;
}

static int write_shb(struct mg_pcap *p)
{
	const struct mg_trace_info *in = p->info;
	char text[512], esc[2][256];
	__s64 section_len = -1;		/* unknown: we stream */
	__u32 magic = SHB_MAGIC;
	__u16 version[2] = { 1, 0 };

	block_start(p, SHB_TYPE);
	put(p, &magic, 4);
	put(p, version, 4);
	put(p, &section_len, 8);
	/* The host and kernel come from the trace: escaped, hence UTF-8. */
	snprintf(text, sizeof(text), "Linux %s",
		 mg_escape(esc[0], sizeof(esc[0]), in->release, 0));
	if (put_opt_str(p, SHB_OS, text) ||
	    put_opt_str(p, SHB_USERAPPL, "magnet-dump"))
		return -ENOMEM;
	snprintf(text, sizeof(text), "magnet trace of %s, clock %s",
		 mg_escape(esc[0], sizeof(esc[0]), in->hostname, 0),
		 mg_escape(esc[1], sizeof(esc[1]), in->clock, 0));
	if (put_opt_str(p, OPT_COMMENT, text))
		return -ENOMEM;
	return block_end(p, true);
}

static int write_pcap_header(struct mg_pcap *p)
{
	struct {
		__u32 magic;
		__u16 major, minor;
		__s32 thiszone;
		__u32 sigfigs, snaplen, linktype;
	} h = { PCAP_MAGIC_NS, 2, 4, 0, 0, SNAPLEN, MG_LINKTYPE_RAW };

	return fwrite(&h, sizeof(h), 1, p->f) == 1 ? 0 : -EIO;
}

int mg_pcap_open(struct mg_pcap **pp, FILE *f, const struct mg_pcap_opts *o)
{
	struct mg_pcap *p;
	int r;

	*pp = NULL;
	if (!strcmp(o->info->clock, "tsc") && !o->info->tsc_khz)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->f = f;
	p->classic = o->classic;
	p->info = o->info;
	p->probes = o->probes;
	mg_print_opts_init(&p->clock, o->info, o->probes);
	p->tasks = mg_tasks_new();
	if (!p->tasks || room(p, 8192)) {
		mg_pcap_free(p);
		return -ENOMEM;
	}
	r = p->classic ? write_pcap_header(p) : write_shb(p);
	if (r) {
		mg_pcap_free(p);
		return r;
	}
	*pp = p;
	return 0;
}

int mg_pcap_feed(struct mg_pcap *p, const struct magnet_record *r)
{
	return mg_tasks_feed(p->tasks, r) < 0 ? -ENOMEM : 0;
}

static __u16 get_be16(const __u8 *b)
{
	return (__u16)(b[0] << 8 | b[1]);
}

/* Where the IP header starts in an Ethernet frame of this type, or -1. */
static int eth_l3(__u16 type)
{
	return type == ETH_P_IP || type == ETH_P_IPV6 ? ETH_HLEN : -1;
}

/*
 * Link type of a LINK-layer record. A device without a MAC header
 * (tun, IP tunnels, ARPHRD_NONE) has it at the IP header: if the frame
 * does not carry skb->protocol where Ethernet has its type but starts
 * like that protocol's IP header, it is raw IP. Anything else is taken
 * as Ethernet, loopback's all-zero header included.
 */
static __u16 link_linktype(const struct magnet_skb *s)
{
	__u16 proto = ntohs(s->protocol);
	unsigned int v = s->caplen ? s->data[0] >> 4 : 0;

	if (s->caplen >= ETH_HLEN && get_be16(s->data + 12) == proto)
		return MG_LINKTYPE_ETHERNET;
	if ((proto == ETH_P_IP && v == 4) || (proto == ETH_P_IPV6 && v == 6))
		return MG_LINKTYPE_RAW;
	return MG_LINKTYPE_ETHERNET;
}

/* The IP packet's length from its header, 0 if not known from it. */
static __u32 ip_len(const __u8 *b, size_t n)
{
	if (n >= 4 && b[0] >> 4 == 4)
		return get_be16(b + 2);		/* 0 for TSO/BIG TCP */
	if (n >= 6 && b[0] >> 4 == 6 && get_be16(b + 4))
		return 40 + get_be16(b + 4);	/* 0: a jumbogram */
	return 0;
}

/*
 * The packet's length from where data[] starts. skb->len counts from
 * skb->data, which need not be the header the layer names (data may
 * still point at the IP header of a frame whose MAC header is set, or
 * already at the MAC header of an IP packet), so the IP header's own
 * length counts first; skb->len when there is none. Never below caplen.
 */
static __u32 orig_len(const struct magnet_skb *s, __u16 linktype)
{
	int l3 = 0;
	__u32 len = 0;

	if (linktype == MG_LINKTYPE_ETHERNET)
		l3 = s->caplen >= ETH_HLEN ? eth_l3(get_be16(s->data + 12)) : -1;
	if (l3 >= 0 && s->caplen > (__u32)l3) {
		len = ip_len(s->data + l3, s->caplen - l3);
		if (len)
			len += l3;
	}
	if (!len)
		len = s->len;
	return len > s->caplen ? len : s->caplen;
}

static __u64 wall_ns(const struct mg_pcap *p, __u64 ts)
{
	return p->clock.realtime0 +
	       mg_print_clock_delta_ns(&p->clock, p->clock.clock0, ts);
}

static const char *layer_name(unsigned int layer)
{
	return layer == MAGNET_SKB_LAYER_LINK ? "link" :
	       layer == MAGNET_SKB_LAYER_NETWORK ? "network" : "data";
}

static int write_idb(struct mg_pcap *p, __u16 linktype, const char *name,
		     const char *desc)
{
	__u16 lt[2] = { linktype, 0 };
	__u32 snaplen = 0;		/* no limit */
	__u8 tsresol = 9;		/* 10^-9 s: the records' ns */

	block_start(p, IDB_TYPE);
	put(p, lt, 4);
	put32(p, snaplen);
	if (put_opt_str(p, IF_NAME, name) ||
	    put_opt_str(p, IF_DESCRIPTION, desc) ||
	    put_opt(p, IF_TSRESOL, &tsresol, 1))
		return -ENOMEM;
	return block_end(p, true);
}

/* pcapng interface id of (linktype, ifindex); a new IDB the first time. */
static int iface_id(struct mg_pcap *p, __u16 linktype, const struct magnet_skb *s,
		    __u32 *id)
{
	struct iface *ifs;
	char name[32], desc[96];
	bool new_type = true;
	size_t i;
	int r;

	for (i = 0; i < p->nifs; i++) {
		if (p->ifs[i].linktype != linktype)
			continue;
		new_type = false;
		if (p->ifs[i].ifindex == s->ifindex) {
			*id = i;
			return 0;
		}
	}
	ifs = realloc(p->ifs, (p->nifs + 1) * sizeof(*ifs));
	if (!ifs)
		return -ENOMEM;
	p->ifs = ifs;
	ifs[p->nifs].linktype = linktype;
	ifs[p->nifs].ifindex = s->ifindex;

	snprintf(name, sizeof(name), "ifindex%u", s->ifindex);
	snprintf(desc, sizeof(desc), "magnet skb records, ifindex %u, %s",
		 s->ifindex, linktype == MG_LINKTYPE_RAW ? "raw IP" : "Ethernet");
	r = write_idb(p, linktype, name, desc);
	if (r)
		return r;
	*id = p->nifs++;
	p->stats.linktypes += new_type;
	return 0;
}

/*
 * The packet's comment, one line of space-separated key=value fields in
 * this order (docs/magnet-dump.md): what Wireshark shows as
 * frame.comment, to follow an skb (skb=) through the probes.
 */
static void comment(const struct mg_pcap *p, const struct magnet_record *r,
		    const struct magnet_skb *s, char *buf, size_t size)
{
	static const char *const dirs[] = { "unknown", "out", "in" };
	const struct mg_task *t = mg_tasks_of(p->tasks, r);
	char name[4 * 600], comm[4 * 17 + 1], ts[32];
	int n;

	mg_escape(name, sizeof(name), mg_event_name(p->probes, r->event_id),
		  MG_ESC_SPACE);
	if (p->clock.tsc)
		snprintf(ts, sizeof(ts), "%llu", (unsigned long long)r->timestamp);
	else
		snprintf(ts, sizeof(ts), "%llu.%09llu",
			 (unsigned long long)(r->timestamp / 1000000000ULL),
			 (unsigned long long)(r->timestamp % 1000000000ULL));
	n = snprintf(buf, size, "probe=%s(%u) ts=%s cpu=%u pid=%u tgid=%u",
		     name, r->event_id, ts, r->cpu, r->pid, r->tgid);
	if (t && n >= 0 && (size_t)n < size)
		n += snprintf(buf + n, size - n, " comm=%s",
			      mg_escape(comm, sizeof(comm), t->comm, MG_ESC_SPACE));
	if (n >= 0 && (size_t)n < size)
		snprintf(buf + n, size - n,
			 " cgroup=%u skb=0x%llx dir=%s ifindex=%u layer=%s len=%u%s",
			 r->cgroup, (unsigned long long)r->abstract_id,
			 dirs[s->direction], s->ifindex, layer_name(s->layer),
			 s->len, mg_record_is_intr(r) ? " intr" : "");
}

static int write_classic(struct mg_pcap *p, const struct magnet_record *r,
			 const struct magnet_skb *s)
{
	__u64 ns = wall_ns(p, r->timestamp);
	__u32 h[4] = {
		ns / 1000000000ULL, ns % 1000000000ULL,
		s->caplen, orig_len(s, MG_LINKTYPE_RAW),
	};

	if (fwrite(h, sizeof(h), 1, p->f) != 1 ||
	    (s->caplen && fwrite(s->data, s->caplen, 1, p->f) != 1))
		return -EIO;
	p->stats.packets++;
	return 0;
}

static int write_epb(struct mg_pcap *p, const struct magnet_record *r,
		     const struct magnet_skb *s)
{
	__u16 linktype = s->layer == MAGNET_SKB_LAYER_NETWORK ?
			 MG_LINKTYPE_RAW : link_linktype(s);
	__u64 ns = wall_ns(p, r->timestamp);
	char text[4096];
	__u32 id, flags;
	int err;

	err = iface_id(p, linktype, s, &id);
	if (err)
		return err;
	block_start(p, EPB_TYPE);
	put32(p, id);
	put32(p, ns >> 32);
	put32(p, (__u32)ns);
	put32(p, s->caplen);
	put32(p, orig_len(s, linktype));
	if (put(p, s->caplen ? s->data : NULL, s->caplen))
		return -ENOMEM;
	comment(p, r, s, text, sizeof(text));
	if (put_opt_str(p, OPT_COMMENT, text))
		return -ENOMEM;
	if (s->direction != MAGNET_SKB_DIR_UNKNOWN) {
		flags = s->direction == MAGNET_SKB_DIR_IN ? EPB_FLAG_IN : EPB_FLAG_OUT;
		if (put_opt(p, EPB_FLAGS, &flags, 4))
			return -ENOMEM;
	}
	err = block_end(p, true);
	if (!err)
		p->stats.packets++;
	return err;
}

int mg_pcap_write(struct mg_pcap *p, const struct magnet_record *r)
{
	const struct magnet_skb *s = mg_record_skb(r);

	if (mg_record_is_lost(r)) {
		p->stats.lost_records++;
		p->stats.lost += mg_lost_total(mg_record_lost(r));
		return 0;
	}
	if (mg_record_is_meta(r))
		return 0;
	if (!s) {
		p->stats.not_skb++;
		return 0;
	}
	if (s->layer == MAGNET_SKB_LAYER_DATA) {
		p->stats.data_layer++;
		return 0;
	}
	if (p->classic) {
		if (s->layer != MAGNET_SKB_LAYER_NETWORK) {
			p->stats.link_layer++;
			return 0;
		}
		return write_classic(p, r, s);
	}
	return write_epb(p, r, s);
}

int mg_pcap_finish(struct mg_pcap *p)
{
	if (p->classic || p->nifs)
		return 0;
	return write_idb(p, MG_LINKTYPE_RAW, "none", "magnet: no packets");
}

const struct mg_pcap_stats *mg_pcap_stats(const struct mg_pcap *p)
{
	return &p->stats;
}

void mg_pcap_free(struct mg_pcap *p)
{
	if (!p)
		return;
	mg_tasks_free(p->tasks);
	free(p->ifs);
	free(p->buf);
	free(p);
}
