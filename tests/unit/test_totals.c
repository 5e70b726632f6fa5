// SPDX-License-Identifier: GPL-2.0
/*
 * daemon/totals.c: exact node, probe and job counts (sock bytes from the
 * sock handler only, LOST records as kernel losses), the export rule
 * ("other" and every exported counter monotonic), the ranking (a later,
 * busier job takes a place; like rates do not take turns; owners share
 * the places; every record in exactly one series across entries and
 * exits), a full job table, and removal of gone jobs against a reference
 * under random churn (the backward-shift deletion must lose no job).
 * Series: a Slurm step's tasks counted as one job (their counts so far
 * and after), one exported place for any number of tasks, a series gone
 * with its members, and every record in exactly one series while cgroups
 * join series, enter, leave and go at random; a cgroup shown alone before
 * it joined (its series ends: no count shown twice).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "testutil.h"
#include "totals.h"

static unsigned char buf[MAGNET_RECORD_MAX];

/* A kprobe record of a thread in cgroup cg (the header's, as written). */
static const struct magnet_record *kprobe_in(__u16 id, __u32 pid, __u32 cg,
					     bool intr)
{
	struct mg_record_hdr h = { .event_id = id, .pid = pid, .tgid = pid,
				   .cgroup = cg, .intr = intr };
	__u64 args[2] = { 1, 2 };

	ck_assert_int_gt(mg_record_encode_kprobe(buf, sizeof(buf), &h, args, 2), 0);
	return (const void *)buf;
}

static const struct magnet_record *kprobe(__u16 id, __u32 pid, __u32 cg)
{
	return kprobe_in(id, pid, cg, false);
}

static const struct magnet_record *task(__u32 pid, __u32 cg, const char *comm)
{
	struct mg_record_hdr h = { .pid = pid, .tgid = pid, .cgroup = cg,
				   .abstract_id = cg };

	ck_assert_int_gt(mg_record_encode_task(buf, sizeof(buf), &h, comm), 0);
	return (const void *)buf;
}

static const struct magnet_record *sock(__u16 id, __u64 size, __u32 cg)
{
	struct mg_record_hdr h = { .event_id = id, .pid = 7, .tgid = 7,
				   .cgroup = cg };
	struct magnet_sock s = { .family = 2, .protocol = 6, .size = size };

	ck_assert_int_gt(mg_record_encode_sock(buf, sizeof(buf), &h, &s), 0);
	return (const void *)buf;
}

static const struct magnet_record *lost(__u64 full, __u64 overwritten)
{
	struct mg_record_hdr h = { 0 };
	struct magnet_lost l = { .full = full, .overwritten = overwritten };

	ck_assert_int_gt(mg_record_encode_lost(buf, sizeof(buf), &h, &l), 0);
	return (const void *)buf;
}

static const struct magnet_record *job_lost(__u64 cgroup, __u64 fair)
{
	struct mg_record_hdr h = { 0 };

	ck_assert_int_gt(mg_record_encode_job_lost(buf, sizeof(buf), &h, cgroup, fair), 0);
	return (const void *)buf;
}

static const struct mg_totals_job *job(const struct mg_totals_view *v,
				       __u64 cgroup)
{
	size_t i;

	for (i = 0; i < v->njobs; i++)
		if (v->jobs[i].cgroup == cgroup)
			return &v->jobs[i];
	return NULL;
}

static const struct mg_totals_probe *probe(const struct mg_totals_view *v,
					   unsigned int id)
{
	size_t i;

	for (i = 0; i < v->nprobes; i++)
		if (v->probes[i].id == id)
			return &v->probes[i];
	return NULL;
}

