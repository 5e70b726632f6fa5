// SPDX-License-Identifier: GPL-2.0
/*
 * Per-job traffic tables: open addressing with linear probing and
 * backward-shift deletion, sampled least-bytes eviction. See netview.h.
 *
 * A slot is used while its last add came after the table's last reset
 * (its tick is above the table's epoch): a reset takes no pass over the
 * slots, so a table kept for a client's next interval, or its next AGG
 * net, costs nothing to empty, and only the slots used are ever touched.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "flow.h"
#include "netview.h"
#include "record.h"
#include "reorder.h"
#include "sensor.h"
#include "seqtrack.h"
#include "topn.h"

#define NV_MAX_CAPACITY		(1U << 24)

struct slot {
	struct mg_netview_entry e;
	__u64 seen;		/* the table's tick at its last add; 0: free */
};

struct table {
	unsigned int capacity, mask;	/* mask: slots - 1 = 2 * capacity - 1 */
	__u64 tick;			/* adds ever: never goes back */
	__u64 epoch;			/* tick at the last reset */
	struct mg_netview_table_stats st;
	struct slot *slot;
};

struct mg_netview {
	struct mg_netview_stats st;
	struct table jobs, peers;
	struct mg_seqtrack *seq;	/* kept across resets: a flow's bytes seen */
	struct mg_reorder *order_tcp;	/* TCP packets waiting, kept too */
	__u64 settle_ns;
	__u64 seq_evictions_base;	/* its evictions at the last reset */
	__u64 seq_holes_base;		/* its holes dropped then */
	__u32 (*series)(void *arg, __u32 cgroup);	/* NULL: the cgroup */
	void *series_arg;
};

static bool used(const struct table *t, const struct slot *s)
{
	return s->seen > t->epoch;
}

/* The key is every field before the counters. */
#define KEY_LEN	offsetof(struct mg_netview_entry, tx_packets)

static bool same_key(const struct mg_netview_entry *a, const struct mg_netview_entry *b)
{
	return !memcmp(a, b, KEY_LEN);
}

/* FNV-1a over the key, then MurmurHash3's finalizer. */
static unsigned int home(const struct table *t, const struct mg_netview_entry *k)
{
	const unsigned char *p = (const unsigned char *)k;
	__u64 h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < KEY_LEN; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h & t->mask;
}

static int table_init(struct table *t, unsigned int capacity)
{
	t->capacity = capacity;
	t->mask = 2 * capacity - 1;
	t->slot = calloc(2 * (size_t)capacity, sizeof(*t->slot));
	return t->slot ? 0 : -ENOMEM;
}

int mg_netview_create(unsigned int capacity, struct mg_netview **out)
{
	struct mg_netview *v;

	*out = NULL;
	if (!capacity || capacity > NV_MAX_CAPACITY || (capacity & (capacity - 1)))
		return -EINVAL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (table_init(&v->jobs, capacity) || table_init(&v->peers, capacity) ||
	    mg_seqtrack_create(capacity, &v->seq) ||
	    mg_reorder_create(8 * capacity, &v->order_tcp)) {
		mg_netview_free(v);
		return -ENOMEM;
	}
	v->st.capacity = capacity;
	*out = v;
	return 0;
}

void mg_netview_free(struct mg_netview *v)
{
	if (!v)
		return;
	free(v->jobs.slot);
	free(v->peers.slot);
	mg_seqtrack_free(v->seq);
	mg_reorder_free(v->order_tcp);
	free(v);
}

static unsigned int probe(const struct table *t, const struct mg_netview_entry *k)
{
	unsigned int i = home(t, k);

	while (used(t, &t->slot[i]) && !same_key(&t->slot[i].e, k))
		i = (i + 1) & t->mask;
	return i;
}

static __u64 bytes_of(const struct mg_netview_entry *e)
{
	return e->tx_bytes + e->rx_bytes;
}

static __u64 packets_of(const struct mg_netview_entry *e)
{
	return e->tx_packets + e->rx_packets;
}

static bool worse(const struct slot *x, const struct slot *y)
{
	if (bytes_of(&x->e) != bytes_of(&y->e))
		return bytes_of(&x->e) < bytes_of(&y->e);
	return x->seen < y->seen;
}

static unsigned int victim(const struct table *t, unsigned int h)
{
	unsigned int want = t->st.used < MG_NETVIEW_EVICT_SAMPLE ?
			    t->st.used : MG_NETVIEW_EVICT_SAMPLE;
	unsigned int i = h, best = h, seen = 0;

	for (; seen < want; i = (i + 1) & t->mask) {
		if (!used(t, &t->slot[i]))
			continue;
		if (!seen++ || worse(&t->slot[i], &t->slot[best]))
			best = i;
	}
	return best;
}

/* Free slot i; later entries of its cluster move back (agg.c's delete). */
static void delete(struct table *t, unsigned int i)
{
	unsigned int j = i, k;

	for (;;) {
		j = (j + 1) & t->mask;
		if (!used(t, &t->slot[j]))
			break;
		k = home(t, &t->slot[j].e);
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		t->slot[i] = t->slot[j];
		i = j;
	}
	memset(&t->slot[i], 0, sizeof(t->slot[i]));
}

