// SPDX-License-Identifier: GPL-2.0
/*
 * lib/seqtrack.c: TCP bytes counted once per flow and direction. A
 * retransmission sent and a duplicate received are repeated; a segment
 * received out of order leaves a hole that its fill counts once; a
 * partial overlap counts its new part; sequence numbers wrap; segments
 * without payload, and other protocols, change nothing; a flow first
 * seen mid-stream; a jump beyond any window starts anew; a full table
 * evicts its least recently used flow (counted, never more than its
 * capacity); a full hole list drops its lowest (counted); and random
 * reordering, loss and duplication against a byte map.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "seqtrack.h"
#include "testutil.h"

/* A TCP segment of flow 10.0.0.1:40000 -> 10.0.0.2:5001 (+ port), sent or received. */
static struct mg_flow seg(int dir, unsigned int port, __u32 seq, __u32 len)
{
	struct mg_flow f = { .family = AF_INET, .proto = IPPROTO_TCP, .dir = dir,
			     .sport = htons(40000), .dport = htons(5001 + port),
			     .payload = len, .seq = seq, .has_seq = 1 };

	memcpy(f.saddr, "\x0a\0\0\x01", 4);
	memcpy(f.daddr, "\x0a\0\0\x02", 4);
	return f;
}

static struct mg_seqtrack *create(unsigned int cap)
{
	struct mg_seqtrack *t;

	ck_assert_int_eq(mg_seqtrack_create(cap, &t), 0);
	return t;
}

static unsigned int new_bytes(struct mg_seqtrack *t, int dir, unsigned int port,
			      __u32 seq, __u32 len)
{
	struct mg_flow f = seg(dir, port, seq, len);

	return mg_seqtrack_new_bytes(t, &f);
}

#define OUT	MAGNET_SKB_DIR_OUT
#define IN	MAGNET_SKB_DIR_IN

static struct mg_seqtrack_stats stats(const struct mg_seqtrack *t)
{
	struct mg_seqtrack_stats st;

	mg_seqtrack_stats(t, &st);
	return st;
}

/* Sent: 3 segments, the second sent again; received: one twice. */
START_TEST(retransmission)
{
	struct mg_seqtrack *t = create(16);

	ck_assert_uint_eq(new_bytes(t, OUT, 0, 1000, 1448), 1448);
	ck_assert_uint_eq(new_bytes(t, OUT, 0, 2448, 1448), 1448);
	ck_assert_uint_eq(new_bytes(t, OUT, 0, 3896, 1448), 1448);
	ck_assert_uint_eq(new_bytes(t, OUT, 0, 2448, 1448), 0);	/* retransmitted */
	/* The same ends received (loopback): a direction of its own. */
	ck_assert_uint_eq(new_bytes(t, IN, 0, 1000, 1448), 1448);
	ck_assert_uint_eq(new_bytes(t, IN, 0, 1000, 1448), 0);	/* duplicate */
	ck_assert_uint_eq(new_bytes(t, IN, 0, 2448, 2896), 2896);
	/* A retransmission that joins two segments (tcp_retrans_try_collapse). */
	ck_assert_uint_eq(new_bytes(t, OUT, 0, 1000, 2896), 0);
	ck_assert_uint_eq(stats(t).used, 2);
	ck_assert_uint_eq(stats(t).evictions + stats(t).holes_dropped, 0);
	mg_seqtrack_free(t);
	ck_assert_int_eq(mg_seqtrack_create(12, &t), -EINVAL);
	ck_assert_int_eq(mg_seqtrack_create(0, &t), -EINVAL);
	ck_assert_int_eq(mg_seqtrack_create(MG_SEQTRACK_MAX_CAPACITY * 2, &t), -EINVAL);
}
END_TEST

