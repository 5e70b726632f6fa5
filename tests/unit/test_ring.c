// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the ring core (kmod/ring_core.c, built for user space).
 *
 * The stress test stands in for the kernel's nesting with signals: a writer
 * thread is interrupted by signal handlers that write to the same ring (as
 * IRQs and NMIs interrupt a task-level probe, one level inside another),
 * and a reader thread on another CPU drains concurrently. Every record
 * carries its writer's context and sequence number and a payload derived
 * from them, so any torn, duplicated, reordered or silently lost record is
 * caught.
 */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <unistd.h>
#include <time.h>

#include "ring_core.h"

#define EV	MAGNET_EVENT_FIRST_DYNAMIC

static unsigned char *mem;
static __u64 fake_clock;

/* The ring stamps records itself; a counter keeps tests deterministic. */
__u64 mg_ring_clock(void)
{
	return __atomic_add_fetch(&fake_clock, 1, __ATOMIC_RELAXED);
}

static struct mg_ring *ring_new(unsigned long size, enum mg_ring_mode mode)
{
	struct mg_ring *rb = calloc(1, sizeof(*rb));

	mem = aligned_alloc(4096, size);
	memset(mem, 0xa5, size);
	ck_assert_int_eq(mg_ring_init(rb, mem, size, mode, 3), 0);
	return rb;
}

static void ring_free(struct mg_ring *rb)
{
	free(rb->data);
	free(rb);
}

static unsigned char pattern(__u64 seq, unsigned int i)
{
	return (unsigned char)(seq * 131 + i * 7 + 1);
}

/* The stress test's interrupts, raised while a record is reserved. */
static void (*inside_push)(__u32 ctx, __u64 seq);

/* Write one record of @payload bytes; returns 1 if written. */
static int put(struct mg_ring *rb, __u32 ctx, __u64 seq, unsigned int payload)
{
	struct magnet_record *rec = mg_ring_reserve(rb, MAGNET_RECORD_HEADER + payload);
	unsigned int i;

	if (!rec)
		return 0;
	if (inside_push)
		inside_push(ctx, seq);
	rec->event_id = EV;
	rec->flags = 0;
	rec->cpu = rb->cpu;
	rec->cgroup = 0;
	rec->abstract_id = seq;
	rec->pid = ctx;
	rec->tgid = payload;
	for (i = 0; i < payload; i++)
		rec->payload[i] = pattern(seq, i);
	mg_ring_commit(rb, rec);
	return 1;
}

static unsigned long copy_mem(void *ctx, const void *src, unsigned long len)
{
	unsigned char **dst = ctx;

	memcpy(*dst, src, len);
	*dst += len;
	return 0;
}

static long drain(struct mg_ring *rb, void *buf, unsigned long max)
{
	static unsigned char bounce[1 << 16];
	unsigned char *dst = buf;
	struct mg_reader rd = {
		.copy = copy_mem, .ctx = &dst, .bounce = bounce, .bounce_size = sizeof(bounce),
	};

	return mg_ring_consume(rb, &rd, max);
}

/* check's ck_assert costs a syscall each: far too slow per payload byte. */
#define CHEAP(cond) do { if (!(cond)) ck_abort_msg("%s:%d: %s", __FILE__, __LINE__, #cond); } while (0)

/*
 * The same, read in place (mg_ring_peek/mg_ring_advance) as a reader of the
 * mapped ring does: walk [tail, commit) skipping padding, take whole
 * records up to @max bytes into @buf, give back exactly the bytes walked.
 */
static long drain_in_place(struct mg_ring *rb, void *buf, unsigned long max)
{
	unsigned long t, c = mg_ring_peek(rb, &t), pos = t, out = 0;
	unsigned long real = 0;
	long got;

	while (pos != c) {
		const struct magnet_record *rec = (const void *)(rb->data + (pos & rb->mask));

		if (rec->event_id != MAGNET_EVENT_PAD) {
			if (out + rec->size > max)
				break;
			memcpy((unsigned char *)buf + out, rec, rec->size);
			out += rec->size;
			real += rec->event_id >= MAGNET_EVENT_FIRST_DYNAMIC;
		}
		pos += rec->size;
	}
	got = mg_ring_advance(rb, t, pos - t);
	CHEAP(got == (long)real);
	return out;
}

/* Decoded view of a drained buffer. */
struct seen {
	unsigned long records, lost_full, lost_too_big, lost_nesting, overwritten;
	__u64 last_seq[8];
	int have[8];
	unsigned char *dup[8];	/* stress: one bit per sequence number seen */
	__u64 last_ts;		/* buffer order must be timestamp order */
};

#define DUP_BITS	(1UL << 28)


