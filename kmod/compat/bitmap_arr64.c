// SPDX-License-Identifier: GPL-2.0
/* 5.19: bitmap_to_arr64() and bitmap_from_arr64(). */
#include <linux/bitmap.h>
void mg_probe(u64 *a, unsigned long *b)
{
	bitmap_to_arr64(a, b, 64);
	bitmap_from_arr64(b, a, 64);
}