START_TEST(exact_counts)
{
	struct mg_totals *t;
	struct mg_totals_view v;
	__u64 rec_bytes = 0;
	int i;

	ck_assert_int_eq(mg_totals_create(20, &t), 0);
	for (i = 0; i < 5; i++) {
		mg_totals_add(t, kprobe(16, 100, 1001));
		rec_bytes += ((const struct magnet_record *)buf)->size;
	}
	for (i = 0; i < 3; i++) {
		mg_totals_add(t, kprobe(17, 101, 1002));
		rec_bytes += ((const struct magnet_record *)buf)->size;
	}
	mg_totals_add(t, sock(18, 1500, 1002));
	rec_bytes += ((const struct magnet_record *)buf)->size;
	mg_totals_add(t, sock(18, 500, 0));	/* no known job */
	rec_bytes += ((const struct magnet_record *)buf)->size;
	mg_totals_add(t, lost(3, 4));
	/* The fairness rule's: lost, and per job; the shared job's in other. */
	mg_totals_add(t, job_lost(1001, 20));
	mg_totals_add(t, job_lost(0, 2));
	/* Not events: counted nowhere. */
	mg_totals_add(t, task(100, 1001, "job-a"));
	/* In interrupt context: under the interrupted task's job, and apart. */
	mg_totals_add(t, kprobe_in(16, 100, 1002, true));
	rec_bytes += ((const struct magnet_record *)buf)->size;
	mg_totals_add(t, kprobe_in(16, 0, 0, true));	/* no job known */
	rec_bytes += ((const struct magnet_record *)buf)->size;
	mg_totals_dropped(t, 9);

	ck_assert_int_eq(mg_totals_view(t, &v), 0);
	ck_assert_uint_eq(v.node.records, 12);
	ck_assert_uint_eq(v.node.bytes, rec_bytes);
	ck_assert_uint_eq(v.node.kernel_lost, 7 + 20 + 2);
	ck_assert_uint_eq(v.node.daemon_dropped, 9);
	ck_assert_uint_eq(v.node.jobs, 2);

	ck_assert_uint_eq(v.nprobes, 3);	/* TASK records are no probe's */
	ck_assert_uint_eq(probe(&v, 16)->events, 7);
	ck_assert_ptr_null(probe(&v, MAGNET_EVENT_TASK));
	ck_assert(!probe(&v, 16)->sock);
	ck_assert_uint_eq(probe(&v, 16)->sock_bytes, 0);
	ck_assert_uint_eq(probe(&v, 17)->events, 3);
	ck_assert(probe(&v, 18)->sock);
	ck_assert_uint_eq(probe(&v, 18)->events, 2);
	ck_assert_uint_eq(probe(&v, 18)->sock_bytes, 2000);

	ck_assert_uint_eq(v.njobs, 2);
	ck_assert_uint_eq(v.jobs[0].cgroup, 1001);	/* busiest first, */
	ck_assert_uint_eq(v.jobs[0].events, 5);
	ck_assert_uint_eq(v.jobs[0].intr_events, 0);
	ck_assert_uint_eq(v.jobs[0].lost_fair, 20);
	ck_assert(v.jobs[0].exported);
	ck_assert_uint_eq(v.jobs[1].cgroup, 1002);
	ck_assert_uint_eq(v.jobs[1].events, 5);	/* ties by cgroup */
	ck_assert_uint_eq(v.jobs[1].intr_events, 1);
	ck_assert_uint_eq(v.jobs[1].sock_bytes, 1500);
	ck_assert_uint_eq(v.other.events, 2);
	ck_assert_uint_eq(v.other.intr_events, 1);
	ck_assert_uint_eq(v.other.sock_bytes, 500);
	ck_assert_uint_eq(v.other.lost_fair, 2);
	ck_assert_uint_eq(v.jobs[1].lost_fair, 0);
	ck_assert_str_eq(v.other.path, "other");
	mg_totals_view_free(&v);
	mg_totals_free(t);
}
END_TEST

START_TEST(export_rule)
{
	struct mg_totals *t;
	struct mg_totals_view v;
	__u64 other = 0, prev_other = 0;
	int round, i;

	ck_assert_int_eq(mg_totals_create(2, &t), 0);
	/* 1 and 2 exported; 3 met third: "other" for good. */
	for (i = 1; i <= 3; i++)
		mg_totals_add(t, kprobe(16, 1, i));
	for (i = 0; i < 10; i++)
		mg_totals_add(t, kprobe(16, 1, 3));
	other = 11;
	ck_assert_int_eq(mg_totals_view(t, &v), 0);
	ck_assert(job(&v, 1)->exported && job(&v, 2)->exported);
	ck_assert(!job(&v, 3)->exported);
	ck_assert_uint_eq(job(&v, 3)->events, 11);	/* still listed */
	ck_assert_uint_eq(v.other.events, other);
	mg_totals_view_free(&v);

	/* 1 goes: 4 takes its place; 3 stays in "other". */
	mg_totals_job_gone(t, 1);
	mg_totals_add(t, kprobe(16, 1, 4));
	mg_totals_add(t, kprobe(16, 1, 3));
	other++;
	ck_assert_int_eq(mg_totals_view(t, &v), 0);
	ck_assert_ptr_null(job(&v, 1));
	ck_assert(job(&v, 4)->exported);
	ck_assert(!job(&v, 3)->exported);
	ck_assert_uint_eq(v.other.events, other);
	ck_assert_uint_eq(v.node.records, 15);	/* 1's events stay counted */
	mg_totals_view_free(&v);

	/* Churn: "other" never goes down, exported never exceeds 2. */
	for (round = 0; round < 200; round++) {
		size_t n = 0;

		mg_totals_add(t, kprobe(16, 1, 100 + round));
		if (round % 3 == 0)
			mg_totals_job_gone(t, 100 + round - 1);
		ck_assert_int_eq(mg_totals_view(t, &v), 0);
		for (i = 0; i < (int)v.njobs; i++)
			n += v.jobs[i].exported;
		ck_assert_uint_le(n, 2);
		ck_assert_uint_ge(v.other.events, prev_other);
		prev_other = v.other.events;
		mg_totals_view_free(&v);
	}
	mg_totals_free(t);
}
END_TEST