/* A segment lost, the next ones received; the lost one's fill counts once. */
START_TEST(hole_filled)
{
	struct mg_seqtrack *t = create(16);

	ck_assert_uint_eq(new_bytes(t, IN, 0, 0, 1000), 1000);
	ck_assert_uint_eq(new_bytes(t, IN, 0, 2000, 1000), 1000);	/* hole [1000, 2000) */
	ck_assert_uint_eq(new_bytes(t, IN, 0, 3000, 1000), 1000);
	ck_assert_uint_eq(new_bytes(t, IN, 0, 1000, 1000), 1000);	/* the fill */
	ck_assert_uint_eq(new_bytes(t, IN, 0, 1000, 1000), 0);
	ck_assert_uint_eq(new_bytes(t, IN, 0, 0, 4000), 0);
	/* Two holes, one segment over both and what lies between. */
	ck_assert_uint_eq(new_bytes(t, IN, 0, 5000, 1000), 1000);	/* [4000, 5000) */
	ck_assert_uint_eq(new_bytes(t, IN, 0, 7000, 1000), 1000);	/* [6000, 7000) */
	ck_assert_uint_eq(new_bytes(t, IN, 0, 3500, 4000), 2000);
	/* A hole split by a segment inside it, then the rest of it. */
	ck_assert_uint_eq(new_bytes(t, IN, 0, 10000, 100), 100);	/* [8000, 10000) */
	ck_assert_uint_eq(new_bytes(t, IN, 0, 8500, 500), 500);
	ck_assert_uint_eq(new_bytes(t, IN, 0, 8000, 2100), 1500);
	ck_assert_uint_eq(stats(t).holes_dropped, 0);
	mg_seqtrack_free(t);
}
END_TEST

/* A segment partly seen counts its new bytes only, above and in a hole. */
START_TEST(partial_overlap)
{
	struct mg_seqtrack *t = create(16);

	ck_assert_uint_eq(new_bytes(t, OUT, 0, 0, 1000), 1000);
	ck_assert_uint_eq(new_bytes(t, OUT, 0, 500, 1000), 500);	/* [1000, 1500) */
	ck_assert_uint_eq(new_bytes(t, OUT, 0, 2000, 1000), 1000);	/* hole [1500, 2000) */
	ck_assert_uint_eq(new_bytes(t, OUT, 0, 1200, 600), 300);	/* [1500, 1800) */
	ck_assert_uint_eq(new_bytes(t, OUT, 0, 1700, 2000), 200 + 700);
	ck_assert_uint_eq(new_bytes(t, OUT, 0, 0, 3700), 0);
	mg_seqtrack_free(t);
}
END_TEST

/* Sequence numbers wrap at 2^32: holes and repeats across the wrap. */
START_TEST(wraparound)
{
	struct mg_seqtrack *t = create(16);

	ck_assert_uint_eq(new_bytes(t, OUT, 0, 0xfffffc00, 0x200), 0x200);
	ck_assert_uint_eq(new_bytes(t, OUT, 0, 0xfffffe00, 0x400), 0x400);	/* to 0x200 */
	ck_assert_uint_eq(new_bytes(t, OUT, 0, 0xfffffd00, 0x200), 0);
	ck_assert_uint_eq(new_bytes(t, OUT, 0, 0x400, 0x100), 0x100);	/* hole [0x200, 0x400) */
	ck_assert_uint_eq(new_bytes(t, OUT, 0, 0xfffffc00, 0x700), 0x100);
	ck_assert_uint_eq(new_bytes(t, OUT, 0, 0x300, 0x200), 0x100);
	ck_assert_uint_eq(new_bytes(t, OUT, 0, 0xfffffc00, 0x900), 0);
	mg_seqtrack_free(t);
}
END_TEST

/* SYN, ACK, FIN: no payload, no entry, no change; other protocols pass. */
START_TEST(no_payload)
{
	struct mg_seqtrack *t = create(16);
	struct mg_flow u = seg(OUT, 0, 0, 300);

	ck_assert_uint_eq(new_bytes(t, OUT, 0, 12345, 0), 0);
	ck_assert_uint_eq(stats(t).used, 0);
	ck_assert_uint_eq(new_bytes(t, OUT, 0, 100, 1000), 1000);
	ck_assert_uint_eq(new_bytes(t, OUT, 0, 0x80000000, 0), 0);	/* far away */
	ck_assert_uint_eq(new_bytes(t, OUT, 0, 1100, 0), 0);
	ck_assert_uint_eq(new_bytes(t, OUT, 0, 100, 1000), 0);	/* still repeated */
	u.proto = IPPROTO_UDP;
	ck_assert_uint_eq(mg_seqtrack_new_bytes(t, &u), 300);
	ck_assert_uint_eq(mg_seqtrack_new_bytes(t, &u), 300);
	u.proto = IPPROTO_TCP;
	u.has_seq = 0;		/* a later fragment: no header */
	ck_assert_uint_eq(mg_seqtrack_new_bytes(t, &u), 300);
	ck_assert_uint_eq(stats(t).used, 1);
	mg_seqtrack_free(t);
}
END_TEST

