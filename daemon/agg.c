// SPDX-License-Identifier: GPL-2.0
/*
 * Fixed-memory aggregation: an open-addressing table (linear probing,
 * backward-shift deletion) with sampled least-count eviction. See agg.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agg.h"
#include "record.h"
#include "topn.h"

/* A slot is free while events is 0: a used entry has counted one. */
struct slot {
	struct mg_agg_entry e;
	__u64 seen;		/* the table's tick at its last add */
};

struct mg_agg {
	unsigned int capacity;	/* entries */
	unsigned int mask;	/* slots - 1; slots = 2 * capacity */
	__u64 tick;
	struct mg_agg_stats st;
	struct slot slot[];
};

/* MurmurHash3's finalizer: every key bit moves the home slot. */
static inline __u64 mix(__u64 k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ULL;
	k ^= k >> 33;
	return k;
}

static inline unsigned int home(const struct mg_agg *a, __u64 key)
{
	return mix(key) & a->mask;
}

int mg_agg_create(unsigned int capacity, struct mg_agg **out)
{
	struct mg_agg *a;
	size_t slots;

	*out = NULL;
	if (!capacity || capacity > MG_AGG_MAX_CAPACITY ||
	    (capacity & (capacity - 1)))
		return -EINVAL;
	slots = 2 * (size_t)capacity;
	a = calloc(1, sizeof(*a) + slots * sizeof(a->slot[0]));
	if (!a)
		return -ENOMEM;
	a->capacity = capacity;
	a->mask = slots - 1;
	a->st.capacity = capacity;
	*out = a;
	return 0;
}

void mg_agg_free(struct mg_agg *a)
{
	free(a);
}

void mg_agg_reset(struct mg_agg *a)
{
	memset(a->slot, 0, ((size_t)a->mask + 1) * sizeof(a->slot[0]));
	memset(&a->st, 0, sizeof(a->st));
	a->st.capacity = a->capacity;
	a->tick = 0;
}

/* key's slot, or the free slot that ends its probe (the table has one). */
static unsigned int probe(const struct mg_agg *a, __u64 key)
{
	unsigned int i = home(a, key);

	while (a->slot[i].e.events && a->slot[i].e.key != key)
		i = (i + 1) & a->mask;
	return i;
}

const struct mg_agg_entry *mg_agg_find(const struct mg_agg *a, __u64 key)
{
	unsigned int i = probe(a, key);

	return a->slot[i].e.events ? &a->slot[i].e : NULL;
}

static bool worse(const struct slot *x, const struct slot *y)
{
	if (x->e.events != y->e.events)
		return x->e.events < y->e.events;
	return x->seen < y->seen;
}

/*
 * The victim for a new key whose home is h: the fewest events, then the
 * least recently counted, of the first min(MG_AGG_EVICT_SAMPLE, used)
 * entries from h on.
 */
static unsigned int victim(const struct mg_agg *a, unsigned int h)
{
	unsigned int want = a->st.used < MG_AGG_EVICT_SAMPLE ?
			    a->st.used : MG_AGG_EVICT_SAMPLE;
	unsigned int i = h, best = h, seen = 0;

	for (; seen < want; i = (i + 1) & a->mask) {
		if (!a->slot[i].e.events)
			continue;
		if (!seen++ || worse(&a->slot[i], &a->slot[best]))
			best = i;
	}
	return best;
}

/*
 * Free slot i, moving later entries of its cluster back so that every
 * entry stays reachable from its home without crossing a free slot.
 */
static void delete(struct mg_agg *a, unsigned int i)
{
	unsigned int j = i, k;

	for (;;) {
		j = (j + 1) & a->mask;
		if (!a->slot[j].e.events)
			break;
		k = home(a, a->slot[j].e.key);
		/* It stays if its home is cyclically in (i, j]. */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		a->slot[i] = a->slot[j];
		i = j;
	}
	memset(&a->slot[i], 0, sizeof(a->slot[i]));
}

static void set_label(struct mg_agg_entry *e, const char *label)
{
	size_t n = strnlen(label, MG_AGG_LABEL_LEN - 1);

	memcpy(e->label, label, n);
	memset(e->label + n, 0, MG_AGG_LABEL_LEN - n);
}

