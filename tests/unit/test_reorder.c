// SPDX-License-Identifier: GPL-2.0
/*
 * lib/reorder.c: items out by timestamp, ties in the order pushed; none
 * before the lowest has settled (every one with settle 0); a full buffer
 * gives its lowest out early (counted) and keeps its capacity; random
 * pushes from several "rings", each in time order, come out sorted.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>

#include "reorder.h"
#include "testutil.h"

static struct mg_reorder_item item(__u64 ts, __u64 read_ns, __u64 tag)
{
	return (struct mg_reorder_item){ .ts = ts, .read_ns = read_ns, .sk_cgroup = tag };
}

START_TEST(order_and_ties)
{
	static const __u64 ts[] = { 30, 10, 20, 10, 5, 20 };
	struct mg_reorder_item it, early;
	struct mg_reorder *r;
	__u64 last = 0, tag = 0;
	unsigned int i;

	ck_assert_int_eq(mg_reorder_create(0, &r), -EINVAL);
	ck_assert_int_eq(mg_reorder_create(8, &r), 0);
	for (i = 0; i < 6; i++) {
		it = item(ts[i], 100, i);
		ck_assert(!mg_reorder_push(r, &it, &early));
	}
	ck_assert_uint_eq(mg_reorder_len(r), 6);
	/* 100 ns read, settle 50: not before 150. */
	ck_assert(!mg_reorder_pop(r, 149, 50, &it));
	for (i = 0; i < 6; i++) {
		ck_assert(mg_reorder_pop(r, 150, 50, &it));
		ck_assert_uint_ge(it.ts, last);
		if (it.ts == last)
			ck_assert_uint_gt(it.sk_cgroup, tag);	/* ties: pushed first, out first */
		last = it.ts;
		tag = it.sk_cgroup;
	}
	ck_assert(!mg_reorder_pop(r, 1000, 0, &it));
	ck_assert_uint_eq(mg_reorder_early(r), 0);
	mg_reorder_free(r);
}
END_TEST

/* The lowest holds the rest back until it has settled itself. */
START_TEST(lowest_settles)
{
	struct mg_reorder_item it, early;
	struct mg_reorder *r;

	ck_assert_int_eq(mg_reorder_create(4, &r), 0);
	it = item(50, 100, 1);
	mg_reorder_push(r, &it, &early);
	it = item(40, 180, 2);		/* written before, read later */
	mg_reorder_push(r, &it, &early);
	ck_assert(!mg_reorder_pop(r, 200, 50, &it));
	ck_assert(mg_reorder_pop(r, 230, 50, &it));
	ck_assert_uint_eq(it.ts, 40);
	ck_assert(mg_reorder_pop(r, 230, 50, &it));
	ck_assert_uint_eq(it.ts, 50);
	/* settle 0: everything, now. One written before the last out: late. */
	ck_assert_uint_eq(mg_reorder_late(r), 0);
	it = item(7, 1000, 3);
	mg_reorder_push(r, &it, &early);
	ck_assert_uint_eq(mg_reorder_late(r), 1);
	ck_assert(mg_reorder_pop(r, 0, 0, &it));
	mg_reorder_free(r);
}
END_TEST

START_TEST(full_gives_early)
{
	struct mg_reorder_item it, early;
	struct mg_reorder *r;
	__u64 i;

	ck_assert_int_eq(mg_reorder_create(3, &r), 0);
	for (i = 0; i < 3; i++) {
		it = item(10 + i, 0, i);
		ck_assert(!mg_reorder_push(r, &it, &early));
	}
	it = item(5, 0, 9);
	ck_assert(mg_reorder_push(r, &it, &early));
	ck_assert_uint_eq(early.ts, 10);	/* the lowest held, not the newcomer */
	ck_assert_uint_eq(mg_reorder_len(r), 3);
	ck_assert_uint_eq(mg_reorder_early(r), 1);
	ck_assert(mg_reorder_pop(r, 0, 0, &it));
	ck_assert_uint_eq(it.ts, 5);
	mg_reorder_free(r);
}
END_TEST

/* Four rings, each in time order, read in random pieces: out sorted. */
START_TEST(rings_sorted)
{
	enum { RINGS = 4, N = 20000 };
	__u64 next[RINGS] = { 0 }, last = 0, now = 0;
	struct mg_reorder_item it, early;
	struct mg_reorder *r;
	unsigned int out = 0, k;

	srand(7);
	ck_assert_int_eq(mg_reorder_create(N, &r), 0);
	for (k = 0; k < N; k++) {
		unsigned int ring = rand() % RINGS;

		next[ring] += 1 + rand() % 100;
		it = item(next[ring], now, k);
		ck_assert(!mg_reorder_push(r, &it, &early));
		now += 1;
	}
	while (mg_reorder_pop(r, now, 0, &it)) {
		ck_assert_uint_ge(it.ts, last);
		last = it.ts;
		out++;
	}
	ck_assert_uint_eq(out, N);
	mg_reorder_free(r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("reorder");
	TCase *tc = tcase_create("reorder");

	tcase_add_test(tc, order_and_ties);
	tcase_add_test(tc, lowest_settles);
	tcase_add_test(tc, full_gives_early);
	tcase_add_test(tc, rings_sorted);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