START_TEST(full_table)
{
	struct mg_totals *t;
	struct mg_totals_view v;
	unsigned int i;

	ck_assert_int_eq(mg_totals_create(20, &t), 0);
	for (i = 1; i <= MG_TOTALS_JOBS + 10; i++)
		mg_totals_add(t, kprobe(16, 1, i));
	ck_assert_int_eq(mg_totals_view(t, &v), 0);
	ck_assert_uint_eq(v.node.jobs, MG_TOTALS_JOBS);
	ck_assert_uint_eq(v.njobs, MG_TOTALS_JOBS);
	ck_assert_ptr_null(job(&v, MG_TOTALS_JOBS + 1));
	/* Not exported: the 4076 met after the first 20, and the 10 over. */
	ck_assert_uint_eq(v.other.events, MG_TOTALS_JOBS - 20 + 10);
	mg_totals_view_free(&v);
	mg_totals_free(t);
}
END_TEST

/* Random adds and removals against a plain array. */
START_TEST(random_churn)
{
	enum { IDS = 3000 };
	static __u64 ref[IDS];
	static bool live[IDS];
	struct mg_totals *t;
	struct mg_totals_view v;
	size_t i, n;
	int step;

	memset(ref, 0, sizeof(ref));
	memset(live, 0, sizeof(live));
	tu_seed(0x70741 + _i);
	ck_assert_int_eq(mg_totals_create(20, &t), 0);
	for (step = 0; step < 100000; step++) {
		/* Clustered ids, as inode numbers are: long probe runs. */
		size_t id = tu_rand() % IDS;

		if (tu_rand() % 8 == 0) {
			mg_totals_job_gone(t, id * 8 + 1);
			live[id] = false;
			ref[id] = 0;
		} else {
			mg_totals_add(t, kprobe(16, 1, id * 8 + 1));
			live[id] = true;
			ref[id]++;
		}
	}
	ck_assert_int_eq(mg_totals_view(t, &v), 0);
	for (i = 0, n = 0; i < IDS; i++) {
		const struct mg_totals_job *j = job(&v, i * 8 + 1);

		if (!live[i]) {
			tu_assert(j == NULL);
			continue;
		}
		n++;
		tu_assert(j != NULL);
		tu_assert_op(j->events, ==, ref[i]);
	}
	ck_assert_uint_eq(v.njobs, n);
	for (i = 1; i < v.njobs; i++)
		tu_assert_op(v.jobs[i - 1].events, >=, v.jobs[i].events);
	mg_totals_view_free(&v);
	mg_totals_free(t);
}
END_TEST

#define SEC	1000000000ULL

static void add_n(struct mg_totals *t, __u32 cg, unsigned int n)
{
	while (n--)
		mg_totals_add(t, kprobe(16, 1, cg));
}

/*
 * 20 jobs met first and kept busy do not keep a later, busier job out;
 * it starts its series at 0, and the job it displaced ends its own.
 */
START_TEST(rank_later_busier)
{
	struct mg_totals *t;
	struct mg_totals_view v;
	unsigned int i, n = 0;

	ck_assert_int_eq(mg_totals_create(20, &t), 0);
	for (i = 1; i <= 20; i++)
		add_n(t, i, 100);
	mg_totals_rank(t, 10 * SEC);
	add_n(t, 100, 50);			/* met when the places are taken */
	mg_totals_rank(t, 10 * SEC + SEC / 2);	/* within a second: nothing */
	ck_assert_int_eq(mg_totals_view(t, &v), 0);
	ck_assert(!job(&v, 100)->exported);
	ck_assert_uint_eq(v.other.events, 50);
	mg_totals_view_free(&v);
	for (i = 1; i <= 20; i++)
		add_n(t, i, 100);
	add_n(t, 100, 1000);
	mg_totals_rank(t, 11 * SEC);
	ck_assert_int_eq(mg_totals_view(t, &v), 0);
	ck_assert(job(&v, 100)->exported);
	ck_assert_uint_eq(job(&v, 100)->series.events, 0);
	ck_assert_uint_eq(job(&v, 100)->events, 1050);
	ck_assert(!job(&v, 20)->exported);	/* the tie goes to the lower id */
	for (i = 0; i < v.njobs; i++)
		n += v.jobs[i].exported;
	ck_assert_uint_eq(n, 20);
	ck_assert_uint_eq(v.other.events, 1050);
	mg_totals_view_free(&v);
	add_n(t, 100, 5);
	add_n(t, 20, 7);
	ck_assert_int_eq(mg_totals_view(t, &v), 0);
	ck_assert_uint_eq(job(&v, 100)->series.events, 5);
	ck_assert_uint_eq(v.other.events, 1057);
	ck_assert_uint_eq(v.other.series.events, 1057);
	mg_totals_view_free(&v);
	mg_totals_free(t);
}
END_TEST