static void check_records(const unsigned char *buf, long len, struct seen *s, int strict_order)
{
	long off = 0;

	while (off < len) {
		const struct magnet_record *rec = (const void *)(buf + off);
		unsigned int i;

		CHEAP(rec->size >= MAGNET_RECORD_HEADER);
		CHEAP(rec->size % 8 == 0);
		CHEAP(off + rec->size <= len);
		CHEAP(rec->event_id != MAGNET_EVENT_PAD);
		CHEAP(rec->timestamp >= s->last_ts);
		s->last_ts = rec->timestamp;
		if (rec->event_id == MAGNET_EVENT_LOST) {
			const struct magnet_lost *l = (const void *)rec->payload;

			s->lost_full += l->full;
			s->lost_too_big += l->too_big;
			s->lost_nesting += l->nesting;
			s->overwritten += l->overwritten;
		} else {
			CHEAP(rec->event_id == EV);
			CHEAP(rec->pid < 8);
			CHEAP(rec->size == ((MAGNET_RECORD_HEADER + rec->tgid + 7) & ~7u));
			for (i = 0; i < rec->tgid; i++)
				CHEAP(rec->payload[i] == pattern(rec->abstract_id, i));
			for (; i < rec->size - MAGNET_RECORD_HEADER; i++)
				CHEAP(rec->payload[i] == 0);	/* no stale bytes */
			if (strict_order && s->have[rec->pid])
				CHEAP(rec->abstract_id > s->last_seq[rec->pid]);
			if (s->dup[rec->pid]) {
				__u64 q = rec->abstract_id;

				CHEAP(q < DUP_BITS);
				if (s->dup[rec->pid][q / 8] & (1 << (q % 8)))
					ck_abort_msg(
					      "record %llu of context %u seen twice",
					      (unsigned long long)q, rec->pid);
				s->dup[rec->pid][q / 8] |= 1 << (q % 8);
			}
			s->last_seq[rec->pid] = rec->abstract_id;
			s->have[rec->pid] = 1;
			s->records++;
		}
		off += rec->size;
	}
	CHEAP(off == len);
}

/* Like put(), with a 56-byte TASK record in front naming ctx. */
static int put_named(struct mg_ring *rb, __u32 ctx, __u64 seq, unsigned int payload)
{
	struct magnet_record *task = NULL, *rec;

	rec = mg_ring_reserve_meta(rb, MAGNET_RECORD_HEADER + payload,
				   MAGNET_RECORD_HEADER + sizeof(struct magnet_task), &task);
	if (!rec)
		return 0;
	ck_assert_ptr_eq((unsigned char *)task + task->size, rec);
	ck_assert_uint_eq(task->timestamp, rec->timestamp);
	task->event_id = MAGNET_EVENT_TASK;
	task->flags = 0;
	task->cpu = rb->cpu;
	task->pid = ctx;
	task->abstract_id = seq;
	memset(task->payload, 't', sizeof(struct magnet_task));
	rec->event_id = EV;
	rec->flags = 0;
	rec->cpu = rb->cpu;
	rec->abstract_id = seq;
	rec->pid = ctx;
	rec->tgid = payload;
	memset(rec->payload, 0, payload);
	mg_ring_commit(rb, rec);
	return 1;
}

/*
 * A TASK record shares its record's reservation: both or neither reach the
 * reader, adjacent, and only the record counts (written, bytes, reader's
 * records, losses, overwritten).
 */
START_TEST(test_meta_record)
{
	static unsigned char out[1 << 17];
	unsigned long written = 0, got = 0, tasks = 0, rec_bytes = 0;
	const struct magnet_record *prev;
	struct mg_ring_stats st;
	struct mg_ring *rb;
	long n, off;
	int mode, total;

	/* Every end point, so the last push stops at every kind of boundary. */
	for (mode = 0, total = 2000; mode < 2; total < 2042 ? total++ : (mode++, total = 2000)) {
		rb = ring_new(MG_RING_MIN_SIZE, mode ? MG_RING_OVERWRITE : MG_RING_DISCARD);
		written = got = tasks = rec_bytes = 0;
		/* Fill past the end: discard loses pairs, overwrite pushes them out. */
		for (__u64 seq = 0; seq < (__u64)total; seq++) {
			/* Sizes vary, so pushes end at any record boundary. */
			unsigned int payload = 8 * (seq % 7);
			int named = seq % 3 == 0;
			int ok = named ? put_named(rb, 1, seq, payload) : put(rb, 1, seq, payload);

			written += ok;
			rec_bytes += ok ? MAGNET_RECORD_HEADER + payload : 0;
		}
		mg_ring_stats(rb, &st);
		ck_assert_uint_eq(st.written, written);
		ck_assert_uint_eq(st.bytes, rec_bytes);
		if (mode) {
			ck_assert_uint_eq(written, total);
			ck_assert_uint_gt(st.overwritten, 0);
		} else {
			ck_assert_uint_eq(st.lost_full, total - written);	/* pairs count once */
		}
		for (n = 0; (off = drain(rb, out + n, sizeof(out) - n)) > 0; n += off)
			;
		ck_assert_int_eq(off, 0);
		ck_assert_int_gt(n, 0);
		prev = NULL;
		for (off = 0; off < n; off += ((struct magnet_record *)(out + off))->size) {
			const struct magnet_record *r = (const void *)(out + off);

			if (r->event_id == MAGNET_EVENT_TASK) {
				const struct magnet_record *next = (const void *)(out + off + r->size);

				tasks++;
				/* Always followed by its record, never orphaned. */
				ck_assert_int_lt(off + r->size, n);
				ck_assert_uint_eq(next->event_id, EV);
				ck_assert_uint_eq(next->abstract_id, r->abstract_id);
				ck_assert_uint_eq(next->abstract_id % 3, 0);
			} else if (r->event_id == EV) {
				/* A named record keeps its TASK record, overwrite or not. */
				if (r->abstract_id % 3 == 0)
					ck_assert(prev && prev->event_id == MAGNET_EVENT_TASK);
				got++;
			}
			prev = r;
		}
		ck_assert_uint_gt(tasks, 0);
		if (mode)	/* read + overwritten = written, TASK records aside */
			ck_assert_uint_eq(got + st.overwritten, written);
		else
			ck_assert_uint_eq(got, written);
		ck_assert_uint_eq(mg_ring_avail_records(rb), 0);
		ring_free(rb);
	}
}
END_TEST

