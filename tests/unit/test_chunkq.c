// SPDX-License-Identifier: GPL-2.0
/*
 * daemon/chunkq.c: chunks come out in order and byte for byte across
 * wrap-around with pad frames, an empty ring starts again at 0, a full
 * ring refuses a chunk whole (-ENOBUFS, nothing of it queued), the -EINVAL
 * cases of create and put (MG_CHUNKQ_WHOLE included), arm and wake on the
 * fd, and a producer and a consumer thread sleeping in poll passing many
 * chunks with none lost and no hang.
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chunkq.h"
#include "testutil.h"

#define PAD_CPU	0xffffffffU	/* chunkq.c's pad frame marker */

/* ---- helpers ------------------------------------------------------------ */

/*
 * Chunk number seq: its length and bytes follow from seq alone, so the
 * consumer can check what it gets without sharing state with the producer.
 */
static size_t len_of(__u64 seq, size_t max)
{
	return 8 * (1 + (seq * 2654435761ULL >> 7) % (max / 8));
}

static __u32 cpu_of(__u64 seq)
{
	return seq % 7;
}

static void fill(unsigned char *buf, __u64 seq, size_t len)
{
	size_t i;

	memcpy(buf, &seq, 8);
	for (i = 8; i < len; i++)
		buf[i] = (unsigned char)(seq + i);
}

static int put_seq(struct mg_chunkq *q, __u64 seq, size_t max)
{
	unsigned char buf[8192];
	size_t len = len_of(seq, max);

	fill(buf, seq, len);
	return mg_chunkq_put(q, cpu_of(seq), buf, len);
}

/* The oldest chunk must be number seq; pop it. */
static void pop_seq(struct mg_chunkq *q, __u64 seq, size_t max)
{
	unsigned char want[8192];
	const void *data;
	size_t len;
	__u32 cpu;

	tu_assert_int(mg_chunkq_peek(q, &cpu, &data, &len), ==, 0);
	tu_assert_op(len, ==, len_of(seq, max));
	tu_assert_op(cpu, ==, cpu_of(seq));
	fill(want, seq, len);
	tu_assert(!memcmp(data, want, len));
	mg_chunkq_pop(q);
}

static bool empty(struct mg_chunkq *q)
{
	const void *data;
	size_t len;
	__u32 cpu;

	return mg_chunkq_peek(q, &cpu, &data, &len) == -EAGAIN;
}