/* Jobs of like rates keep their places: no turns taken. */
START_TEST(rank_hysteresis)
{
	struct mg_totals *t;
	struct mg_totals_view v;
	unsigned int r;

	ck_assert_int_eq(mg_totals_create(2, &t), 0);
	for (r = 0; r < 30; r++) {
		add_n(t, 1, 100);
		add_n(t, 2, 100);
		add_n(t, 3, 100 + r % 2 * 40);	/* at times 1.4 times as busy */
		mg_totals_rank(t, (10 + r) * SEC);
		ck_assert_int_eq(mg_totals_view(t, &v), 0);
		ck_assert(job(&v, 1)->exported && job(&v, 2)->exported);
		ck_assert(!job(&v, 3)->exported);
		mg_totals_view_free(&v);
	}
	/* Twice as busy: it gets in, in time. */
	for (r = 0; r < 60; r++) {
		add_n(t, 1, 100);
		add_n(t, 2, 100);
		add_n(t, 3, 200);
		mg_totals_rank(t, (40 + r) * SEC);
	}
	ck_assert_int_eq(mg_totals_view(t, &v), 0);
	ck_assert(job(&v, 3)->exported);
	mg_totals_view_free(&v);
	mg_totals_free(t);
}
END_TEST

/*
 * Owners share the places: of user 1000's four jobs, met first, two go
 * quiet and two are busy; user 2000's job, though the least busy of the
 * active ones, gets one of the two places. Without owners the busiest
 * win.
 */
START_TEST(rank_owner_share)
{
	struct mg_totals *t;
	struct mg_totals_view v;
	unsigned int i, owned;

	for (owned = 0; owned < 2; owned++) {
		ck_assert_int_eq(mg_totals_create(2, &t), 0);
		for (i = 1; i <= 4; i++) {
			if (owned)
				mg_totals_job_owner(t, i, 1000);
			add_n(t, i, 10);
		}
		if (owned)
			mg_totals_job_owner(t, 9, 2000);
		mg_totals_rank(t, 5 * SEC);
		for (i = 3; i <= 4; i++)	/* 1 and 2, exported, go quiet */
			add_n(t, i, 300 + 10 * i);
		add_n(t, 9, 20);
		mg_totals_rank(t, 6 * SEC);
		ck_assert_int_eq(mg_totals_view(t, &v), 0);
		ck_assert_int_eq(job(&v, 9)->exported, owned);
		ck_assert(job(&v, 4)->exported);
		ck_assert_int_eq(job(&v, 3)->exported, !owned);
		ck_assert_int_eq(job(&v, 9)->has_owner, owned);
		mg_totals_view_free(&v);
		mg_totals_free(t);
	}
}
END_TEST

/*
 * Random activity, ranks and removals: every record is in exactly one
 * series. Between two views the increases of the series (a job that
 * entered counting from 0) and of "other" add up to the node's; a rank
 * moves no count; no series goes down.
 */