START_TEST(test_init_rejects)
{
	struct mg_ring rb;
	static unsigned char buf[1 << 17];

	ck_assert_int_eq(mg_ring_init(&rb, buf, 1000, MG_RING_DISCARD, 0), -EINVAL);
	ck_assert_int_eq(mg_ring_init(&rb, buf, 3 << 16, MG_RING_DISCARD, 0), -EINVAL);
	ck_assert_int_eq(mg_ring_init(&rb, buf, 1 << 15, MG_RING_DISCARD, 0), -EINVAL);
	ck_assert_int_eq(mg_ring_init(&rb, buf, 1 << 17, 7, 0), -EINVAL);
	ck_assert_int_eq(mg_ring_init(&rb, buf, 1 << 17, MG_RING_OVERWRITE, 0), 0);
}
END_TEST

START_TEST(test_roundtrip_and_wrap)
{
	struct mg_ring *rb = ring_new(MG_RING_MIN_SIZE, MG_RING_DISCARD);
	static unsigned char out[1 << 16];
	struct seen s = { 0 };
	__u64 seq = 0;
	int round;

	/* Many times around the ring with sizes that do not divide it. */
	for (round = 0; round < 2000; round++) {
		unsigned int n = 1 + round % 13, i;
		long got;

		for (i = 0; i < n; i++, seq++)
			ck_assert(put(rb, 0, seq, (seq * 37) % 600));
		got = drain(rb, out, sizeof(out));
		ck_assert_int_gt(got, 0);
		check_records(out, got, &s, 1);
	}
	ck_assert_uint_eq(s.records, seq);
	ck_assert_uint_eq(s.lost_full + s.lost_too_big + s.lost_nesting, 0);
	ck_assert_uint_gt(local_read(&rb->head), 20 * rb->size);	/* it did wrap */
	ck_assert_int_eq(drain(rb, out, sizeof(out)), 0);
	ring_free(rb);
}
END_TEST

/*
 * In place: the records, padding and LOST records where the writer put
 * them, consumed only as far as the reader says, whole records only.
 */
START_TEST(test_in_place)
{
	struct mg_ring *rb = ring_new(MG_RING_MIN_SIZE, MG_RING_DISCARD);
	static unsigned char out[1 << 16];
	struct mg_ring_stats st;
	struct seen s = { 0 };
	unsigned long t, c, fired = 0, ok = 0;
	__u64 seq = 0;
	int round;

	for (round = 0; round < 2000; round++) {
		unsigned int n = 1 + round % 13, i;
		long got;

		for (i = 0; i < n; i++, seq++)
			ck_assert(put(rb, 0, seq, (seq * 37) % 600));
		/* Some rounds take a little at a time. */
		got = drain_in_place(rb, out, round % 3 ? sizeof(out) : 700);
		check_records(out, got, &s, 1);
		while ((got = drain_in_place(rb, out, sizeof(out))) > 0)
			check_records(out, got, &s, 1);
	}
	ck_assert_uint_eq(s.records, seq);
	ck_assert_uint_gt(local_read(&rb->head), 20 * rb->size);	/* it did wrap */
	ck_assert_uint_eq(mg_ring_avail_records(rb), 0);

	/* Refused, and nothing consumed: past commit, inside a record. */
	ring_free(rb);
	rb = ring_new(MG_RING_MIN_SIZE, MG_RING_DISCARD);	/* no padding first */
	s.have[0] = 0;
	ck_assert(put(rb, 0, seq++, 100));
	ck_assert(put(rb, 0, seq++, 100));
	c = mg_ring_peek(rb, &t);
	ck_assert_int_eq(mg_ring_advance(rb, t, c - t + 8), -EINVAL);
	ck_assert_int_eq(mg_ring_advance(rb, t, 8), -EINVAL);
	ck_assert_int_eq(mg_ring_advance(rb, t, MAGNET_RECORD_HEADER + 104 + 8), -EINVAL);
	ck_assert_int_eq(mg_ring_advance(rb, t + 144, 144), -ESTALE);
	ck_assert_uint_eq(mg_ring_avail_bytes(rb), c - t);
	ck_assert_int_eq(mg_ring_advance(rb, t + 8, 0), 0);	/* a look only */
	ck_assert_int_eq(mg_ring_advance(rb, t, MAGNET_RECORD_HEADER + 104), 1);
	s.records++;	/* given back without a look */
	/* The same give-back again: the tail moved, nothing more is taken. */
	ck_assert_int_eq(mg_ring_advance(rb, t, MAGNET_RECORD_HEADER + 104), -ESTALE);
	ck_assert_uint_eq(mg_ring_avail_records(rb), 1);
	check_records(out, drain_in_place(rb, out, sizeof(out)), &s, 1);
	ck_assert_uint_eq(s.records, seq);

	/* A full ring: the losses arrive in-band, in front of the next record. */
	while (fired < 10000) {
		ok += put(rb, 0, seq + fired, 64);
		fired++;
	}
	check_records(out, drain_in_place(rb, out, sizeof(out)), &s, 1);
	ck_assert(put(rb, 0, seq + fired, 64));
	check_records(out, drain_in_place(rb, out, sizeof(out)), &s, 1);
	mg_ring_stats(rb, &st);
	ck_assert_uint_eq(s.lost_full, fired - ok);
	ck_assert_uint_eq(st.lost_full, fired - ok);
	ck_assert_uint_eq(s.records, seq + ok + 1);
	ring_free(rb);

	/* An overwriting writer may rewrite unread bytes: no reading in place. */
	rb = ring_new(MG_RING_MIN_SIZE, MG_RING_OVERWRITE);
	ck_assert(put(rb, 0, 0, 16));
	ck_assert_int_eq(mg_ring_advance(rb, 0, MAGNET_RECORD_HEADER + 16), -EINVAL);
	ring_free(rb);
}
END_TEST