static void count(struct table *t, const struct mg_netview_entry *k, bool tx, __u32 bytes)
{
	unsigned int i = probe(t, k);
	struct slot *s = &t->slot[i];

	if (!used(t, s)) {
		if (t->st.used == t->capacity) {
			unsigned int v = victim(t, home(t, k));

			t->st.evictions++;
			t->st.evicted_bytes += bytes_of(&t->slot[v].e);
			delete(t, v);
			t->st.used--;
			s = &t->slot[probe(t, k)];	/* the shift may have filled it */
		}
		t->st.used++;
		memset(&s->e, 0, sizeof(s->e));	/* counts of an earlier epoch */
		memcpy(&s->e, k, KEY_LEN);
	}
	if (tx) {
		s->e.tx_packets++;
		s->e.tx_bytes += bytes;
	} else {
		s->e.rx_packets++;
		s->e.rx_bytes += bytes;
	}
	s->seen = ++t->tick;
}

static void count_flow(struct mg_netview *v, const struct mg_flow *fp, __u64 sk_cgroup)
{
	const struct mg_flow f = *fp;
	struct mg_netview_entry key;
	unsigned int bytes;
	bool tx;

	tx = f.dir == MAGNET_SKB_DIR_OUT;
	bytes = mg_seqtrack_new_bytes(v->seq, &f);
	v->st.packets++;
	v->st.bytes += bytes;
	v->st.repeated_bytes += f.payload - bytes;
	memset(&key, 0, sizeof(key));
	key.job = (__u32)sk_cgroup;
	if (v->series && key.job)
		key.job = v->series(v->series_arg, key.job);
	key.proto = f.proto;
	count(&v->jobs, &key, tx, bytes);
	key.family = f.family;
	key.port = tx ? f.dport : f.sport;
	memcpy(key.addr, tx ? f.daddr : f.saddr, 16);
	key.lport = tx ? f.sport : f.dport;
	memcpy(key.laddr, tx ? f.saddr : f.daddr, 16);
	count(&v->peers, &key, tx, bytes);
}

void mg_netview_settle(struct mg_netview *v, __u64 now)
{
	struct mg_reorder_item it;

	while (mg_reorder_pop(v->order_tcp, now, v->settle_ns, &it))
		count_flow(v, &it.f, it.sk_cgroup);
}

void mg_netview_set_settle(struct mg_netview *v, __u64 settle_ns)
{
	v->settle_ns = settle_ns;
}

/* A TCP segment through the reorder buffer when packets settle. */
void mg_netview_add_record(struct mg_netview *v, const struct magnet_record *r)
{
	struct mg_reorder_item it, early;
	const struct magnet_skb *k;
	__u64 late;

	if (mg_record_is_lost(r)) {
		mg_lost_add(&v->st.lost, mg_record_lost(r));
		return;
	}
	k = mg_record_skb(r);
	if (!k)
		return;
	if (mg_flow_of(k, &it.f)) {
		v->st.unkeyed++;
		return;
	}
	if (!v->settle_ns || !it.f.has_seq) {
		count_flow(v, &it.f, k->sk_cgroup);
		return;
	}
	it.ts = r->timestamp;
	it.read_ns = mg_now_ns(CLOCK_MONOTONIC);
	it.sk_cgroup = k->sk_cgroup;
	late = mg_reorder_late(v->order_tcp);
	if (mg_reorder_push(v->order_tcp, &it, &early)) {
		v->st.order_early++;
		count_flow(v, &early.f, early.sk_cgroup);
	}
	v->st.order_late += mg_reorder_late(v->order_tcp) - late;
	mg_netview_settle(v, it.read_ns);
}

void mg_netview_set_series(struct mg_netview *v,
			   __u32 (*series)(void *arg, __u32 cgroup), void *arg)
{
	v->series = series;
	v->series_arg = arg;
}

void mg_netview_stats(const struct mg_netview *v, struct mg_netview_stats *st)
{
	struct mg_seqtrack_stats seq;

	mg_seqtrack_stats(v->seq, &seq);
	*st = v->st;
	st->seq_evictions = seq.evictions - v->seq_evictions_base;
	st->seq_holes_dropped = seq.holes_dropped - v->seq_holes_base;
	st->jobs = v->jobs.st;
	st->peers = v->peers.st;
}

/* Report order: most bytes, most packets, then the key's bytes. */
static bool before(const void *a, const void *b)
{
	const struct mg_netview_entry *x = a, *y = b;

	if (bytes_of(x) != bytes_of(y))
		return bytes_of(x) > bytes_of(y);
	if (packets_of(x) != packets_of(y))
		return packets_of(x) > packets_of(y);
	if (x->job != y->job)
		return x->job < y->job;
	return memcmp(x, y, KEY_LEN) < 0;
}

static unsigned int top(const struct table *t, unsigned int n, struct mg_netview_entry *out)
{
	unsigned int i, k = 0;

	if (n > t->st.used)
		n = t->st.used;
	for (i = 0; n && i <= t->mask; i++)
		if (used(t, &t->slot[i]))
			mg_topn_offer(out, sizeof(*out), &k, n, &t->slot[i].e, before);
	return k;
}

unsigned int mg_netview_top_jobs(const struct mg_netview *v, unsigned int n,
				 struct mg_netview_entry *out)
{
	return top(&v->jobs, n, out);
}

unsigned int mg_netview_top_peers(const struct mg_netview *v, unsigned int n,
				  struct mg_netview_entry *out)
{
	return top(&v->peers, n, out);
}

static void table_reset(struct table *t)
{
	memset(&t->st, 0, sizeof(t->st));
	t->epoch = t->tick;
}

void mg_netview_reset(struct mg_netview *v)
{
	struct mg_seqtrack_stats seq;

	mg_seqtrack_stats(v->seq, &seq);
	v->seq_evictions_base = seq.evictions;
	v->seq_holes_base = seq.holes_dropped;
	table_reset(&v->jobs);
	table_reset(&v->peers);
	memset(&v->st, 0, sizeof(v->st));
	v->st.capacity = v->jobs.capacity;
}