START_TEST(rank_exact)
{
	enum { IDS = 40 };
	struct mg_totals *t;
	struct mg_totals_view a, b;
	unsigned int step, entered = 0, left = 0;

	tu_seed(0x4a4b + _i);
	ck_assert_int_eq(mg_totals_create(8, &t), 0);
	for (step = 0; step < 300; step++) {
		unsigned int k, busy = tu_rand() % IDS;
		__u64 sum = 0;
		size_t i;

		ck_assert_int_eq(mg_totals_view(t, &a), 0);
		for (k = 0; k < 50; k++) {
			__u32 cg = 1 + (tu_rand() % 4 ? busy : tu_rand() % IDS);

			if (tu_rand() % 7 == 0)
				mg_totals_add(t, sock(16, tu_rand() % 100, cg));
			else
				mg_totals_add(t, kprobe_in(16, 1, cg, tu_rand() % 5 == 0));
		}
		ck_assert_int_eq(mg_totals_view(t, &b), 0);
		for (i = 0; i < b.njobs; i++) {
			const struct mg_totals_job *o = job(&a, b.jobs[i].cgroup);

			if (!b.jobs[i].exported)
				continue;
			if (o && o->exported) {
				tu_assert_op(b.jobs[i].series.events, >=, o->series.events);
				sum += b.jobs[i].series.events - o->series.events;
			} else {
				sum += b.jobs[i].series.events;
			}
		}
		tu_assert_op(b.other.events, >=, a.other.events);
		tu_assert_op(sum + b.other.events - a.other.events, ==,
			     b.node.records - a.node.records);
		mg_totals_view_free(&a);
		mg_totals_view_free(&b);

		/* A rank between two views moves nothing. */
		ck_assert_int_eq(mg_totals_view(t, &a), 0);
		mg_totals_rank(t, (__u64)(step + 1) * SEC);
		ck_assert_int_eq(mg_totals_view(t, &b), 0);
		tu_assert_op(a.other.events, ==, b.other.events);
		for (i = 0; i < b.njobs; i++) {
			const struct mg_totals_job *o = job(&a, b.jobs[i].cgroup);

			tu_assert(o != NULL);
			if (b.jobs[i].exported && o->exported)
				tu_assert_op(b.jobs[i].series.events, ==, o->series.events);
			else if (b.jobs[i].exported)
				tu_assert_op(b.jobs[i].series.events, ==, 0);
			entered += b.jobs[i].exported && !o->exported;
			left += !b.jobs[i].exported && o->exported;
		}
		mg_totals_view_free(&a);
		mg_totals_view_free(&b);
		/* A job ends: its series with it. */
		if (tu_rand() % 10 == 0)
			mg_totals_job_gone(t, 1 + tu_rand() % IDS);
	}
	ck_assert_uint_gt(entered, 10);
	ck_assert_uint_gt(left, 10);
	mg_totals_free(t);
}
END_TEST

/* The record the helper just built, appended to a read. */
static size_t append(unsigned char *read, size_t off, const struct magnet_record *r)
{
	memcpy(read + off, r, r->size);
	return off + r->size;
}

static void assert_same(const struct mg_totals_view *a, const struct mg_totals_view *b)
{
	size_t i;

	ck_assert(!memcmp(&a->node, &b->node, sizeof(a->node)));
	ck_assert(!memcmp(&a->other, &b->other, sizeof(a->other)));
	ck_assert_uint_eq(a->nprobes, b->nprobes);
	ck_assert_uint_eq(a->njobs, b->njobs);
	for (i = 0; i < a->nprobes; i++)
		ck_assert(!memcmp(&a->probes[i], &b->probes[i], sizeof(a->probes[i])));
	for (i = 0; i < a->njobs; i++)
		ck_assert(!memcmp(&a->jobs[i], &b->jobs[i], sizeof(a->jobs[i])));
}

/*
 * A read counted at once (runs of one probe, job and kind counted
 * together) is counted exactly as its records one by one: random mixes
 * of probes, jobs, sock records, interrupt records, LOST and TASK
 * records, in long and short runs, past the export limit.
 */
START_TEST(read_as_records)
{
	static unsigned char read[1 << 16];
	struct mg_totals *whole, *each;
	struct mg_totals_view a, b;
	int round;

	tu_seed(0x7ead + _i);
	ck_assert_int_eq(mg_totals_create(4, &whole), 0);
	ck_assert_int_eq(mg_totals_create(4, &each), 0);
	for (round = 0; round < 200; round++) {
		size_t off = 0, at = 0;

		while (off + 256 <= sizeof(read)) {
			unsigned int kind = tu_rand() % 16, n = 1 + tu_rand() % 8;
			__u32 cg = tu_rand() % 10;	/* 0: no job known */
			__u16 id = 16 + tu_rand() % 4;

			while (n-- && off + 256 <= sizeof(read)) {
				const struct magnet_record *r;

				if (kind == 0)
					r = lost(tu_rand() % 5, tu_rand() % 2);
				else if (kind == 1)
					r = task(tu_rand() % 100, cg, "t");
				else if (kind < 5)
					r = sock(id, tu_rand() % 3000, cg);
				else
					r = kprobe_in(id, 1, cg, kind == 5);
				mg_totals_add(each, r);
				off = append(read, off, r);
			}
		}
		/* In reads of random lengths, at record boundaries. */
		while (at < off) {
			size_t end = at, want = 1 + tu_rand() % 8192;

			while (end < off && end - at < want)
				end += ((const struct magnet_record *)(read + end))->size;
			mg_totals_add_read(whole, read + at, end - at);
			at = end;
		}
	}
	ck_assert_int_eq(mg_totals_view(whole, &a), 0);
	ck_assert_int_eq(mg_totals_view(each, &b), 0);
	ck_assert_uint_gt(a.node.records, 0);
	assert_same(&a, &b);
	mg_totals_view_free(&a);
	mg_totals_view_free(&b);
	mg_totals_free(whole);
	mg_totals_free(each);
}
END_TEST