START_TEST(test_exact_fit_at_end)
{
	struct mg_ring *rb = ring_new(MG_RING_MIN_SIZE, MG_RING_DISCARD);
	static unsigned char out[1 << 16];
	struct seen s = { 0 };
	unsigned long per = 1024;	/* 1024-byte records divide the ring */
	__u64 seq;
	long got;

	for (seq = 0; seq < rb->size / per - 1; seq++)
		ck_assert(put(rb, 0, seq, per - MAGNET_RECORD_HEADER));
	got = drain(rb, out, sizeof(out));
	check_records(out, got, &s, 1);
	/* Now straddle the end: one fits exactly, the next starts at 0. */
	ck_assert(put(rb, 0, seq++, per - MAGNET_RECORD_HEADER));
	ck_assert(put(rb, 0, seq++, per - MAGNET_RECORD_HEADER));
	ck_assert_uint_eq(local_read(&rb->head) & rb->mask, per);
	got = drain(rb, out, sizeof(out));
	ck_assert_int_eq(got, 2 * per);
	check_records(out, got, &s, 1);
	ck_assert_uint_eq(s.records, seq);
	ring_free(rb);
}
END_TEST

START_TEST(test_too_big_and_lost_record)
{
	struct mg_ring *rb = ring_new(MG_RING_MIN_SIZE, MG_RING_DISCARD);
	static unsigned char out[1 << 16];
	struct mg_ring_stats st;
	struct seen s = { 0 };
	long got;

	ck_assert_ptr_null(mg_ring_reserve(rb, rb->max_record + 1));
	ck_assert_ptr_null(mg_ring_reserve(rb, 8));
	ck_assert(put(rb, 0, 1, 16));
	got = drain(rb, out, sizeof(out));
	/* The LOST record comes first, right where the losses happened. */
	ck_assert_uint_eq(((struct magnet_record *)out)->event_id, MAGNET_EVENT_LOST);
	check_records(out, got, &s, 1);
	ck_assert_uint_eq(s.lost_too_big, 2);
	ck_assert_uint_eq(s.records, 1);
	mg_ring_stats(rb, &st);
	ck_assert_uint_eq(st.lost_too_big, 2);
	ck_assert_uint_eq(st.written, 1);
	ring_free(rb);
}
END_TEST

START_TEST(test_full_discard_accounting)
{
	struct mg_ring *rb = ring_new(MG_RING_MIN_SIZE, MG_RING_DISCARD);
	static unsigned char out[1 << 17];
	struct mg_ring_stats st;
	struct seen s = { 0 };
	unsigned long fired = 0, ok = 0;
	long got;

	while (fired < 10000) {
		ok += put(rb, 0, fired, 64);
		fired++;
	}
	mg_ring_stats(rb, &st);
	ck_assert_uint_eq(st.written, ok);
	ck_assert_uint_eq(st.written + st.lost_full, fired);
	ck_assert_uint_lt(ok, fired);
	/* Oldest kept: discard mode drops the new ones. */
	got = drain(rb, out, sizeof(out));
	check_records(out, got, &s, 1);
	ck_assert_uint_eq(s.records, ok);
	ck_assert_uint_eq(s.last_seq[0], ok - 1);
	/* The next record after the drain reports every loss in front of it. */
	ck_assert(put(rb, 0, fired, 64));
	got = drain(rb, out, sizeof(out));
	check_records(out, got, &s, 1);
	ck_assert_uint_eq(s.lost_full, fired - ok);
	ring_free(rb);
}
END_TEST

/*
 * A ring being replaced (a resize) tells what no reader was told: losses
 * still pending, LOST records still unread, and an overwrite-mode ring's
 * counts its reader has not reported. Carried to the next ring, they come
 * out in its first LOST record, exactly.
 */