enum mg_agg_result mg_agg_add(struct mg_agg *a, __u64 key, const char *label,
			      __u64 bytes, __u64 ts)
{
	enum mg_agg_result res = MG_AGG_HIT;
	unsigned int i = probe(a, key);
	struct slot *s = &a->slot[i];

	a->st.events++;
	a->st.bytes += bytes;
	if (!s->e.events) {
		res = MG_AGG_NEW;
		if (a->st.used == a->capacity) {
			unsigned int v = victim(a, home(a, key));

			a->st.evictions++;
			a->st.evicted_events += a->slot[v].e.events;
			delete(a, v);
			a->st.used--;
			/* The shift may have filled i: probe again. */
			i = probe(a, key);
			s = &a->slot[i];
			res = MG_AGG_EVICTED;
		}
		/* A free slot is all zero: no label, no counts. */
		a->st.used++;
		s->e.key = key;
		s->e.first_ts = ts;
		s->e.last_ts = ts;
	}
	s->e.events++;
	s->e.bytes += bytes;
	if (ts < s->e.first_ts)
		s->e.first_ts = ts;
	if (ts > s->e.last_ts)
		s->e.last_ts = ts;
	if (label)
		set_label(&s->e, label);
	s->seen = ++a->tick;
	return res;
}

__u64 mg_agg_comm_key(const char *comm)
{
	__u64 h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < MG_AGG_LABEL_LEN - 1 && comm[i]; i++) {
		h ^= (unsigned char)comm[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

int mg_agg_add_record(struct mg_agg *a, enum mg_agg_key kind,
		      const struct magnet_record *r, mg_agg_key_fn fn,
		      void *arg)
{
	char label[MG_AGG_LABEL_LEN] = "";
	__u64 key = 0;
	int ret;

	if (mg_record_is_lost(r)) {
		a->st.lost_records++;
		mg_lost_add(&a->st.lost, mg_record_lost(r));
		return MG_AGG_LOST;
	}
	switch (kind) {
	case MG_AGG_PROBE:
		key = r->event_id;
		break;
	case MG_AGG_PID:
		key = r->pid;
		break;
	case MG_AGG_TGID:
		key = r->tgid;
		break;
	case MG_AGG_COMM:
	case MG_AGG_CGROUP:
		if (!fn)
			goto unkeyed_inval;
		break;
	default:
		goto unkeyed_inval;
	}
	if (fn) {
		ret = fn(arg, kind, r, &key, label);
		if (ret < 0) {
			a->st.unkeyed++;
			return ret;
		}
		label[MG_AGG_LABEL_LEN - 1] = 0;
		if (kind == MG_AGG_COMM && ret == MG_AGG_COMM_UNKNOWN_NAME)
			key = MG_AGG_COMM_UNKNOWN, label[0] = 0;
		else if (kind == MG_AGG_COMM)
			key = mg_agg_comm_key(label);
	}
	return mg_agg_add(a, key, label[0] ? label : NULL, r->size,
			  r->timestamp);

unkeyed_inval:
	a->st.unkeyed++;
	return -EINVAL;
}

/* Report order: most events first, then increasing key. */
static bool before(const void *a, const void *b)
{
	const struct mg_agg_entry *x = a, *y = b;

	if (x->events != y->events)
		return x->events > y->events;
	return x->key < y->key;
}

static int cmp_entry(const void *x, const void *y)
{
	return before(x, y) ? -1 : before(y, x) ? 1 : 0;
}

unsigned int mg_agg_top(const struct mg_agg *a, unsigned int n,
			struct mg_agg_entry *out)
{
	unsigned int i, k = 0;

	if (n > a->st.used)
		n = a->st.used;
	if (!n)
		return 0;
	if (n == a->st.used) {
		for (i = 0; i <= a->mask; i++)
			if (a->slot[i].e.events)
				out[k++] = a->slot[i].e;
		qsort(out, k, sizeof(*out), cmp_entry);
		return k;
	}
	/* Keep out[0..k) sorted, the n best so far. */
	for (i = 0; i <= a->mask; i++)
		if (a->slot[i].e.events)
			mg_topn_offer(out, sizeof(*out), &k, n, &a->slot[i].e, before);
	return k;
}

void mg_agg_stats(const struct mg_agg *a, struct mg_agg_stats *st)
{
	*st = a->st;
}

double mg_agg_rate(__u64 count, __u64 interval_ns)
{
	if (!interval_ns)
		return 0;
	return (double)count * 1e9 / (double)interval_ns;
}
