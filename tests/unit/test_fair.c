// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of per-job fairness (kmod/fair.h, UAPI FAIRNESS) on the real
 * ring core, built for user space. The writer below is magnet_reserve()
 * without TASK records: admit, reserve, done, commit. Every count is
 * checked against the stream a reader gets, so a loss the rule makes but
 * does not report, or a record it drops from a job under its share, fails.
 */
#include <check.h>
#include <stdlib.h>
#include <stdio.h>

#include "fair.h"

#define EV		MAGNET_EVENT_FIRST_DYNAMIC
#define RING		(64UL << 10)
#define PAYLOAD		24	/* 64-byte records, as row 2's probe */

unsigned int mg_fair_fill = MAGNET_FAIR_FILL_DEFAULT;
static __u64 fake_clock;

__u64 mg_ring_clock(void)
{
	return ++fake_clock;
}

struct world {
	struct mg_ring rb;
	struct mg_fair_cpu fc;
};

static struct world *world_new(unsigned long size)
{
	struct world *w = calloc(1, sizeof(*w));
	void *mem = aligned_alloc(4096, size);

	ck_assert_ptr_nonnull(w);
	ck_assert_ptr_nonnull(mem);
	ck_assert_int_eq(mg_ring_init(&w->rb, mem, size, MG_RING_DISCARD, 0), 0);
	mg_fair_cpu_init(&w->fc);
	return w;
}

static void world_free(struct world *w)
{
	free(w->rb.data);
	free(w);
}

/* magnet_reserve() and magnet_commit(), TASK records aside: 1 if written. */
static int put(struct world *w, unsigned long job, int intr)
{
	unsigned int len = MAGNET_RECORD_HEADER + PAYLOAD, plan;
	struct magnet_record *rec, *meta = NULL;
	struct mg_fair_job *j;

	j = mg_fair_admit(&w->fc, &w->rb, job, intr);
	if (!j)
		return 0;
	plan = mg_fair_reports(&w->fc, &w->rb, j);
	rec = mg_ring_reserve_meta(&w->rb, len, mg_fair_meta(plan), &meta);
	meta = mg_fair_done(&w->fc, &w->rb, j, plan, rec, meta,
			    ((len + 7) & ~7u) + mg_fair_meta(plan));
	if (!rec)
		return 0;
	if (plan)	/* the JOB_LOST records end where the record starts */
		ck_assert_ptr_eq(meta, rec);
	rec->event_id = EV;
	rec->flags = 0;
	rec->cpu = 0;
	rec->cgroup = (__u32)job;
	rec->abstract_id = job;
	rec->pid = 0;
	rec->tgid = 0;
	memset(rec->payload, 0, PAYLOAD);
	mg_ring_commit(&w->rb, rec);
	return 1;
}

/* What a reader learnt from the stream, per job. */
#define JOBS	512
struct tally {
	unsigned long id[JOBS], records[JOBS], job_lost[JOBS];
	unsigned long lost_ring;	/* LOST records: full, too_big, nesting */
};

static unsigned int slot_of(struct tally *s, unsigned long id)
{
	unsigned int i;

	for (i = 0; i < JOBS && s->id[i] && s->id[i] != id; i++)
		;
	ck_assert_uint_lt(i, JOBS);
	s->id[i] = id;
	return i;
}

static unsigned long copy_mem(void *ctx, const void *src, unsigned long len)
{
	unsigned char **dst = ctx;

	memcpy(*dst, src, len);
	*dst += len;
	return 0;
}