START_TEST(test_resize_carries_losses)
{
	static unsigned char out[1 << 17];
	unsigned long lost[MG_LOST_REASONS], fired, ok;
	struct mg_ring *old, *fresh;
	struct mg_ring_stats st;
	struct seen s = { 0 };
	long got;

	/* Discard: k losses, reported by an unread LOST record, then j pending. */
	old = ring_new(MG_RING_MIN_SIZE, MG_RING_DISCARD);
	for (fired = ok = 0; fired < 5000; fired++)
		ok += put(old, 0, fired, 64);
	ck_assert_ptr_null(mg_ring_reserve(old, old->max_record + 1));	/* too big */
	got = drain(old, out, sizeof(out));
	ck_assert_int_gt(got, 0);
	ck_assert(put(old, 0, fired++, 64));	/* carries the LOST record, unread */
	ok++;
	while (put(old, 0, fired++, 64))	/* until one is lost: pending, unreported */
		ok++;
	mg_ring_unreported(old, lost);
	mg_ring_stats(old, &st);
	ck_assert_uint_eq(lost[MG_LOST_FULL], st.lost_full);
	ck_assert_uint_eq(lost[MG_LOST_FULL], fired - ok);
	ck_assert_uint_eq(lost[MG_LOST_TOO_BIG], 1);
	ck_assert_uint_eq(lost[MG_LOST_NESTING] + lost[MG_LOST_OVERWRITTEN], 0);
	ring_free(old);

	fresh = ring_new(MG_RING_MIN_SIZE, MG_RING_DISCARD);
	mg_ring_carry_pending(fresh, lost);
	ck_assert(put(fresh, 0, 0, 64));
	got = drain(fresh, out, sizeof(out));
	ck_assert_uint_eq(((struct magnet_record *)out)->event_id, MAGNET_EVENT_LOST);
	check_records(out, got, &s, 1);
	ck_assert_uint_eq(s.lost_full, lost[MG_LOST_FULL]);
	ck_assert_uint_eq(s.lost_too_big, 1);
	ck_assert_uint_eq(s.records, 1);
	ring_free(fresh);

	/* Overwrite: what was pushed out, never read, is overwritten. */
	old = ring_new(MG_RING_MIN_SIZE, MG_RING_OVERWRITE);
	for (fired = 0; fired < 5000; fired++)
		ck_assert(put(old, 0, fired, 64));
	mg_ring_stats(old, &st);
	ck_assert_uint_gt(st.overwritten, 0);
	mg_ring_unreported(old, lost);
	ck_assert_uint_eq(lost[MG_LOST_OVERWRITTEN], st.overwritten);
	ck_assert_uint_eq(lost[MG_LOST_FULL] + lost[MG_LOST_TOO_BIG] + lost[MG_LOST_NESTING], 0);
	/* Once a read reported them, nothing is left to carry. */
	got = drain(old, out, 1024);
	ck_assert_int_gt(got, 0);
	mg_ring_unreported(old, lost);
	ck_assert_uint_eq(lost[MG_LOST_OVERWRITTEN], 0);
	ring_free(old);

	/* Carried into an overwrite ring and pushed out there: the reader says so. */
	fresh = ring_new(MG_RING_MIN_SIZE, MG_RING_OVERWRITE);
	lost[MG_LOST_OVERWRITTEN] = 7;
	lost[MG_LOST_FULL] = 3;
	mg_ring_carry_pending(fresh, lost);
	for (fired = 0; fired < 5000; fired++)
		ck_assert(put(fresh, 0, fired, 64));
	mg_ring_stats(fresh, &st);
	memset(&s, 0, sizeof(s));
	while ((got = drain(fresh, out, sizeof(out))) > 0)
		check_records(out, got, &s, 1);
	ck_assert_uint_eq(s.overwritten, st.overwritten + 7);
	ck_assert_uint_eq(s.lost_full, 3);
	ring_free(fresh);
}
END_TEST

START_TEST(test_overwrite_keeps_newest)
{
	struct mg_ring *rb = ring_new(MG_RING_MIN_SIZE, MG_RING_OVERWRITE);
	static unsigned char out[1 << 17];
	struct mg_ring_stats st;
	struct seen s = { 0 };
	unsigned long fired;
	long got;

	for (fired = 0; fired < 20000; fired++)
		ck_assert(put(rb, 1, fired, (fired * 13) % 200));
	mg_ring_stats(rb, &st);
	ck_assert_uint_eq(st.lost_full, 0);
	ck_assert_uint_gt(st.overwritten, 0);
	got = drain(rb, out, sizeof(out));
	ck_assert_uint_eq(((struct magnet_record *)out)->event_id, MAGNET_EVENT_LOST);
	check_records(out, got, &s, 1);
	while ((got = drain(rb, out, sizeof(out))) > 0)
		check_records(out, got, &s, 1);
	ck_assert_uint_eq(s.last_seq[1], fired - 1);		/* the newest is there */
	ck_assert_uint_eq(s.records + s.overwritten, fired);	/* and nothing silent */
	ck_assert_uint_eq(s.overwritten, st.overwritten);
	/* Keep going with a reader: the totals stay exact. */
	for (; fired < 50000; fired++) {
		ck_assert(put(rb, 1, fired, 100));
		if (fired % 777 == 0) {
			got = drain(rb, out, 4096);
			check_records(out, got, &s, 1);
		}
	}
	while ((got = drain(rb, out, sizeof(out))) > 0)
		check_records(out, got, &s, 1);
	mg_ring_stats(rb, &st);
	ck_assert_uint_eq(s.records + s.overwritten, fired);
	ck_assert_uint_eq(st.written, fired);
	ring_free(rb);
}
END_TEST