/* Tasks 501 and 502 of step 500 (a Slurm step's cgroups: docs/slurm.md). */
START_TEST(series_join)
{
	struct mg_totals *t;
	struct mg_totals_view v;
	const struct mg_totals_job *j;

	ck_assert_int_eq(mg_totals_create(2, &t), 0);
	add_n(t, 501, 5);
	mg_totals_add(t, sock(17, 1000, 502));
	mg_totals_add(t, kprobe_in(16, 1, 502, true));
	mg_totals_add(t, job_lost(502, 4));
	ck_assert_int_eq(mg_totals_view(t, &v), 0);
	ck_assert_uint_eq(v.njobs, 2);
	ck_assert(!job(&v, 501)->named);
	mg_totals_view_free(&v);

	/* Told once per cgroup; the step is made, exported in 501's place. */
	mg_totals_job_series(t, 501, 500);
	mg_totals_job_series(t, 502, 500);
	mg_totals_job_series(t, 7, 7);		/* not in the table: nothing */
	ck_assert_int_eq(mg_totals_view(t, &v), 0);
	ck_assert_uint_eq(v.njobs, 1);
	ck_assert_uint_eq(v.nmembers, 2);
	ck_assert_uint_eq(v.node.jobs, 3);	/* cgroups in the table */
	j = job(&v, 500);
	ck_assert_ptr_nonnull(j);
	ck_assert(j->named && j->exported);
	ck_assert_uint_eq(j->events, 7);
	ck_assert_uint_eq(j->sock_bytes, 1000);
	ck_assert_uint_eq(j->intr_events, 1);
	ck_assert_uint_eq(j->lost_fair, 4);
	/* The tasks were exported: their series goes on as the step's. */
	ck_assert_uint_eq(j->series.events, 7);
	ck_assert_uint_eq(v.other.events, 0);
	ck_assert_ptr_null(job(&v, 501));
	mg_totals_view_free(&v);

	/* Later records of a task, and a task met later, count in the step. */
	add_n(t, 501, 2);
	add_n(t, 503, 3);
	mg_totals_job_series(t, 503, 500);
	mg_totals_job_series(t, 503, 9);	/* named: never moves again */
	add_n(t, 503, 1);
	ck_assert_int_eq(mg_totals_view(t, &v), 0);
	ck_assert_uint_eq(v.njobs, 1);
	ck_assert_uint_eq(job(&v, 500)->events, 13);
	ck_assert_uint_eq(job(&v, 500)->series.events, 13);
	ck_assert_uint_eq(v.node.records, 13);
	mg_totals_view_free(&v);

	/* A task's cgroup goes: the step stays, counts and all. */
	mg_totals_job_gone(t, 502);
	ck_assert_int_eq(mg_totals_view(t, &v), 0);
	ck_assert_uint_eq(v.nmembers, 2);
	ck_assert_uint_eq(job(&v, 500)->events, 13);
	mg_totals_view_free(&v);
	/* The step goes: its tasks with it. */
	mg_totals_job_gone(t, 500);
	ck_assert_int_eq(mg_totals_view(t, &v), 0);
	ck_assert_uint_eq(v.njobs, 0);
	ck_assert_uint_eq(v.nmembers, 0);
	ck_assert_uint_eq(v.node.jobs, 0);
	mg_totals_view_free(&v);
	/* A late record of a task gone: the task alone again, until told. */
	add_n(t, 501, 1);
	ck_assert_int_eq(mg_totals_view(t, &v), 0);
	ck_assert_uint_eq(job(&v, 501)->events, 1);
	ck_assert(!job(&v, 501)->named);
	mg_totals_view_free(&v);
	mg_totals_free(t);
}
END_TEST

/*
 * A step of 64 tasks takes one place of 2: another job keeps the other.
 * One cgroup per task, one series per step, is what makes the places
 * enough for the steps a node runs.
 */