/* Consume up to @max bytes (0: all) and tally what they hold. */
static void drain(struct world *w, struct tally *s, unsigned long max)
{
	static unsigned char buf[RING * 16];
	unsigned char *dst = buf;
	struct mg_reader rd = { .copy = copy_mem, .ctx = &dst };
	long got, off = 0;

	got = mg_ring_consume(&w->rb, &rd, max ? max : sizeof(buf));
	if (got == -EINVAL || got == 0)
		return;
	ck_assert_int_gt(got, 0);
	while (off < got) {
		const struct magnet_record *r = (const void *)(buf + off);

		ck_assert_uint_ne(r->event_id, MAGNET_EVENT_PAD);
		if (r->event_id == MAGNET_EVENT_LOST) {
			const struct magnet_lost *l = (const void *)r->payload;

			s->lost_ring += l->full + l->too_big + l->nesting;
		} else if (r->event_id == MAGNET_EVENT_JOB_LOST) {
			ck_assert_uint_eq(r->size, MG_JOB_LOST_LEN);
			ck_assert_uint_eq(r->cgroup, (__u32)r->abstract_id);
			s->job_lost[slot_of(s, r->abstract_id)] +=
				((const struct magnet_job_lost *)r->payload)->fair;
		} else {
			ck_assert_uint_eq(r->event_id, EV);
			s->records[slot_of(s, r->abstract_id)]++;
		}
		off += r->size;
	}
	ck_assert_int_eq(off, got);
}

static struct mg_fair_job *job_of(struct world *w, unsigned long id)
{
	for (unsigned int i = 0; i < MG_FAIR_SLOTS; i++)
		if (w->fc.jobs[i].id == id)
			return &w->fc.jobs[i];
	return NULL;
}

/* Every pending loss of the CPU, which its unreported count must equal. */
static unsigned long pending_all(struct world *w)
{
	unsigned long p = local_read(&w->fc.shared.pending) + local_read(&w->fc.orphan);

	for (unsigned int i = 0; i < MG_FAIR_SLOTS; i++)
		p += local_read(&w->fc.jobs[i].pending);
	ck_assert_uint_eq(p, local_read(&w->fc.unreported));
	return p;
}

/* One job alone is never held back: exactly the ring's own behaviour. */
START_TEST(test_alone_is_the_ring)
{
	struct world *w = world_new(RING);
	struct mg_ring_stats st;
	struct tally s = { 0 };
	unsigned long written = 0, n = 20000;

	for (unsigned long i = 0; i < n; i++)
		written += put(w, 7, 0);
	mg_ring_stats(&w->rb, &st);
	ck_assert_uint_eq(local_read(&w->fc.lost_fair), 0);
	ck_assert_uint_eq(st.written, written);
	ck_assert_uint_eq(st.written + st.lost_full, n);
	/* Filled to the last record that fits, as without the rule. */
	ck_assert_uint_gt(mg_ring_avail_bytes(&w->rb), RING - 64 - 1);
	ck_assert_uint_eq(written, RING / 64);
	drain(w, &s, 0);
	ck_assert_uint_eq(s.records[slot_of(&s, 7)], written);
	ck_assert_uint_eq(local_read(&job_of(w, 7)->written), written);
	ck_assert_uint_eq(local_read(&job_of(w, 7)->lost_ring), n - written);
	world_free(w);
}
END_TEST

/*
 * A floods, B writes one record per 100 of A's attempts, the reader takes
 * one record per 4 attempts of A's: B loses nothing, the ring is never
 * full, and A's losses are exact, in the stream and in its counters.
 * @fill 0: the rule off, and B loses as A does.
 */