START_TEST(test_overwrite_lost_keeps_time_order)
{
	struct mg_ring *rb = ring_new(MG_RING_MIN_SIZE, MG_RING_OVERWRITE);
	static unsigned char out[1 << 17];
	struct magnet_record *outer;
	struct seen s = { 0 };
	unsigned long seq = 0;
	unsigned int i;
	long got;

	/*
	 * The reader finds nothing committed but losses to report while an
	 * older record is still reserved: the LOST record it makes must not
	 * be stamped later than that record, which it will read next.
	 */
	ck_assert(put(rb, 0, seq++, 64));
	got = drain(rb, out, sizeof(out));
	check_records(out, got, &s, 1);
	while (put(rb, 0, seq, 64))		/* unread records to push out */
		if (++seq > 50)
			break;
	outer = mg_ring_reserve(rb, MAGNET_RECORD_HEADER + 8);
	ck_assert_ptr_nonnull(outer);
	while (put(rb, 1, seq, 64))		/* nested: push up to @outer */
		seq++;
	got = drain(rb, out, sizeof(out));	/* only the losses so far */
	ck_assert_int_eq(got, MAGNET_RECORD_HEADER + sizeof(struct magnet_lost));
	ck_assert_uint_eq(((struct magnet_record *)out)->event_id, MAGNET_EVENT_LOST);
	check_records(out, got, &s, 0);
	outer->event_id = EV;
	outer->flags = 0;
	outer->cpu = 0;
	outer->cgroup = 0;
	outer->abstract_id = seq;
	outer->pid = 2;
	outer->tgid = 8;
	for (i = 0; i < 8; i++)
		outer->payload[i] = pattern(seq, i);
	mg_ring_commit(rb, outer);
	while ((got = drain(rb, out, sizeof(out))) > 0)
		check_records(out, got, &s, 0);
	ck_assert_uint_gt(s.overwritten, 0);
	ck_assert_uint_eq(s.have[2], 1);
	ring_free(rb);
}
END_TEST

START_TEST(test_small_reads_never_tear)
{
	struct mg_ring *rb = ring_new(MG_RING_MIN_SIZE, MG_RING_DISCARD);
	static unsigned char out[1 << 16];
	struct seen s = { 0 };
	unsigned long fired;
	long got, total = 0;

	for (fired = 0; fired < 300; fired++)
		ck_assert(put(rb, 0, fired, fired % 150));
	ck_assert_int_eq(drain(rb, out, 30), -EINVAL);	/* no record fits */
	while ((got = drain(rb, out, 200)) > 0) {
		ck_assert_int_le(got, 200);
		check_records(out, got, &s, 1);
		total += got;
	}
	ck_assert_int_eq(got, 0);
	ck_assert_uint_eq(s.records, fired);
	ring_free(rb);
}
END_TEST

/* Nested reservations publish only when the outermost commits. */
START_TEST(test_commit_order_under_nesting)
{
	struct mg_ring *rb = ring_new(MG_RING_MIN_SIZE, MG_RING_DISCARD);
	static unsigned char out[1 << 16];
	struct magnet_record *r[MG_RING_NEST_MAX];
	struct mg_ring_stats st;
	struct seen s = { 0 };
	int i;
	long got;

	for (i = 0; i < MG_RING_NEST_MAX; i++) {
		r[i] = mg_ring_reserve(rb, MAGNET_RECORD_HEADER);
		ck_assert_ptr_nonnull(r[i]);
		r[i]->event_id = EV;
		r[i]->pid = 0;
		r[i]->tgid = 0;
		r[i]->abstract_id = i;
	}
	ck_assert_ptr_null(mg_ring_reserve(rb, MAGNET_RECORD_HEADER));	/* too deep */
	for (i = MG_RING_NEST_MAX - 1; i > 0; i--) {
		mg_ring_commit(rb, r[i]);
		ck_assert_int_eq(drain(rb, out, sizeof(out)), 0);	/* outer unfinished */
	}
	mg_ring_commit(rb, r[0]);
	got = drain(rb, out, sizeof(out));
	check_records(out, got, &s, 1);
	ck_assert_uint_eq(s.records, MG_RING_NEST_MAX);
	mg_ring_stats(rb, &st);
	ck_assert_uint_eq(st.lost_nesting, 1);
	ring_free(rb);
}
END_TEST

static int notified;

static void count_notify(struct mg_ring *rb)
{
	notified++;
}

