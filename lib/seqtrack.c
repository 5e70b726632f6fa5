// SPDX-License-Identifier: GPL-2.0
/*
 * TCP's sequence space seen per flow; see seqtrack.h.
 *
 * Open addressing without deletion: a slot, once used, is only ever
 * taken over by another flow, so a flow is in the first free slot of its
 * probe window or before it, and a lookup stops at a free slot. Holes
 * are kept in sequence order, all below the highest end.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include "seqtrack.h"

struct key {
	__u8 family, dir;
	__be16 sport, dport;
	__u8 saddr[16], daddr[16];
};

struct hole {
	__u32 start, end;	/* [start, end) */
};

struct entry {
	struct key key;
	__u32 high;		/* the highest end seen */
	unsigned int nholes;
	struct hole hole[MG_SEQTRACK_HOLES];
	__u64 used;		/* the tracker's tick at its last segment; 0: free */
};

struct mg_seqtrack {
	unsigned int mask;	/* capacity - 1 */
	__u64 tick;
	struct mg_seqtrack_stats st;
	struct entry *slot;
};

/* a before b in sequence space (RFC 1982). */
static bool before(__u32 a, __u32 b)
{
	return (__s32)(a - b) < 0;
}

int mg_seqtrack_create(unsigned int capacity, struct mg_seqtrack **out)
{
	struct mg_seqtrack *t;

	*out = NULL;
	if (!capacity || capacity > MG_SEQTRACK_MAX_CAPACITY || (capacity & (capacity - 1)))
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->slot = calloc(capacity, sizeof(*t->slot));
	if (!t->slot) {
		free(t);
		return -ENOMEM;
	}
	t->mask = capacity - 1;
	t->st.capacity = capacity;
	*out = t;
	return 0;
}

void mg_seqtrack_free(struct mg_seqtrack *t)
{
	if (!t)
		return;
	free(t->slot);
	free(t);
}

/* FNV-1a over the key, then MurmurHash3's finalizer (as netview's). */
static unsigned int home(const struct mg_seqtrack *t, const struct key *k)
{
	const unsigned char *p = (const unsigned char *)k;
	__u64 h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < sizeof(*k); i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h & t->mask;
}

/* k's entry, or a fresh one for it (free, or evicted): *fresh says so. */
static struct entry *entry_of(struct mg_seqtrack *t, const struct key *k, bool *fresh)
{
	unsigned int i = home(t, k), n, window = t->mask < MG_SEQTRACK_PROBE ?
						 t->mask + 1 : MG_SEQTRACK_PROBE;
	struct entry *e, *lru = NULL;

	*fresh = true;
	for (n = 0; n < window; n++, i = (i + 1) & t->mask) {
		e = &t->slot[i];
		if (!e->used) {
			t->st.used++;
			goto take;
		}
		if (!memcmp(&e->key, k, sizeof(*k))) {
			*fresh = false;
			return e;
		}
		if (!lru || e->used < lru->used)
			lru = e;
	}
	e = lru;
	t->st.evictions++;
take:
	memset(e, 0, sizeof(*e));
	e->key = *k;
	return e;
}

/*
 * Segment [s, end) against e's holes: what it fills is new and leaves
 * them; the part above the highest end is new, and a gap before it a
 * new hole. Returns the new bytes.
 */
static unsigned int fill(struct mg_seqtrack *t, struct entry *e, __u32 s, __u32 end)
{
	struct hole out[MG_SEQTRACK_HOLES + 1];
	unsigned int i, n = 0, fresh = 0;

	for (i = 0; i < e->nholes; i++) {
		struct hole h = e->hole[i];
		__u32 lo, hi;

		if (e->high - h.end > MG_SEQTRACK_WINDOW) {
			t->st.holes_dropped++;	/* nothing fills it now */
			continue;
		}
		if (!before(s, h.end) || !before(h.start, end)) {
			out[n++] = h;
			continue;
		}
		lo = before(h.start, s) ? s : h.start;
		hi = before(end, h.end) ? end : h.end;
		fresh += hi - lo;
		if (before(h.start, lo))
			out[n++] = (struct hole){ h.start, lo };
		if (before(hi, h.end))
			out[n++] = (struct hole){ hi, h.end };
	}
	/* A split hole had the segment inside it: nothing above high then. */
	if (before(e->high, end)) {
		if (before(e->high, s))
			out[n++] = (struct hole){ e->high, s };
		fresh += end - (before(e->high, s) ? s : e->high);
		e->high = end;
	}
	i = n > MG_SEQTRACK_HOLES ? n - MG_SEQTRACK_HOLES : 0;
	t->st.holes_dropped += i;
	e->nholes = n - i;
	memcpy(e->hole, out + i, e->nholes * sizeof(out[0]));
	return fresh;
}

unsigned int mg_seqtrack_new_bytes(struct mg_seqtrack *t, const struct mg_flow *f)
{
	__u32 s = f->seq, end = s + f->payload;
	struct entry *e;
	struct key k;
	bool fresh;

	if (f->proto != IPPROTO_TCP || !f->has_seq || !f->payload)
		return f->payload;
	memset(&k, 0, sizeof(k));
	k.family = f->family;
	k.dir = f->dir;
	k.sport = f->sport;
	k.dport = f->dport;
	memcpy(k.saddr, f->saddr, 16);
	memcpy(k.daddr, f->daddr, 16);
	e = entry_of(t, &k, &fresh);
	e->used = ++t->tick;
	/* A start more than the window from high, either way: anew. */
	if (fresh || s - e->high + MG_SEQTRACK_WINDOW > 2 * MG_SEQTRACK_WINDOW) {
		e->high = end;
		e->nholes = 0;
		return f->payload;
	}
	return fill(t, e, s, end);
}

void mg_seqtrack_stats(const struct mg_seqtrack *t, struct mg_seqtrack_stats *st)
{
	*st = t->st;
}