START_TEST(series_one_place)
{
	struct mg_totals *t;
	struct mg_totals_view v;
	__u32 k;

	ck_assert_int_eq(mg_totals_create(2, &t), 0);
	for (k = 0; k < 64; k++) {
		add_n(t, 1000 + k, 10);
		mg_totals_job_series(t, 1000 + k, 999);
	}
	add_n(t, 5, 1);
	mg_totals_job_series(t, 5, 5);
	for (k = 1; k <= 3; k++)
		mg_totals_rank(t, k * SEC);
	ck_assert_int_eq(mg_totals_view(t, &v), 0);
	ck_assert_uint_eq(v.njobs, 2);
	ck_assert(job(&v, 999)->exported);
	ck_assert(job(&v, 5)->exported);
	ck_assert_uint_eq(job(&v, 999)->events, 640);
	ck_assert_uint_eq(job(&v, 999)->series.events + job(&v, 5)->series.events +
			  v.other.events, 641);
	mg_totals_view_free(&v);
	mg_totals_free(t);
}
END_TEST

/*
 * A task shown alone before it joined its step (met just before a view,
 * or its step had no room): its series ends there, and the step's counts
 * only what came after; TOTALS still has all of it under the step. One
 * never shown carries its counts into the step's series, as before.
 */
START_TEST(series_shown)
{
	struct mg_totals *t;
	struct mg_totals_view v;

	ck_assert_int_eq(mg_totals_create(2, &t), 0);
	add_n(t, 501, 5);
	ck_assert_int_eq(mg_totals_view(t, &v), 0);
	ck_assert(job(&v, 501)->exported && !job(&v, 501)->named);
	ck_assert_uint_eq(job(&v, 501)->series.events, 5);
	mg_totals_shown(t, &v);
	mg_totals_view_free(&v);

	mg_totals_job_series(t, 501, 500);
	add_n(t, 502, 3);	/* met, told before any view shows it */
	mg_totals_job_series(t, 502, 500);
	ck_assert_int_eq(mg_totals_view(t, &v), 0);
	ck_assert_ptr_null(job(&v, 501));
	ck_assert(job(&v, 500)->exported);
	ck_assert_uint_eq(job(&v, 500)->events, 8);
	ck_assert_uint_eq(job(&v, 500)->series.events, 3);
	mg_totals_shown(t, &v);
	mg_totals_view_free(&v);
	add_n(t, 501, 2);
	ck_assert_int_eq(mg_totals_view(t, &v), 0);
	ck_assert_uint_eq(job(&v, 500)->events, 10);
	ck_assert_uint_eq(job(&v, 500)->series.events, 5);
	mg_totals_view_free(&v);

	mg_totals_free(t);
}
END_TEST

/*
 * What a monitor is shown: every view shows the jobs met since the last
 * one, half of them named first and half alone (to join their step
 * later), as when tasks are met between two views. Over each interval
 * the series' increases and "other"'s never exceed the records counted
 * (no count shows twice), and equal them when no series ended.
 */
START_TEST(series_shown_exact)
{
	enum { IDS = 60, STEPS = 5 };
	struct mg_totals *t;
	struct mg_totals_view a = { 0 }, b;
	unsigned int step, alone = 0, exact = 0;
	__u64 gone = 0;		/* since a: its series ended */

	tu_seed(0x5409 + _i);
	ck_assert_int_eq(mg_totals_create(3, &t), 0);
	ck_assert_int_eq(mg_totals_view(t, &a), 0);
	for (step = 0; step < 400; step++) {
		__u64 sum = 0, node;
		bool ended = false;
		unsigned int k;
		size_t i;

		for (k = 0; k < 40; k++)
			mg_totals_add(t, kprobe(16, 1, 1 + tu_rand() % IDS));
		ck_assert_int_eq(mg_totals_view(t, &b), 0);
		for (i = 0; i < b.njobs; i++) {
			__u64 c = b.jobs[i].cgroup;

			if (b.jobs[i].named || c > IDS)
				continue;
			if (tu_rand() % 2)
				mg_totals_job_series(t, c, c % 2 ? c : 10001 + c % STEPS);
			else
				alone++;
		}
		mg_totals_view_free(&b);
		ck_assert_int_eq(mg_totals_view(t, &b), 0);
		mg_totals_shown(t, &b);
		for (i = 0; i < a.njobs; i++) {
			const struct mg_totals_job *o = job(&b, a.jobs[i].cgroup);

			ended |= a.jobs[i].exported &&
				 (!o || !o->exported || o->cgroup == gone);
		}
		for (i = 0; i < b.njobs; i++) {
			const struct mg_totals_job *o = job(&a, b.jobs[i].cgroup);

			if (!b.jobs[i].exported)
				continue;
			if (o && o->exported && o->cgroup != gone) {
				tu_assert_op(b.jobs[i].series.events, >=, o->series.events);
				sum += b.jobs[i].series.events - o->series.events;
			} else {
				sum += b.jobs[i].series.events;
			}
		}
		tu_assert_op(b.other.events, >=, a.other.events);
		sum += b.other.events - a.other.events;
		node = b.node.records - a.node.records;
		tu_assert_op(sum, <=, node);
		if (!ended) {
			tu_assert_op(sum, ==, node);
			exact++;
		}
		mg_totals_view_free(&a);
		a = b;
		mg_totals_rank(t, (__u64)(step + 1) * SEC);
		gone = 0;
		if (tu_rand() % 8 == 0) {
			gone = tu_rand() % 2 ? 10001 + tu_rand() % STEPS :
					       1 + tu_rand() % IDS;
			mg_totals_job_gone(t, gone);
		}
	}
	mg_totals_view_free(&a);
	ck_assert_uint_gt(alone, 100);
	ck_assert_uint_gt(exact, 100);
	mg_totals_free(t);
}
END_TEST