START_TEST(test_wake_once_per_crossing)
{
	struct mg_ring *rb = ring_new(MG_RING_MIN_SIZE, MG_RING_DISCARD);
	int i;

	rb->notify = count_notify;
	rb->wake_records = 10;
	notified = 0;
	mg_ring_arm(rb);
	for (i = 0; i < 9; i++)
		put(rb, 0, i, 8);
	ck_assert_int_eq(notified, 0);
	for (; i < 100; i++)
		put(rb, 0, i, 8);
	ck_assert_int_eq(notified, 1);	/* disarmed after the first crossing */
	rb->wake_records = 0;
	rb->wake_bytes = 4096;
	mg_ring_arm(rb);		/* 100 records * 48 bytes > 4096: due */
	ck_assert(mg_ring_wake_due(rb));
	put(rb, 0, i, 8);
	ck_assert_int_eq(notified, 2);
	ring_free(rb);
}
END_TEST

/*
 * Half the ring satisfies any armed condition: a record watermark that the
 * ring cannot reach (large records, few of them) still wakes the reader.
 */
START_TEST(test_wake_at_half_ring)
{
	struct mg_ring *rb = ring_new(MG_RING_MIN_SIZE, MG_RING_DISCARD);
	int i;

	rb->notify = count_notify;
	rb->wake_records = 1000;	/* 4 KiB records: 16 fit in 64 KiB */
	notified = 0;
	mg_ring_arm(rb);
	for (i = 0; i < 7; i++)
		put(rb, 0, i, 4000);
	ck_assert_int_eq(notified, 0);
	ck_assert(!mg_ring_half_full(rb));
	for (; i < 20; i++)
		put(rb, 0, i, 4000);
	ck_assert(mg_ring_half_full(rb));
	ck_assert_int_eq(notified, 1);
	ring_free(rb);
}
END_TEST

/*
 * A reader that keeps finding a writer inside a push gives up after a
 * bounded number of tries (-EAGAIN, nothing consumed) instead of spinning
 * with its lock held.
 */
START_TEST(test_overwrite_read_bounded)
{
	struct mg_ring *rb = ring_new(MG_RING_MIN_SIZE, MG_RING_OVERWRITE);
	static unsigned char out[1 << 16];
	struct seen s = { 0 };
	long got;

	ck_assert(put(rb, 0, 0, 8));
	local_inc(&rb->pushing);	/* a writer preempted mid-push, for ever */
	ck_assert_int_eq(drain(rb, out, sizeof(out)), -EAGAIN);
	local_dec(&rb->pushing);
	got = drain(rb, out, sizeof(out));
	ck_assert_int_gt(got, 0);
	check_records(out, got, &s, 1);
	ck_assert_uint_eq(s.records, 1);
	ring_free(rb);
}
END_TEST

/* ---- stress: a writer thread, nested signal writers, a reader thread ---- */

/*
 * The writer's contexts, as on a CPU: the task, then one signal per
 * interrupt level. A level's handler blocks its own and every lower level's
 * signal, so the kernel bounds the nesting as a CPU does: one frame per
 * level however fast the signals come (a handler that let its own signal
 * in piled up frames until the stack overflowed on a slow machine). Six
 * writers at once are more than MG_RING_NEST_MAX lets in.
 */
static const int level_signal[] = { 0, SIGUSR1, SIGUSR2, SIGURG, SIGWINCH, SIGVTALRM };
#define STRESS_LEVELS	((int)(sizeof(level_signal) / sizeof(level_signal[0])))

struct stress {
	struct mg_ring *rb;
	volatile int stop;
	volatile int writer_done;
	pthread_t writer;
	__u64 seq[STRESS_LEVELS];	/* per context, next sequence number */
	unsigned long fired;
	unsigned char *out;
	struct seen seen;
	unsigned long retries;	/* reads that returned -EAGAIN */
	int in_place;		/* the reader uses mg_ring_peek/advance */
};

static struct stress *st_g;

static void write_ctx(int ctx)
{
	struct stress *st = st_g;
	__u64 seq = __atomic_fetch_add(&st->seq[ctx], 1, __ATOMIC_RELAXED);

	put(st->rb, ctx, seq, (seq * 17 + ctx * 29) % 300);
	__atomic_fetch_add(&st->fired, 1, __ATOMIC_RELAXED);
}

/* A quarter of each level's pushes are interrupted by the next level. */
static void raise_next_level(__u32 level, __u64 seq)
{
	if (level + 1 < STRESS_LEVELS && seq % 4 == 0)
		raise(level_signal[level + 1]);
}

static void on_level(int sig)
{
	int level = 1;

	while (level_signal[level] != sig)
		level++;
	write_ctx(level);
	write_ctx(level);
}

static void *writer_main(void *arg)
{
	struct stress *st = arg;

	while (!st->stop)
		write_ctx(0);
	st->writer_done = 1;
	return NULL;
}

static void *reader_main(void *arg)
{
	struct stress *st = arg;
	long got;

	for (;;) {
		int done = st->writer_done;

		got = st->in_place ? drain_in_place(st->rb, st->out, 1 << 16) :
				     drain(st->rb, st->out, 1 << 16);
		if (got == -EAGAIN) {	/* pushes voided every try: as the kernel does */
			st->retries++;
			sched_yield();
			continue;
		}
		ck_assert_int_ge(got, 0);
		if (got > 0)
			check_records(st->out, got, &st->seen, 0);
		else if (done)
			break;
	}
	return NULL;
}