static bool readable(const struct mg_chunkq *q)
{
	struct pollfd p = { .fd = mg_chunkq_fd(q), .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* ---- tests -------------------------------------------------------------- */

/*
 * Random sizes through a small ring, consumer lagging by a random amount:
 * every chunk comes out in order, and the ring wrapped with pad frames (a
 * put that took more than its own bytes).
 */
START_TEST(fifo_wrap)
{
	enum { N = 20000, MAX = 1024 };
	struct mg_chunkq *q;
	__u64 in = 0, out = 0;
	unsigned int pads = 0;

	ck_assert_int_eq(mg_chunkq_create(4096, &q), 0);
	ck_assert_uint_eq(mg_chunkq_size(q), 4096);
	tu_seed(11);
	while (out < N) {
		unsigned int k = tu_rand() % 4;

		while (k-- && in < N) {
			size_t before = mg_chunkq_used(q);
			int r = put_seq(q, in, MAX);

			if (r == -ENOBUFS) {
				tu_assert_op(mg_chunkq_used(q), ==, before);
				break;
			}
			tu_assert_int(r, ==, 0);
			if (mg_chunkq_used(q) - before >
			    MG_CHUNKQ_OVERHEAD + len_of(in, MAX))
				pads++;
			in++;
		}
		k = tu_rand() % 4;
		while (k-- && out < in)
			pop_seq(q, out++, MAX);
		tu_assert_op(mg_chunkq_peak(q), <=, 4096);
	}
	ck_assert_uint_eq(in, N);
	ck_assert(empty(q));
	ck_assert_uint_eq(mg_chunkq_used(q), 0);
	ck_assert_uint_gt(pads, 100);
	mg_chunkq_free(q);
}
END_TEST

static void pop_one(struct mg_chunkq *q, __u32 want_cpu, size_t want_len,
		    int fill_byte)
{
	unsigned char want[4096];
	const void *data;
	size_t len;
	__u32 cpu;

	ck_assert_int_eq(mg_chunkq_peek(q, &cpu, &data, &len), 0);
	ck_assert_uint_eq(cpu, want_cpu);
	ck_assert_uint_eq(len, want_len);
	memset(want, fill_byte, want_len);
	ck_assert(!memcmp(data, want, len));
	mg_chunkq_pop(q);
}

static int put_one(struct mg_chunkq *q, __u32 cpu, size_t len, int fill_byte)
{
	unsigned char buf[4096];

	memset(buf, fill_byte, len);
	return mg_chunkq_put(q, cpu, buf, len);
}

/*
 * Exactly size / (8 + len) chunks fit; a refused put changes nothing, also
 * one that would have needed a pad frame first; the queue goes on after.
 */
START_TEST(full_nobufs)
{
	const void *data;
	struct mg_chunkq *q;
	unsigned int i, round;
	size_t len;
	__u32 cpu;

	ck_assert_int_eq(mg_chunkq_create(4096, &q), 0);
	for (round = 0; round < 3; round++) {
		/* 504 + 8: eight fill the ring exactly. */
		for (i = 0; i < 8; i++)
			ck_assert_int_eq(put_one(q, i, 504, 'a' + i), 0);
		ck_assert_uint_eq(mg_chunkq_used(q), 4096);
		ck_assert_int_eq(put_one(q, 9, 8, 'x'), -ENOBUFS);
		ck_assert_uint_eq(mg_chunkq_used(q), 4096);
		for (i = 0; i < 8; i++)
			pop_one(q, i, 504, 'a' + i);
		ck_assert_int_eq(mg_chunkq_peek(q, &cpu, &data, &len), -EAGAIN);
		ck_assert_uint_eq(mg_chunkq_used(q), 0);
	}

	/*
	 * 2048 free, 1024 of it at the end: 1200 would need a pad of 1024
	 * first and is refused whole; 1016 fits the end exactly.
	 */
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(put_one(q, 10 + i, 1016, 'k' + i), 0);
	pop_one(q, 10, 1016, 'k');
	ck_assert_int_eq(put_one(q, 20, 1200, 'x'), -ENOBUFS);
	ck_assert_uint_eq(mg_chunkq_used(q), 2048);
	ck_assert_int_eq(put_one(q, 13, 1016, 'n'), 0);
	ck_assert_uint_eq(mg_chunkq_used(q), 3072);
	pop_one(q, 11, 1016, 'l');
	pop_one(q, 12, 1016, 'm');
	pop_one(q, 13, 1016, 'n');
	ck_assert_int_eq(mg_chunkq_peek(q, &cpu, &data, &len), -EAGAIN);

	/*
	 * 2064 in, 2048 queued: a 2040 after them would need a pad of 2032
	 * and is refused; once the ring is empty it goes at 0, no pad, and
	 * a second one fits after it.
	 */
	ck_assert_int_eq(put_one(q, 1, 8, 'p'), 0);
	ck_assert_int_eq(put_one(q, 2, 2040, 'q'), 0);
	pop_one(q, 1, 8, 'p');
	ck_assert_int_eq(put_one(q, 4, 2040, 's'), -ENOBUFS);
	ck_assert_uint_eq(mg_chunkq_used(q), 2048);
	pop_one(q, 2, 2040, 'q');
	ck_assert_uint_eq(mg_chunkq_used(q), 0);
	ck_assert_int_eq(put_one(q, 4, 2040, 's'), 0);
	ck_assert_int_eq(put_one(q, 5, 2040, 't'), 0);
	ck_assert_uint_eq(mg_chunkq_used(q), 4096);
	pop_one(q, 4, 2040, 's');
	pop_one(q, 5, 2040, 't');
	ck_assert_uint_eq(mg_chunkq_used(q), 0);
	ck_assert_uint_eq(mg_chunkq_peak(q), 4096);
	mg_chunkq_free(q);
}
END_TEST

/*
 * An empty ring takes the next chunk at its start, where the first went:
 * a steady stream stays in the same memory. A consumer that had not yet
 * looked finds it there; what is queued counts no skipped bytes.
 */
START_TEST(empty_rewinds)
{
	struct mg_chunkq *q;
	const void *data, *first;
	size_t len;
	__u32 cpu;
	int i;

	ck_assert_int_eq(mg_chunkq_create(4096, &q), 0);
	for (i = 0; i < 100; i++) {
		ck_assert_int_eq(put_one(q, i, 8 * (1 + i % 5), 'a' + i % 26), 0);
		ck_assert_uint_eq(mg_chunkq_used(q), 8 + 8 * (1 + i % 5));
		ck_assert_int_eq(put_one(q, i + 1, 24, 'z'), 0);
		ck_assert_int_eq(mg_chunkq_peek(q, &cpu, &data, &len), 0);
		if (!i)
			first = data;
		ck_assert_ptr_eq(data, first);
		pop_one(q, i, 8 * (1 + i % 5), 'a' + i % 26);
		pop_one(q, i + 1, 24, 'z');
		ck_assert_int_eq(mg_chunkq_peek(q, &cpu, &data, &len), -EAGAIN);
		ck_assert_uint_eq(mg_chunkq_used(q), 0);
	}
	ck_assert_uint_eq(mg_chunkq_peak(q), 8 + 40 + 8 + 24);
	mg_chunkq_free(q);
}
END_TEST

START_TEST(invalid)
{
	struct mg_chunkq *q = NULL;
	__u64 buf[1024] = { 0 };

	ck_assert_int_eq(mg_chunkq_create(0, &q), -EINVAL);
	ck_assert_int_eq(mg_chunkq_create(MG_CHUNKQ_MIN - 1, &q), -EINVAL);
	ck_assert_int_eq(mg_chunkq_create_flags(4096, 1U << 7, &q), -EINVAL);
	ck_assert_int_eq(mg_chunkq_create_flags(8, MG_CHUNKQ_WHOLE, &q),
			 -EINVAL);
	ck_assert_ptr_null(q);

	ck_assert_int_eq(mg_chunkq_create(4096 + 7, &q), 0);
	ck_assert_uint_eq(mg_chunkq_size(q), 4096);
	ck_assert_int_eq(mg_chunkq_put(q, 0, buf, 0), -EINVAL);
	ck_assert_int_eq(mg_chunkq_put(q, 0, buf, 12), -EINVAL);
	ck_assert_int_eq(mg_chunkq_put(q, PAD_CPU, buf, 8), -EINVAL);
	/* Over half the ring, framing included. */
	ck_assert_int_eq(mg_chunkq_put(q, 0, buf, 2048 - 8 + 8), -EINVAL);
	ck_assert_uint_eq(mg_chunkq_used(q), 0);
	ck_assert_int_eq(mg_chunkq_put(q, 0, buf, 2048 - 8), 0);
	mg_chunkq_free(q);

	/* WHOLE: up to the ring, tiny rings, -ENOBUFS where it won't fit. */
	ck_assert_int_eq(mg_chunkq_create_flags(16, MG_CHUNKQ_WHOLE, &q), 0);
	ck_assert_int_eq(mg_chunkq_put(q, 0, buf, 16), -EINVAL);
	ck_assert_int_eq(mg_chunkq_put(q, 0, buf, 8), 0);
	ck_assert_int_eq(mg_chunkq_put(q, 0, buf, 8), -ENOBUFS);
	mg_chunkq_free(q);
	ck_assert_int_eq(mg_chunkq_create_flags(4096, MG_CHUNKQ_WHOLE |
						MG_CHUNKQ_PREFAULT, &q), 0);
	ck_assert_int_eq(mg_chunkq_put(q, 0, buf, 4096), -EINVAL);
	ck_assert_int_eq(mg_chunkq_put(q, 0, buf, 4088), 0);
	mg_chunkq_pop(q);
	ck_assert_int_eq(mg_chunkq_put(q, 0, buf, 8), 0);
	mg_chunkq_pop(q);
	/* Empty, 16 bytes in: the whole ring again, from 0. */
	ck_assert_int_eq(mg_chunkq_put(q, 0, buf, 4088), 0);
	ck_assert_uint_eq(mg_chunkq_used(q), 4096);
	ck_assert_int_eq(mg_chunkq_put(q, 0, buf, 8), -ENOBUFS);
	mg_chunkq_free(q);
}
END_TEST

/*
 * arm: false (fd cleared) while chunks wait; true on empty, and then the
 * next put, not earlier, makes the fd readable, once. wake does it too.
 */
START_TEST(arm_wake)
{
	struct mg_chunkq *q;
	__u64 buf[2] = { 0 }, v;

	ck_assert_int_eq(mg_chunkq_create(4096, &q), 0);
	ck_assert(!readable(q));
	/* Not armed: a put does not touch the fd. */
	ck_assert_int_eq(mg_chunkq_put(q, 0, buf, 16), 0);
	ck_assert(!readable(q));
	ck_assert(!mg_chunkq_arm(q));
	mg_chunkq_pop(q);

	ck_assert(mg_chunkq_arm(q));
	ck_assert(!readable(q));
	ck_assert_int_eq(mg_chunkq_put(q, 0, buf, 16), 0);
	ck_assert(readable(q));
	ck_assert_int_eq(mg_chunkq_put(q, 0, buf, 16), 0);
	/* One wakeup per arm: the second put made no system call. */
	ck_assert_int_eq(read(mg_chunkq_fd(q), &v, sizeof(v)), sizeof(v));
	ck_assert_uint_eq(v, 1);

	/* Chunks waiting: false, and a stale wakeup is cleared. */
	mg_chunkq_wake(q);
	ck_assert(readable(q));
	ck_assert(!mg_chunkq_arm(q));
	ck_assert(!readable(q));
	mg_chunkq_pop(q);
	mg_chunkq_pop(q);

	/* Armed and empty: wake alone makes it readable, arm clears it. */
	ck_assert(mg_chunkq_arm(q));
	mg_chunkq_wake(q);
	ck_assert(readable(q));
	ck_assert(mg_chunkq_arm(q));
	ck_assert(!readable(q));
	mg_chunkq_free(q);
}
END_TEST

/*
 * arm_batch: puts that leave fewer than the batch's bytes queued do not
 * wake; the one that reaches it does, once; armed with that many queued
 * already, false. 0 is plain arm.
 */
START_TEST(arm_batch)
{
	struct mg_chunkq *q;
	__u64 buf[8] = { 0 };

	ck_assert_int_eq(mg_chunkq_create(4096, &q), 0);
	/* 3 chunks of 8 + 16 bytes reach 72, not 2. */
	ck_assert(mg_chunkq_arm_batch(q, 72));
	ck_assert_int_eq(mg_chunkq_put(q, 0, buf, 16), 0);
	ck_assert_int_eq(mg_chunkq_put(q, 0, buf, 16), 0);
	ck_assert(!readable(q));
	ck_assert_int_eq(mg_chunkq_put(q, 0, buf, 16), 0);
	ck_assert(readable(q));
	/* 72 queued: a batch of 72 is there, one of 73 is not. */
	ck_assert(!mg_chunkq_arm_batch(q, 72));
	ck_assert(!readable(q));
	ck_assert(mg_chunkq_arm_batch(q, 73));
	ck_assert_int_eq(mg_chunkq_put(q, 0, buf, 8), 0);
	ck_assert(readable(q));
	/* Taken while asleep: the next batch counts what is queued then. */
	mg_chunkq_pop(q);
	mg_chunkq_pop(q);
	mg_chunkq_pop(q);
	ck_assert(mg_chunkq_arm_batch(q, 64));	/* 16 queued */
	ck_assert(!readable(q));
	ck_assert_int_eq(mg_chunkq_put(q, 0, buf, 32), 0);	/* 56 */
	ck_assert(!readable(q));
	ck_assert_int_eq(mg_chunkq_put(q, 0, buf, 8), 0);	/* 72 */
	ck_assert(readable(q));
	/* 0: any put, as mg_chunkq_arm (the queue must be empty). */
	ck_assert(!mg_chunkq_arm_batch(q, 0));
	while (mg_chunkq_used(q)) {
		mg_chunkq_pop(q);
	}
	ck_assert(mg_chunkq_arm_batch(q, 0));
	ck_assert_int_eq(mg_chunkq_put(q, 0, buf, 8), 0);
	ck_assert(readable(q));
	mg_chunkq_free(q);
}
END_TEST

/* ---- two threads -------------------------------------------------------- */

struct stress {
	struct mg_chunkq *q;
	__u64 n;
	bool slow_producer;	/* the consumer sleeps often */
	_Atomic bool done;
	__u64 full;		/* the producer's -ENOBUFS, retried */
};

static void *producer(void *arg)
{
	struct stress *s = arg;
	__u64 seq;

	for (seq = 0; seq < s->n; seq++) {
		int r;

		while ((r = put_seq(s->q, seq, 1024)) == -ENOBUFS) {
			s->full++;
			sched_yield();
		}
		if (r)
			abort();	/* Check asserts: test thread only */
		if (s->slow_producer && seq % 64 == 63)
			usleep(50);
	}
	atomic_store(&s->done, true);
	return NULL;
}

/*
 * The consumer takes what is there and sleeps in poll once arm says the
 * queue is empty. A poll that times out with chunks waiting is a lost
 * wakeup; a hang would also end in Check's timeout.
 */
START_TEST(two_threads)
{
	struct stress s = { .n = 300000, .slow_producer = !_i };
	unsigned int sleeps = 0;
	pthread_t th;
	__u64 seq = 0;

	ck_assert_int_eq(mg_chunkq_create(16384, &s.q), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, producer, &s), 0);
	while (seq < s.n) {
		struct pollfd p = { .fd = mg_chunkq_fd(s.q), .events = POLLIN };
		const void *data;
		size_t len;
		__u32 cpu;
		int r;

		if (!mg_chunkq_peek(s.q, &cpu, &data, &len)) {
			pop_seq(s.q, seq++, 1024);
			if (!s.slow_producer && seq % 256 == 0)
				usleep(50);
			continue;
		}
		if (!mg_chunkq_arm(s.q))
			continue;
		sleeps++;
		while ((r = poll(&p, 1, 5000)) < 0 && errno == EINTR)
			;
		tu_assert_int(r, >=, 0);
		/* Timed out with chunks waiting: a lost wakeup. */
		if (!r)
			tu_assert(empty(s.q));
	}
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert(atomic_load(&s.done));
	ck_assert(empty(s.q));
	ck_assert_uint_eq(mg_chunkq_used(s.q), 0);
	ck_assert_uint_le(mg_chunkq_peak(s.q), 16384);
	/* The side made to wait did: the test exercised what it meant to. */
	if (s.slow_producer)
		ck_assert_uint_gt(sleeps, 0);
	else
		ck_assert_uint_gt(s.full, 0);
	mg_chunkq_free(s.q);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("chunkq");
	TCase *tc = tcase_create("chunkq");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, fifo_wrap);
	tcase_add_test(tc, full_nobufs);
	tcase_add_test(tc, empty_rewinds);
	tcase_add_test(tc, invalid);
	tcase_add_test(tc, arm_wake);
	tcase_add_test(tc, arm_batch);
	tcase_add_loop_test(tc, two_threads, 0, 2);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
