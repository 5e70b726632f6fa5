// SPDX-License-Identifier: GPL-2.0
/*
 * The reorder buffer (reorder.h): a binary min-heap by (timestamp, push
 * order) in one array.
 */
#include <errno.h>
#include <stdlib.h>

#include "reorder.h"

#define REORDER_MAX	(1U << 24)

struct mg_reorder {
	unsigned int len, capacity;
	__u64 pushed, early, late;
	__u64 out_ts;		/* the highest timestamp given out */
	struct mg_reorder_item *heap;
};

int mg_reorder_create(unsigned int capacity, struct mg_reorder **out)
{
	struct mg_reorder *r;

	if (!capacity || capacity > REORDER_MAX)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	/* Untouched pages cost nothing: an idle buffer takes no memory. */
	r->heap = malloc((size_t)capacity * sizeof(*r->heap));
	if (!r->heap) {
		free(r);
		return -ENOMEM;
	}
	r->capacity = capacity;
	*out = r;
	return 0;
}

void mg_reorder_free(struct mg_reorder *r)
{
	if (!r)
		return;
	free(r->heap);
	free(r);
}

static bool before(const struct mg_reorder_item *a, const struct mg_reorder_item *b)
{
	return a->ts < b->ts || (a->ts == b->ts && a->order < b->order);
}

static void swap(struct mg_reorder_item *a, struct mg_reorder_item *b)
{
	struct mg_reorder_item t = *a;

	*a = *b;
	*b = t;
}

static void take_lowest(struct mg_reorder *r, struct mg_reorder_item *out)
{
	struct mg_reorder_item *h = r->heap;
	unsigned int i = 0;

	*out = h[0];
	if (out->ts > r->out_ts)
		r->out_ts = out->ts;
	h[0] = h[--r->len];
	for (;;) {
		unsigned int l = 2 * i + 1, m = i;

		if (l < r->len && before(&h[l], &h[m]))
			m = l;
		if (l + 1 < r->len && before(&h[l + 1], &h[m]))
			m = l + 1;
		if (m == i)
			break;
		swap(&h[i], &h[m]);
		i = m;
	}
}

bool mg_reorder_push(struct mg_reorder *r, const struct mg_reorder_item *it,
		     struct mg_reorder_item *early)
{
	struct mg_reorder_item *h = r->heap;
	bool full = r->len == r->capacity;
	unsigned int i;

	if (it->ts < r->out_ts)
		r->late++;
	if (full) {
		take_lowest(r, early);
		r->early++;
	}
	i = r->len++;
	h[i] = *it;
	h[i].order = r->pushed++;
	while (i && before(&h[i], &h[(i - 1) / 2])) {
		swap(&h[i], &h[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	return full;
}

bool mg_reorder_pop(struct mg_reorder *r, __u64 now, __u64 settle,
		    struct mg_reorder_item *out)
{
	if (!r->len)
		return false;
	/*
	 * The lowest must have settled: one read after it may still bring a
	 * lower one. (A later one that has settled waits behind it: order
	 * first.)
	 */
	if (settle && now - r->heap[0].read_ns < settle)
		return false;
	take_lowest(r, out);
	return true;
}

unsigned int mg_reorder_len(const struct mg_reorder *r)
{
	return r->len;
}

__u64 mg_reorder_early(const struct mg_reorder *r)
{
	return r->early;
}

__u64 mg_reorder_late(const struct mg_reorder *r)
{
	return r->late;
}