static void run_stress(enum mg_ring_mode mode, int in_place)
{
	struct stress *st = calloc(1, sizeof(*st));
	struct sigaction sa = { 0 };
	struct mg_ring_stats rs;
	pthread_t reader;
	struct timespec t0, now;
	unsigned long kicks = 0;

	st_g = st;
	st->rb = ring_new(MG_RING_MIN_SIZE, mode);
	st->in_place = in_place;
	st->out = malloc(1 << 16);
	for (int i = 0; i < STRESS_LEVELS; i++)
		st->seen.dup[i] = calloc(1, DUP_BITS / 8);
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = on_level;
	sigemptyset(&sa.sa_mask);
	for (int i = 1; i < STRESS_LEVELS; i++) {
		sigaddset(&sa.sa_mask, level_signal[i]);
		sigaction(level_signal[i], &sa, NULL);
	}

	inside_push = raise_next_level;
	pthread_create(&st->writer, NULL, writer_main, st);
	pthread_create(&reader, NULL, reader_main, st);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		/* Interrupt the writer wherever it is: mid-reserve, mid-commit;
		 * half the kicks at level 1, a quarter at 2, ... */
		pthread_kill(st->writer,
			     level_signal[1 + __builtin_ctzl(kicks | 1UL << (STRESS_LEVELS - 2))]);
		kicks++;
		if (kicks % 64 == 0)
			usleep(50);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((now.tv_sec - t0.tv_sec) * 1000000000L + now.tv_nsec - t0.tv_nsec < 1500000000L);
	st->stop = 1;
	pthread_join(st->writer, NULL);
	pthread_join(reader, NULL);
	inside_push = NULL;
	/* Losses still pending when the writer stopped have no LOST record yet. */
	mg_ring_stats(st->rb, &rs);
	{
		unsigned long pend = local_read(&st->rb->pending[0]) +
				     local_read(&st->rb->pending[1]) +
				     local_read(&st->rb->pending[2]);
		unsigned long lost_seen = st->seen.lost_full + st->seen.lost_too_big +
					  st->seen.lost_nesting + st->seen.overwritten;

		ck_assert_uint_gt(st->seq[1], 100);
		ck_assert_uint_gt(st->seq[2], 10);
		ck_assert_uint_eq(rs.written + rs.lost_full + rs.lost_too_big + rs.lost_nesting,
				  st->fired);
		ck_assert_uint_eq(st->seen.records + lost_seen + pend, st->fired);
		ck_assert_uint_eq(st->seen.records, rs.written - rs.overwritten);
		ck_assert_uint_gt(st->seq[STRESS_LEVELS - 1], 10);
		ck_assert_uint_gt(rs.lost_nesting, 0);
		fprintf(stderr, "  stress %s%s: fired %lu (level 1: %llu, %d: %llu) read %lu "
			"lost %lu (%lu too deep)\n",
			mode ? "overwrite" : "discard", in_place ? " in place" : "", st->fired,
			(unsigned long long)st->seq[1], STRESS_LEVELS - 1,
			(unsigned long long)st->seq[STRESS_LEVELS - 1], st->seen.records,
			lost_seen + pend, rs.lost_nesting);
	}
	for (int i = 1; i < STRESS_LEVELS; i++)
		signal(level_signal[i], SIG_DFL);
	ring_free(st->rb);
	for (int i = 0; i < STRESS_LEVELS; i++)
		free(st->seen.dup[i]);
	free(st->out);
	free(st);
}

START_TEST(test_stress_nested_discard)
{
	run_stress(MG_RING_DISCARD, 0);
}
END_TEST

START_TEST(test_stress_nested_in_place)
{
	run_stress(MG_RING_DISCARD, 1);
}
END_TEST

START_TEST(test_stress_nested_overwrite)
{
	run_stress(MG_RING_OVERWRITE, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ring");
	TCase *tc = tcase_create("core");
	TCase *ts = tcase_create("stress");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_init_rejects);
	tcase_add_test(tc, test_roundtrip_and_wrap);
	tcase_add_test(tc, test_exact_fit_at_end);
	tcase_add_test(tc, test_in_place);
	tcase_add_test(tc, test_too_big_and_lost_record);
	tcase_add_test(tc, test_full_discard_accounting);
	tcase_add_test(tc, test_overwrite_keeps_newest);
	tcase_add_test(tc, test_overwrite_lost_keeps_time_order);
	tcase_add_test(tc, test_small_reads_never_tear);
	tcase_add_test(tc, test_commit_order_under_nesting);
	tcase_add_test(tc, test_wake_once_per_crossing);
	tcase_add_test(tc, test_wake_at_half_ring);
	tcase_add_test(tc, test_overwrite_read_bounded);
	tcase_add_test(tc, test_meta_record);
	tcase_add_test(tc, test_resize_carries_losses);
	tcase_set_timeout(ts, 60);
	tcase_add_test(ts, test_stress_nested_discard);
	tcase_add_test(ts, test_stress_nested_in_place);
	tcase_add_test(ts, test_stress_nested_overwrite);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, ts);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
