/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The first n of a stream of entries in some order, kept sorted in place
 * in out[0..*k): what magnetd's AGG reports list, without sorting whole
 * tables. A binary search and one memmove per entry kept.
 */
#ifndef MAGNET_LIB_TOPN_H
#define MAGNET_LIB_TOPN_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* Does x come before y? A strict order: ties broken by the key. */
typedef bool (*mg_topn_before)(const void *x, const void *y);

static inline void mg_topn_offer(void *out, size_t size, unsigned int *k, unsigned int n,
				 const void *e, mg_topn_before before)
{
	char *o = out;
	unsigned int lo = 0, hi = *k, mid;

	if (!n || (*k == n && !before(e, o + (size_t)(n - 1) * size)))
		return;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (before(o + (size_t)mid * size, e))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (*k < n)
		++*k;
	memmove(o + (size_t)(lo + 1) * size, o + (size_t)lo * size,
		(size_t)(*k - 1 - lo) * size);
	memcpy(o + (size_t)lo * size, e, size);
}

#endif /* MAGNET_LIB_TOPN_H */