/*
 * Every record in exactly one series, across joins: cgroups met between
 * two views are told their series before the second (as magnetd names
 * them before it shows a view), tasks of 5 steps and jobs alone, places
 * taken and left by ranking, series and tasks gone.
 */
START_TEST(series_exact)
{
	enum { IDS = 60, STEPS = 5 };
	struct mg_totals *t;
	struct mg_totals_view a, b;
	unsigned int step, joined = 0;

	tu_seed(0x5e71e5 + _i);
	ck_assert_int_eq(mg_totals_create(3, &t), 0);
	for (step = 0; step < 400; step++) {
		unsigned int k;
		__u64 sum = 0;
		size_t i;

		ck_assert_int_eq(mg_totals_view(t, &a), 0);
		for (k = 0; k < 40; k++) {
			/* 1..IDS: tasks of steps 10001..10005 when even. */
			__u32 cg = 1 + tu_rand() % IDS;

			if (tu_rand() % 6 == 0)
				mg_totals_add(t, sock(16, tu_rand() % 100, cg));
			else
				mg_totals_add(t, kprobe(16, 1, cg));
		}
		ck_assert_int_eq(mg_totals_view(t, &b), 0);
		for (i = 0; i < b.njobs; i++) {
			__u64 c = b.jobs[i].cgroup;

			if (b.jobs[i].named)
				continue;
			mg_totals_job_series(t, c, c % 2 ? c : 10001 + c % STEPS);
			joined += !(c % 2);
		}
		mg_totals_view_free(&b);
		ck_assert_int_eq(mg_totals_view(t, &b), 0);
		for (i = 0; i < b.njobs; i++) {
			const struct mg_totals_job *o = job(&a, b.jobs[i].cgroup);

			tu_assert(b.jobs[i].named);
			if (!b.jobs[i].exported)
				continue;
			if (o && o->exported) {
				tu_assert_op(b.jobs[i].series.events, >=, o->series.events);
				sum += b.jobs[i].series.events - o->series.events;
			} else {
				sum += b.jobs[i].series.events;
			}
		}
		tu_assert_op(b.other.events, >=, a.other.events);
		tu_assert_op(sum + b.other.events - a.other.events, ==,
			     b.node.records - a.node.records);
		mg_totals_view_free(&a);
		mg_totals_view_free(&b);
		mg_totals_rank(t, (__u64)(step + 1) * SEC);
		if (tu_rand() % 8 == 0)
			mg_totals_job_gone(t, tu_rand() % 2 ? 10001 + tu_rand() % STEPS :
						     1 + tu_rand() % IDS);
	}
	ck_assert_uint_gt(joined, 100);
	mg_totals_free(t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("totals");
	TCase *tc = tcase_create("totals");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, exact_counts);
	tcase_add_test(tc, export_rule);
	tcase_add_test(tc, full_table);
	tcase_add_test(tc, rank_later_busier);
	tcase_add_test(tc, rank_hysteresis);
	tcase_add_test(tc, rank_owner_share);
	tcase_add_loop_test(tc, rank_exact, 0, 3);
	tcase_add_loop_test(tc, random_churn, 0, 3);
	tcase_add_loop_test(tc, read_as_records, 0, 3);
	tcase_add_test(tc, series_shown);
	tcase_add_loop_test(tc, series_shown_exact, 0, 3);
	tcase_add_test(tc, series_join);
	tcase_add_test(tc, series_one_place);
	tcase_add_loop_test(tc, series_exact, 0, 3);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