static void flood(unsigned int fill, unsigned long *b_lost)
{
	struct world *w = world_new(RING);
	unsigned long a = 0, b = 0, a_ok = 0, b_ok = 0;
	struct mg_fair_job *ja, *jb;
	struct mg_ring_stats st;
	struct tally s = { 0 };

	mg_fair_fill = fill;
	/* B first, as on a node: the flood starts among running jobs. */
	b++;
	b_ok += put(w, 2, 0);
	for (unsigned long i = 0; i < 400000; i++) {
		a++;
		a_ok += put(w, 1, 0);
		if (i % 100 == 0) {
			b++;
			b_ok += put(w, 2, 0);
		}
		if (i % 4 == 0)
			drain(w, &s, 72);	/* one record, or a LOST record */
	}
	drain(w, &s, 0);
	mg_ring_stats(&w->rb, &st);
	ja = job_of(w, 1);
	jb = job_of(w, 2);
	ck_assert_ptr_nonnull(ja);
	ck_assert_ptr_nonnull(jb);
	ck_assert_uint_eq(s.records[slot_of(&s, 1)], a_ok);
	ck_assert_uint_eq(s.records[slot_of(&s, 2)], b_ok);
	ck_assert_uint_eq(local_read(&ja->written), a_ok);
	ck_assert_uint_eq(local_read(&jb->written), b_ok);
	/* Every loss of each job counted once, for that job. */
	ck_assert_uint_eq(local_read(&ja->lost_fair) + local_read(&ja->lost_ring), a - a_ok);
	ck_assert_uint_eq(local_read(&jb->lost_fair) + local_read(&jb->lost_ring), b - b_ok);
	ck_assert_uint_eq(st.lost_full, local_read(&ja->lost_ring) + local_read(&jb->lost_ring));
	/* Never silent: in band, or pending. */
	ck_assert_uint_eq(s.job_lost[slot_of(&s, 1)] + local_read(&ja->pending),
			  local_read(&ja->lost_fair));
	ck_assert_uint_eq(s.job_lost[slot_of(&s, 2)] + local_read(&jb->pending),
			  local_read(&jb->lost_fair));
	ck_assert_uint_eq(local_read(&w->fc.lost_fair),
			  local_read(&ja->lost_fair) + local_read(&jb->lost_fair));
	pending_all(w);
	/* A's next record that fits reports what is pending. */
	ck_assert(put(w, 1, 0));
	drain(w, &s, 0);
	ck_assert_uint_eq(local_read(&ja->pending), 0);
	ck_assert_uint_eq(s.job_lost[slot_of(&s, 1)], local_read(&ja->lost_fair));
	ck_assert_uint_eq(s.lost_ring, st.lost_full);
	if (fill) {
		ck_assert_uint_gt(local_read(&ja->lost_fair), a / 2);	/* the rule held A */
		ck_assert_uint_eq(local_read(&ja->lost_ring), 0);
		ck_assert_uint_eq(st.lost_full, 0);	/* never full */
	} else {
		ck_assert_uint_eq(local_read(&w->fc.lost_fair), 0);
	}
	*b_lost = b - b_ok;
	mg_fair_fill = MAGNET_FAIR_FILL_DEFAULT;
	world_free(w);
}

START_TEST(test_flood_spares_the_others)
{
	unsigned long b_lost;

	flood(MAGNET_FAIR_FILL_DEFAULT, &b_lost);
	ck_assert_uint_eq(b_lost, 0);
}
END_TEST

START_TEST(test_flood_without_the_rule)
{
	unsigned long b_lost;

	flood(0, &b_lost);
	ck_assert_uint_gt(b_lost, 0);	/* what the rule is for */
}
END_TEST

/* Interrupt context is the shared job, whatever task it interrupted. */
START_TEST(test_interrupts_are_shared)
{
	struct world *w = world_new(RING);

	ck_assert(put(w, 5, 1));
	ck_assert(put(w, 5, 1));
	ck_assert(put(w, 5, 0));
	ck_assert_uint_eq(local_read(&w->fc.shared.written), 2);
	ck_assert_uint_eq(local_read(&job_of(w, 5)->written), 1);
	world_free(w);
}
END_TEST