/*
 * A flow first seen mid-stream: what lies below its first segment is
 * repeated. A segment beyond any window from it: the flow starts anew.
 */
START_TEST(base_and_jump)
{
	struct mg_seqtrack *t = create(16);
	const __u32 w = MG_SEQTRACK_WINDOW;

	ck_assert_uint_eq(new_bytes(t, IN, 0, 50000, 1000), 1000);
	ck_assert_uint_eq(new_bytes(t, IN, 0, 49000, 1000), 0);
	ck_assert_uint_eq(new_bytes(t, IN, 0, 49500, 2000), 500);	/* to 51500 */
	/* Just past the window ahead: anew; then the old bytes, far behind. */
	ck_assert_uint_eq(new_bytes(t, IN, 0, 51501 + w, 1000), 1000);
	ck_assert_uint_eq(new_bytes(t, IN, 0, 51501 + w, 1000), 0);
	ck_assert_uint_eq(new_bytes(t, IN, 0, 50000, 1000), 1000);
	ck_assert_uint_eq(new_bytes(t, IN, 0, 49000, 1000), 0);	/* below the new base */
	/* A hole the highest end left more than the window behind: given up. */
	ck_assert_uint_eq(new_bytes(t, IN, 0, 52000, 1000), 1000);	/* [51000, 52000) */
	ck_assert_uint_eq(new_bytes(t, IN, 0, 53000 + w / 2, 1), 1);
	ck_assert_uint_eq(new_bytes(t, IN, 0, 53001 + w, 1), 1);
	ck_assert_uint_eq(stats(t).holes_dropped, 0);
	ck_assert_uint_eq(new_bytes(t, IN, 0, 53002 + w + w / 2, 1), 1);
	ck_assert_uint_eq(stats(t).holes_dropped, 1);
	mg_seqtrack_free(t);
}
END_TEST

/* A full table: the least recently used flow goes, counted; memory fixed. */
START_TEST(table_full)
{
	struct mg_seqtrack *t = create(8);
	unsigned int i;

	for (i = 0; i < 8; i++)
		ck_assert_uint_eq(new_bytes(t, OUT, i, 0, 100), 100);
	ck_assert_uint_eq(stats(t).used, 8);
	ck_assert_uint_eq(stats(t).evictions, 0);
	for (i = 1; i < 8; i++)
		ck_assert_uint_eq(new_bytes(t, OUT, i, 100, 100), 100);
	ck_assert_uint_eq(new_bytes(t, OUT, 8, 0, 100), 100);	/* evicts flow 0 */
	ck_assert_uint_eq(stats(t).evictions, 1);
	ck_assert_uint_eq(stats(t).used, 8);
	ck_assert_uint_eq(new_bytes(t, OUT, 1, 0, 200), 0);	/* still known */
	ck_assert_uint_eq(new_bytes(t, OUT, 0, 0, 100), 100);	/* anew: counted again */
	for (i = 0; i < 1000; i++)
		new_bytes(t, OUT, 100 + i, 0, 100);
	ck_assert_uint_eq(stats(t).used, 8);
	ck_assert_uint_eq(stats(t).capacity, 8);
	ck_assert_uint_eq(stats(t).evictions, 1 + 1 + 1000);
	mg_seqtrack_free(t);
	/* A table of one flow. */
	t = create(1);
	ck_assert_uint_eq(new_bytes(t, IN, 0, 0, 100), 100);
	ck_assert_uint_eq(new_bytes(t, IN, 1, 0, 100), 100);
	ck_assert_uint_eq(new_bytes(t, IN, 1, 0, 100), 0);
	ck_assert_uint_eq(stats(t).evictions, 1);
	mg_seqtrack_free(t);
}
END_TEST