/* More jobs than slots: bounded probing, then the shared job; idle slots go. */
START_TEST(test_table_full_and_reuse)
{
	struct world *w = world_new(RING);
	struct tally s = { 0 };
	unsigned long slotted = 0;

	mg_fair_fill = 0;	/* counting only */
	for (unsigned long id = 100; id < 300; id++) {
		ck_assert(put(w, id, 0));
		drain(w, &s, 0);
	}
	for (unsigned int i = 0; i < MG_FAIR_SLOTS; i++)
		slotted += !!w->fc.jobs[i].id;
	ck_assert_uint_le(slotted, MG_FAIR_SLOTS);
	ck_assert_uint_eq(slotted + local_read(&w->fc.shared.written), 200);
	ck_assert_uint_gt(local_read(&w->fc.shared.written), 0);
	/* Two windows of one job: the others are idle now, new jobs get slots. */
	for (unsigned long i = 0; i < 3 * RING / 64; i++) {
		ck_assert(put(w, 1, 0));
		drain(w, &s, 0);
	}
	ck_assert(put(w, 1000, 0));
	ck_assert_ptr_nonnull(job_of(w, 1000));
	mg_fair_fill = MAGNET_FAIR_FILL_DEFAULT;
	world_free(w);
}
END_TEST

/* Another job whose hash is @id's. */
static unsigned long collide(unsigned long id)
{
	unsigned long x = id + 1;

	while (mg_fair_hash(x) != mg_fair_hash(id))
		x++;
	return x;
}

/*
 * A job throttled, then gone: when its slot goes to another job, its
 * pending losses are reported in front of that job's record, naming it.
 */
START_TEST(test_orphan_reported)
{
	struct world *w = world_new(RING);
	unsigned long x = 11, y = collide(x), lost;
	struct tally s = { 0 };
	struct mg_fair_job *jx;

	ck_assert_uint_ne(mg_fair_hash(3), mg_fair_hash(x));
	ck_assert(put(w, 3, 0));		/* a second job: the rule applies */
	while (put(w, x, 0) || !local_read(&w->fc.lost_fair))
		;				/* x fills past half and is held */
	jx = job_of(w, x);
	ck_assert_ptr_nonnull(jx);
	ck_assert_uint_eq(jx - w->fc.jobs, mg_fair_hash(x));
	lost = local_read(&jx->lost_fair);
	ck_assert_uint_eq(local_read(&jx->pending), lost);
	ck_assert_uint_eq(local_read(&jx->lost_ring), 0);
	/* x goes quiet for two windows (job 3 writes, the reader keeps up). */
	drain(w, &s, 0);
	for (unsigned long i = 0; i < 3 * RING / 64; i++) {
		ck_assert(put(w, 3, 0));
		drain(w, &s, 0);
	}
	ck_assert_uint_eq(pending_all(w), lost);
	ck_assert(put(w, y, 0));	/* takes x's slot */
	ck_assert_ptr_eq(job_of(w, y), jx);
	ck_assert_ptr_null(job_of(w, x));
	drain(w, &s, 0);
	ck_assert_uint_eq(s.job_lost[slot_of(&s, x)], lost);
	ck_assert_uint_eq(pending_all(w), 0);
	ck_assert_uint_eq(local_read(&w->fc.lost_fair), lost);
	world_free(w);
}
END_TEST

/* Overwrite mode: no rule, and no JOB_LOST a writer could overwrite. */
START_TEST(test_overwrite_mode)
{
	struct world *w = world_new(RING);

	w->rb.mode = MG_RING_OVERWRITE;
	ck_assert(put(w, 3, 0));
	for (unsigned long i = 0; i < 20000; i++)
		ck_assert(put(w, 4, 0));
	ck_assert_uint_eq(local_read(&w->fc.lost_fair), 0);
	world_free(w);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fair");
	TCase *tc = tcase_create("rule");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_alone_is_the_ring);
	tcase_add_test(tc, test_flood_spares_the_others);
	tcase_add_test(tc, test_flood_without_the_rule);
	tcase_add_test(tc, test_interrupts_are_shared);
	tcase_add_test(tc, test_table_full_and_reuse);
	tcase_add_test(tc, test_orphan_reported);
	tcase_add_test(tc, test_overwrite_mode);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