/* Five holes: the lowest is dropped (counted), its fill repeated. */
START_TEST(holes_full)
{
	struct mg_seqtrack *t = create(16);
	unsigned int i;

	for (i = 0; i <= MG_SEQTRACK_HOLES + 1; i++)
		ck_assert_uint_eq(new_bytes(t, IN, 0, i * 2000, 1000), 1000);
	ck_assert_uint_eq(stats(t).holes_dropped, 1);
	ck_assert_uint_eq(new_bytes(t, IN, 0, 1000, 1000), 0);	/* dropped */
	for (i = 1; i <= MG_SEQTRACK_HOLES; i++)
		ck_assert_uint_eq(new_bytes(t, IN, 0, i * 2000 + 1000, 1000), 1000);
	ck_assert_uint_eq(new_bytes(t, IN, 0, 0, 11000), 0);
	ck_assert_uint_eq(stats(t).holes_dropped, 1);
	mg_seqtrack_free(t);
}
END_TEST

/*
 * A stream from just below the wrap, in blocks of 5 segments of random
 * sizes, each block received in a random order (at most 4 holes), some
 * segments twice, some earlier bytes sent again, partly: the new bytes
 * are exactly those a byte map had not seen.
 */
START_TEST(random_against_map)
{
	enum { BYTES = 1 << 20, BLOCK = 5 };
	static unsigned char seen[BYTES];
	struct mg_seqtrack *t = create(4);
	const __u32 isn = 0xfff80000;
	unsigned long long total = 1000, fresh = 1000;
	unsigned int at = 0, i, k;

	tu_seed(23);
	memset(seen, 0, sizeof(seen));
	/* The flow's first bytes first: what comes before them is repeated. */
	ck_assert_uint_eq(new_bytes(t, IN, 0, isn, 1000), 1000);
	memset(seen, 1, 1000);
	at = 1000;
	while (at < BYTES - BLOCK * 3000) {
		unsigned int start[BLOCK], len[BLOCK], order[BLOCK];

		for (i = 0; i < BLOCK; i++) {
			start[i] = at;
			len[i] = 1 + tu_rand() % 2896;
			at += len[i];
			order[i] = i;
		}
		for (i = BLOCK - 1; i > 0; i--) {
			unsigned int j = tu_rand() % (i + 1), x = order[i];

			order[i] = order[j];
			order[j] = x;
		}
		for (k = 0; k < 2 * BLOCK; k++) {
			unsigned int s, l, want = 0, got;

			if (k < BLOCK) {
				i = order[k];
				s = start[i];
				l = len[i];
			} else if (tu_rand() % 2) {
				i = tu_rand() % BLOCK;	/* a duplicate, or a resend */
				s = start[i];
				l = len[i];
			} else {
				s = tu_rand() % at;	/* anything seen, partly */
				l = 1 + tu_rand() % (at - s < 3000 ? at - s : 3000);
			}
			for (i = s; i < s + l; i++)
				if (!seen[i]++)
					want++;
			got = new_bytes(t, IN, 0, isn + s, l);
			tu_assert_op(got, ==, want);
			total += l;
			fresh += got;
		}
	}
	ck_assert_uint_eq(fresh, at);
	ck_assert_uint_gt(total, fresh);
	ck_assert_uint_eq(stats(t).holes_dropped, 0);
	mg_seqtrack_free(t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("seqtrack");
	TCase *tc = tcase_create("seqtrack");

	tcase_add_test(tc, retransmission);
	tcase_add_test(tc, hole_filled);
	tcase_add_test(tc, partial_overlap);
	tcase_add_test(tc, wraparound);
	tcase_add_test(tc, no_payload);
	tcase_add_test(tc, base_and_jump);
	tcase_add_test(tc, table_full);
	tcase_add_test(tc, holes_full);
	tcase_add_test(tc, random_against_map);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
