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
 * it joined (its series ends: no count shown twice). Network: TCP's
 * bytes once, a retransmission's and a duplicate's as repeated bytes.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

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

/* A packet of job sk (the socket's), written by a thread of cg. */
static const struct magnet_record *pkt(int family, int proto, const char *src,
				       const char *dst, unsigned int sport,
				       unsigned int dport, unsigned int payload,
				       bool out, __u32 cg, __u64 sk)
{
	struct tu_packet p = { .family = family, .proto = proto, .src = src,
			       .dst = dst, .sport = sport, .dport = dport,
			       .payload = payload, .out = out, .cgroup = cg,
			       .sk_cgroup = sk };

	ck_assert_int_gt(tu_skb_record(buf, sizeof(buf), &p), 0);
	return (const void *)buf;
}

/* Job sk at 10.0.0.1 sends payload bytes to dst (its thread writes it). */
static const struct magnet_record *tx4(__u64 sk, int proto, const char *dst,
				       unsigned int payload)
{
	return pkt(AF_INET, proto, "10.0.0.1", dst, 40000, 5001, payload, true,
		   (__u32)sk, sk);
}

/* Job sk receives from src, in softirq over thread cg. */
static const struct magnet_record *rx4(__u64 sk, int proto, const char *src,
				       unsigned int payload, __u32 cg)
{
	return pkt(AF_INET, proto, src, "10.0.0.1", 5001, 40000, payload, false,
		   cg, sk);
}

static const struct mg_totals_peer *peer(const struct mg_totals_net *n,
					 const char *addr)
{
	unsigned char a[16] = { 0 };
	int family = strchr(addr, ':') ? AF_INET6 : AF_INET;
	size_t i;

	ck_assert_int_eq(inet_pton(family, addr, a), 1);
	for (i = 0; i < n->npeers; i++)
		if (n->peers[i].family == family && !memcmp(n->peers[i].addr, a, 16))
			return &n->peers[i];
	return NULL;
}

static void counts_add(struct mg_totals_counts *a, const struct mg_totals_counts *b)
{
	a->tx_packets += b->tx_packets;
	a->tx_bytes += b->tx_bytes;
	a->rx_packets += b->rx_packets;
	a->rx_bytes += b->rx_bytes;
	a->tx_repeated_bytes += b->tx_repeated_bytes;
	a->rx_repeated_bytes += b->rx_repeated_bytes;
}

static bool counts_eq(const struct mg_totals_counts *a, const struct mg_totals_counts *b)
{
	return !memcmp(a, b, sizeof(*a));
}

/*
 * A job's peers (listed and "other") add up to its protocols, since first
 * met and in its series; its listed peers are at most MG_TOTALS_PEERS,
 * most bytes first. The protocols' sums into *n and *series.
 */
static void net_adds_up(const struct mg_totals_net *net, struct mg_totals_counts *n,
			struct mg_totals_counts *series)
{
	struct mg_totals_counts pn = net->other.n, ps = net->other.series;
	size_t i;

	memset(n, 0, sizeof(*n));
	memset(series, 0, sizeof(*series));
	for (i = 0; i < MG_TOTALS_PROTOS; i++) {
		counts_add(n, &net->proto[i]);
		counts_add(series, &net->proto_series[i]);
	}
	tu_assert_op(net->npeers, <=, MG_TOTALS_PEERS);
	for (i = 0; i < net->npeers; i++) {
		counts_add(&pn, &net->peers[i].n);
		counts_add(&ps, &net->peers[i].series);
		if (i)
			tu_assert_op(net->peers[i - 1].n.tx_bytes + net->peers[i - 1].n.rx_bytes,
				     >=, net->peers[i].n.tx_bytes + net->peers[i].n.rx_bytes);
	}
	tu_assert(counts_eq(&pn, n));
	tu_assert(counts_eq(&ps, series));
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

/* Two jobs alike, their traffic's peers compared by value. */
static void assert_same_job(const struct mg_totals_job *a, const struct mg_totals_job *b)
{
	struct mg_totals_job x = *a, y = *b;

	ck_assert_uint_eq(a->net.npeers, b->net.npeers);
	if (a->net.npeers)
		ck_assert(!memcmp(a->net.peers, b->net.peers,
				  a->net.npeers * sizeof(*a->net.peers)));
	x.net.peers = y.net.peers = NULL;
	ck_assert(!memcmp(&x, &y, sizeof(x)));
}

static void assert_same(const struct mg_totals_view *a, const struct mg_totals_view *b)
{
	size_t i;

	ck_assert(!memcmp(&a->node, &b->node, sizeof(a->node)));
	assert_same_job(&a->other, &b->other);
	ck_assert_uint_eq(a->nprobes, b->nprobes);
	ck_assert_uint_eq(a->njobs, b->njobs);
	for (i = 0; i < a->nprobes; i++)
		ck_assert(!memcmp(&a->probes[i], &b->probes[i], sizeof(a->probes[i])));
	for (i = 0; i < a->njobs; i++)
		assert_same_job(&a->jobs[i], &b->jobs[i]);
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
				else if (kind == 2)
					r = tu_rand() % 2 ?
					    tx4(tu_rand() % 10, IPPROTO_TCP, "10.0.0.2",
						tu_rand() % 1500) :
					    rx4(tu_rand() % 10, IPPROTO_UDP, "10.0.0.3",
						tu_rand() % 1500, cg);
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
 * The same for a job's traffic: a task shown alone, its network series
 * with it, ends that series when it joins its step; the step's network
 * series starts with what came after, its totals keep everything.
 */
START_TEST(series_shown_net)
{
	struct mg_totals *t;
	struct mg_totals_view v;
	const struct mg_totals_job *j;

	ck_assert_int_eq(mg_totals_create(2, &t), 0);
	mg_totals_add(t, tx4(501, IPPROTO_UDP, "10.0.0.2", 100));
	ck_assert_int_eq(mg_totals_view(t, &v), 0);
	j = job(&v, 501);
	ck_assert(j->exported && !j->named && j->has_net);
	ck_assert_uint_eq(j->net.proto_series[MG_TOTALS_UDP].tx_bytes, 100);
	mg_totals_shown(t, &v);
	mg_totals_view_free(&v);

	mg_totals_job_series(t, 501, 500);
	mg_totals_add(t, tx4(501, IPPROTO_UDP, "10.0.0.2", 30));
	ck_assert_int_eq(mg_totals_view(t, &v), 0);
	ck_assert_ptr_null(job(&v, 501));
	j = job(&v, 500);
	ck_assert(j->exported);
	ck_assert_uint_eq(j->net.proto[MG_TOTALS_UDP].tx_bytes, 130);
	ck_assert_uint_eq(j->net.proto_series[MG_TOTALS_UDP].tx_bytes, 30);
	ck_assert_uint_eq(peer(&j->net, "10.0.0.2")->series.tx_bytes, 30);
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

/*
 * Packets count under their socket's job, not the writer's: job 1002's
 * received segment, written in softirq while 1001's thread ran, is
 * 1002's. Per protocol (the five kinds) and per peer host (no port),
 * both directions; no socket: "other"; a packet unreadable: unkeyed.
 */
START_TEST(net_by_socket)
{
	struct mg_totals *t;
	struct mg_totals_view v;
	struct mg_totals_counts n, series;
	const struct mg_totals_job *a, *b;
	const struct mg_totals_peer *p;
	struct magnet_skb *k;

	ck_assert_int_eq(mg_totals_create(20, &t), 0);
	mg_totals_add(t, tx4(1001, IPPROTO_TCP, "10.0.0.2", 1000));
	mg_totals_add(t, tx4(1001, IPPROTO_TCP, "10.0.0.2", 1000));
	mg_totals_add(t, pkt(AF_INET, IPPROTO_TCP, "10.0.0.1", "10.0.0.2", 40001,
			     5002, 24, true, 1001, 1001));	/* another port */
	mg_totals_add(t, tx4(1001, IPPROTO_UDP, "10.0.0.3", 300));
	mg_totals_add(t, tx4(1001, IPPROTO_ICMP, "10.0.0.2", 56));
	mg_totals_add(t, pkt(AF_INET6, IPPROTO_ICMPV6, "fe80::2", "fe80::1", 0, 0,
			     32, true, 1001, 1001));
	mg_totals_add(t, tx4(1001, 132, "10.0.0.9", 100));	/* SCTP: other */
	mg_totals_add(t, rx4(1002, IPPROTO_TCP, "10.0.0.2", 700, 1001));
	mg_totals_add(t, rx4(1002, IPPROTO_TCP, "10.0.0.2", 0, 1001));	/* an ACK */
	mg_totals_add(t, tx4(0, IPPROTO_UDP, "10.0.0.4", 40));	/* no socket */
	tx4(1001, IPPROTO_TCP, "10.0.0.2", 10);
	k = (struct magnet_skb *)((struct magnet_record *)buf)->payload;
	k->layer = MAGNET_SKB_LAYER_LINK;
	mg_totals_add(t, (const void *)buf);

	ck_assert_int_eq(mg_totals_view(t, &v), 0);
	ck_assert_uint_eq(v.node.net_packets, 10);
	ck_assert_uint_eq(v.node.net_bytes, 2000 + 24 + 300 + 56 + 32 + 100 + 700 + 40);
	ck_assert_uint_eq(v.node.net_unkeyed, 1);
	ck_assert_uint_eq(v.node.records, 11);	/* every one an event too */

	a = job(&v, 1001);
	b = job(&v, 1002);
	ck_assert(a && b && a->has_net && b->has_net);
	ck_assert_uint_eq(a->events, 10);	/* the writer's, as ever */
	ck_assert_uint_eq(b->events, 0);
	ck_assert(counts_eq(&a->net.proto[MG_TOTALS_TCP],
			    &(struct mg_totals_counts){ 3, 2024, 0, 0, 0, 0 }));
	ck_assert(counts_eq(&a->net.proto[MG_TOTALS_UDP],
			    &(struct mg_totals_counts){ 1, 300, 0, 0, 0, 0 }));
	ck_assert(counts_eq(&a->net.proto[MG_TOTALS_ICMP],
			    &(struct mg_totals_counts){ 1, 56, 0, 0, 0, 0 }));
	ck_assert(counts_eq(&a->net.proto[MG_TOTALS_ICMPV6],
			    &(struct mg_totals_counts){ 1, 32, 0, 0, 0, 0 }));
	ck_assert(counts_eq(&a->net.proto[MG_TOTALS_PROTO_OTHER],
			    &(struct mg_totals_counts){ 1, 100, 0, 0, 0, 0 }));
	ck_assert_uint_eq(a->net.npeers, 4);
	p = peer(&a->net, "10.0.0.2");		/* both ports, TCP and ICMP */
	ck_assert(p && counts_eq(&p->n, &(struct mg_totals_counts){ 4, 2080, 0, 0, 0, 0 }));
	ck_assert(p == &a->net.peers[0]);	/* most bytes first */
	ck_assert_uint_eq(peer(&a->net, "10.0.0.3")->n.tx_bytes, 300);
	ck_assert_uint_eq(peer(&a->net, "fe80::1")->n.tx_bytes, 32);
	ck_assert_uint_eq(peer(&a->net, "10.0.0.9")->n.tx_bytes, 100);
	ck_assert_uint_eq(a->net.evictions, 0);
	ck_assert(counts_eq(&b->net.proto[MG_TOTALS_TCP],
			    &(struct mg_totals_counts){ 0, 0, 2, 700, 0, 0 }));
	ck_assert_uint_eq(b->net.npeers, 1);
	ck_assert_uint_eq(peer(&b->net, "10.0.0.2")->n.rx_bytes, 700);
	/* Exported since met: the series are the counts. */
	net_adds_up(&a->net, &n, &series);
	ck_assert(counts_eq(&n, &series));
	ck_assert_uint_eq(n.tx_bytes, 2512);
	ck_assert_uint_eq(a->series.packets, 7);
	net_adds_up(&b->net, &n, &series);
	ck_assert(counts_eq(&n, &series));
	/* No socket: "other", its peer listed there. */
	ck_assert(v.other.has_net);
	ck_assert(counts_eq(&v.other.net.proto[MG_TOTALS_UDP],
			    &(struct mg_totals_counts){ 1, 40, 0, 0, 0, 0 }));
	ck_assert_uint_eq(peer(&v.other.net, "10.0.0.4")->n.tx_bytes, 40);
	net_adds_up(&v.other.net, &n, &series);
	ck_assert_uint_eq(n.tx_bytes, 40);
	mg_totals_view_free(&v);
	mg_totals_free(t);
}
END_TEST

/* A TCP segment of job sk: sent to 10.0.0.2, or received from it. */
static const struct magnet_record *seg(__u64 sk, bool out, __u32 seq, unsigned int len)
{
	struct tu_packet p = { .family = AF_INET, .proto = IPPROTO_TCP,
			       .src = out ? "10.0.0.1" : "10.0.0.2",
			       .dst = out ? "10.0.0.2" : "10.0.0.1",
			       .sport = out ? 40000 : 5001, .dport = out ? 5001 : 40000,
			       .payload = len, .out = out, .cgroup = (__u32)sk,
			       .sk_cgroup = sk, .seq = seq };

	ck_assert_int_gt(tu_skb_record(buf, sizeof(buf), &p), 0);
	return (const void *)buf;
}

/*
 * TCP's bytes once per flow and direction: a segment sent again, and one
 * received twice, are packets and repeated bytes, not bytes; a segment
 * received after the next (a hole) counts once. In the job's protocol,
 * its peer, its series, the node's, and "other" for a job not exported.
 */
START_TEST(net_tcp_once)
{
	static const struct mg_totals_counts want = {
		.tx_packets = 4, .tx_bytes = 3000, .tx_repeated_bytes = 1000,
		.rx_packets = 4, .rx_bytes = 1500, .rx_repeated_bytes = 500,
	};
	struct mg_totals *t;
	struct mg_totals_view v;
	struct mg_totals_counts n, series;
	const struct mg_totals_job *a;
	unsigned int i;

	ck_assert_int_eq(mg_totals_create(1, &t), 0);
	for (i = 0; i < 3; i++)
		mg_totals_add(t, seg(1001, true, 1 + i * 1000, 1000));
	mg_totals_add(t, seg(1001, true, 1001, 1000));		/* sent again */
	mg_totals_add(t, seg(1001, false, 5000, 500));
	mg_totals_add(t, seg(1001, false, 6000, 500));		/* [5500, 6000) late */
	mg_totals_add(t, seg(1001, false, 5500, 500));
	mg_totals_add(t, seg(1001, false, 5500, 500));		/* a duplicate */
	/* Job 1002, not exported (one place): the same flows' bytes, seen before. */
	mg_totals_add(t, seg(1002, true, 1, 1000));
	mg_totals_add(t, seg(1002, true, 3001, 100));
	ck_assert_int_eq(mg_totals_view(t, &v), 0);
	ck_assert_uint_eq(v.node.net_packets, 10);
	ck_assert_uint_eq(v.node.net_bytes, 3000 + 1500 + 100);
	ck_assert_uint_eq(v.node.net_repeated_bytes, 1000 + 500 + 1000);
	a = job(&v, 1001);
	ck_assert(a && a->exported);
	ck_assert(counts_eq(&a->net.proto[MG_TOTALS_TCP], &want));
	ck_assert(counts_eq(&a->net.proto_series[MG_TOTALS_TCP], &want));
	ck_assert(counts_eq(&peer(&a->net, "10.0.0.2")->n, &want));
	net_adds_up(&a->net, &n, &series);
	ck_assert(counts_eq(&n, &want));
	ck_assert_uint_eq(a->series.packets, 8);
	ck_assert(counts_eq(&v.other.net.proto[MG_TOTALS_TCP],
			    &(struct mg_totals_counts){ .tx_packets = 2, .tx_bytes = 100,
							.tx_repeated_bytes = 1000 }));
	mg_totals_view_free(&v);
	mg_totals_free(t);
}
END_TEST

/*
 * Two CPUs' rings read one after the other (each read its own add): a
 * flow's first segment, sent from the softirq's CPU at ts 10, is read
 * after the next two (ts 20, 30, the task's CPU). Held until they settle,
 * they count in the order sent: no view shows them before, every byte
 * new after. Counted as read (settle 0), the first looks sent again.
 */
START_TEST(net_tcp_rings)
{
	static const __u32 seq[] = { 1001, 2001, 1 };
	static const __u64 ts[] = { 20, 30, 10 };
	const struct mg_totals_job *a;
	struct mg_totals_view v;
	struct mg_totals *t;
	unsigned int i;
	int settle;

	for (settle = 0; settle < 2; settle++) {
		ck_assert_int_eq(mg_totals_create(4, &t), 0);
		if (settle)
			mg_totals_set_settle(t, 50000000ULL);
		for (i = 0; i < 3; i++) {
			struct magnet_record *r = (void *)seg(1001, true, seq[i], 1000);

			r->timestamp = ts[i];
			mg_totals_add_read(t, r, r->size);
		}
		if (settle) {
			ck_assert_int_eq(mg_totals_view(t, &v), 0);
			ck_assert_uint_eq(v.node.net_packets, 0);
			mg_totals_view_free(&v);
			usleep(60000);
		}
		ck_assert_int_eq(mg_totals_view(t, &v), 0);
		ck_assert_uint_eq(v.node.net_packets, 3);
		ck_assert_uint_eq(v.node.net_bytes, settle ? 3000 : 2000);
		ck_assert_uint_eq(v.node.net_repeated_bytes, settle ? 0 : 1000);
		ck_assert_uint_eq(v.node.net_order_early, 0);
		a = job(&v, 1001);
		ck_assert(a && a->exported);
		ck_assert_uint_eq(a->net.proto[MG_TOTALS_TCP].tx_bytes, settle ? 3000 : 2000);
		mg_totals_view_free(&v);
		mg_totals_free(t);
	}
}
END_TEST

/* "10.X.Y.Z" of k, for a flood of distinct hosts. */
static const char *host_of(char *a, size_t size, unsigned int k)
{
	snprintf(a, size, "10.%u.%u.%u", 100 + (k >> 16 & 0xff), k >> 8 & 0xff, k & 0xff);
	return a;
}

/*
 * A job floods 200,000 new hosts (a packet each) while it talks to three
 * real peers: the three stay listed with their exact counts, at most 16
 * peers are listed at any time, every eviction is counted, the flood's
 * bytes are in "other", the peers add up to the protocols at every view,
 * and another job's peers are untouched. Evictions are bounded: only an
 * idle peer is replaced (MG_TOTALS_PEER_IDLE of the job's packets).
 */
START_TEST(net_peer_flood)
{
	enum { FLOOD = 200000 };
	struct mg_totals *t;
	struct mg_totals_view v;
	struct mg_totals_counts n, series;
	const struct mg_totals_job *j;
	unsigned int k, real = 0;
	char a[32];

	ck_assert_int_eq(mg_totals_create(20, &t), 0);
	mg_totals_add(t, tx4(8, IPPROTO_TCP, "10.9.0.1", 1000));
	for (k = 0; k < FLOOD; k++) {
		mg_totals_add(t, tx4(7, IPPROTO_UDP, host_of(a, sizeof(a), k), 10));
		if (k % 50 == 0) {
			mg_totals_add(t, tx4(7, IPPROTO_TCP, "10.1.0.1", 1000));
			mg_totals_add(t, rx4(7, IPPROTO_TCP, "10.1.0.2", 500, 9));
			mg_totals_add(t, tx4(7, IPPROTO_UDP, "10.1.0.3", 100));
			real++;
		}
		if (k % 20000 == 0) {
			ck_assert_int_eq(mg_totals_view(t, &v), 0);
			j = job(&v, 7);
			net_adds_up(&j->net, &n, &series);
			ck_assert(counts_eq(&n, &series));
			mg_totals_view_free(&v);
		}
	}
	ck_assert_int_eq(mg_totals_view(t, &v), 0);
	j = job(&v, 7);
	net_adds_up(&j->net, &n, &series);
	ck_assert_uint_eq(n.tx_bytes, FLOOD * 10ULL + real * 1100ULL);
	ck_assert_uint_eq(n.rx_bytes, real * 500ULL);
	ck_assert_uint_eq(j->net.npeers, MG_TOTALS_PEERS);
	ck_assert(counts_eq(&peer(&j->net, "10.1.0.1")->n,
			    &(struct mg_totals_counts){ real, real * 1000ULL, 0, 0, 0, 0 }));
	ck_assert(counts_eq(&peer(&j->net, "10.1.0.2")->n,
			    &(struct mg_totals_counts){ 0, 0, real, real * 500ULL, 0, 0 }));
	ck_assert(counts_eq(&peer(&j->net, "10.1.0.3")->n,
			    &(struct mg_totals_counts){ real, real * 100ULL, 0, 0, 0, 0 }));
	/* The flood's bytes: in "other", but for the 13 listed now. */
	ck_assert_uint_eq(j->net.other.n.tx_bytes, (FLOOD - 13) * 10ULL);
	ck_assert_uint_gt(j->net.evictions, 0);
	ck_assert_uint_le(j->net.evictions,
			  (FLOOD + 3 * real) / MG_TOTALS_PEER_IDLE * MG_TOTALS_PEERS + MG_TOTALS_PEERS);
	ck_assert_uint_eq(j->net.evictions, j->net.evictions_series);
	j = job(&v, 8);
	ck_assert_uint_eq(j->net.npeers, 1);
	ck_assert_uint_eq(peer(&j->net, "10.9.0.1")->n.tx_bytes, 1000);
	ck_assert_uint_eq(j->net.evictions, 0);
	mg_totals_view_free(&v);
	mg_totals_free(t);
}
END_TEST

/*
 * Peers met when every place is busy (all counted within the last
 * MG_TOTALS_PEER_IDLE packets) count in "other" and evict nobody: 20
 * peers in turn keep the first 16 listed, with no eviction at all.
 */
START_TEST(net_peer_busy)
{
	struct mg_totals *t;
	struct mg_totals_view v;
	struct mg_totals_counts n, series;
	const struct mg_totals_job *j;
	unsigned int k;
	char a[32];

	ck_assert_int_eq(mg_totals_create(20, &t), 0);
	for (k = 0; k < 20 * 1000; k++)
		mg_totals_add(t, tx4(7, IPPROTO_TCP, host_of(a, sizeof(a), k % 20), 100));
	ck_assert_int_eq(mg_totals_view(t, &v), 0);
	j = job(&v, 7);
	net_adds_up(&j->net, &n, &series);
	ck_assert_uint_eq(j->net.npeers, MG_TOTALS_PEERS);
	ck_assert_uint_eq(j->net.evictions, 0);
	for (k = 0; k < 16; k++)
		ck_assert_uint_eq(peer(&j->net, host_of(a, sizeof(a), k))->n.tx_bytes, 100000);
	ck_assert_uint_eq(j->net.other.n.tx_bytes, 4 * 100000);
	mg_totals_view_free(&v);
	mg_totals_free(t);
}
END_TEST

/*
 * A job that only receives (its packets written in softirq over other
 * threads: no event of its own) is as busy as its traffic: it takes the
 * place of an idle job.
 */
START_TEST(net_rank_receiver)
{
	struct mg_totals *t;
	struct mg_totals_view v;
	unsigned int s, k;

	ck_assert_int_eq(mg_totals_create(1, &t), 0);
	add_n(t, 1, 10);
	for (s = 1; s <= 5; s++) {
		for (k = 0; k < 1000; k++)
			mg_totals_add(t, rx4(2, IPPROTO_UDP, "10.0.0.2", 100, 0));
		mg_totals_rank(t, s * SEC);
	}
	ck_assert_int_eq(mg_totals_view(t, &v), 0);
	ck_assert(job(&v, 2)->exported);
	ck_assert(!job(&v, 1)->exported);
	ck_assert_uint_eq(job(&v, 2)->events, 0);
	/* It entered at 0: the packets before are "other"'s. */
	ck_assert_uint_eq(job(&v, 2)->net.proto_series[MG_TOTALS_UDP].rx_packets +
			  v.other.net.proto_series[MG_TOTALS_UDP].rx_packets, 5000);
	mg_totals_view_free(&v);
	mg_totals_free(t);
}
END_TEST

/*
 * Tasks of a step (their sockets' cgroups) join the step's series: their
 * traffic so far and after is the step's, peers merged by host.
 */
START_TEST(net_series_join)
{
	struct mg_totals *t;
	struct mg_totals_view v;
	struct mg_totals_counts n, series;
	const struct mg_totals_job *j;

	ck_assert_int_eq(mg_totals_create(20, &t), 0);
	mg_totals_add(t, tx4(501, IPPROTO_TCP, "10.0.0.2", 1000));
	mg_totals_add(t, rx4(502, IPPROTO_TCP, "10.0.0.2", 300, 501));
	mg_totals_add(t, tx4(502, IPPROTO_UDP, "10.0.0.3", 20));
	mg_totals_job_series(t, 501, 500);
	mg_totals_job_series(t, 502, 500);
	mg_totals_add(t, tx4(501, IPPROTO_TCP, "10.0.0.2", 5));
	ck_assert_int_eq(mg_totals_view(t, &v), 0);
	ck_assert_uint_eq(v.njobs, 1);
	j = job(&v, 500);
	ck_assert(j->exported && j->has_net);
	ck_assert(counts_eq(&j->net.proto[MG_TOTALS_TCP],
			    &(struct mg_totals_counts){ 2, 1005, 1, 300, 0, 0 }));
	ck_assert_uint_eq(j->net.npeers, 2);
	ck_assert(counts_eq(&peer(&j->net, "10.0.0.2")->n,
			    &(struct mg_totals_counts){ 2, 1005, 1, 300, 0, 0 }));
	net_adds_up(&j->net, &n, &series);
	ck_assert(counts_eq(&n, &series));	/* the tasks were exported */
	ck_assert_uint_eq(j->series.packets, 4);
	mg_totals_view_free(&v);
	mg_totals_free(t);
}
END_TEST

/*
 * Every packet in exactly one series, as records are (series_exact), and
 * a job's peers adding up to its protocols in every view: random traffic
 * of 60 sockets' cgroups (tasks of 5 steps when even) with 40 hosts,
 * joins, places taken and left, jobs gone.
 */
START_TEST(net_series_exact)
{
	enum { IDS = 60, STEPS = 5, HOSTS = 40 };
	struct mg_totals *t;
	struct mg_totals_view a, b;
	unsigned int step;

	tu_seed(0x9e7 + _i);
	ck_assert_int_eq(mg_totals_create(3, &t), 0);
	for (step = 0; step < 300; step++) {
		struct mg_totals_counts n, series;
		__u64 sum = 0, other;
		unsigned int k;
		size_t i;
		char h[32];

		ck_assert_int_eq(mg_totals_view(t, &a), 0);
		for (k = 0; k < 60; k++) {
			__u32 sk = tu_rand() % (IDS + 1);	/* 0: no socket */
			unsigned int bytes = tu_rand() % 1500;

			host_of(h, sizeof(h), tu_rand() % HOSTS);
			mg_totals_add(t, tu_rand() % 2 ?
				      tx4(sk, IPPROTO_TCP, h, bytes) :
				      rx4(sk, tu_rand() % 3 ? IPPROTO_UDP : 47, h, bytes,
					  tu_rand() % IDS));
		}
		ck_assert_int_eq(mg_totals_view(t, &b), 0);
		for (i = 0; i < b.njobs; i++) {
			__u64 c = b.jobs[i].cgroup;

			if (!b.jobs[i].named)
				mg_totals_job_series(t, c, c % 2 ? c : 10001 + c % STEPS);
		}
		mg_totals_view_free(&b);
		ck_assert_int_eq(mg_totals_view(t, &b), 0);
		for (i = 0; i < b.njobs; i++) {
			const struct mg_totals_job *o = job(&a, b.jobs[i].cgroup);
			struct mg_totals_counts on, os;

			net_adds_up(&b.jobs[i].net, &n, &series);
			if (!b.jobs[i].exported)
				continue;
			sum += series.tx_bytes + series.rx_bytes;
			if (o && o->exported) {
				net_adds_up(&o->net, &on, &os);
				tu_assert_op(series.tx_bytes, >=, os.tx_bytes);
				tu_assert_op(series.rx_packets, >=, os.rx_packets);
				tu_assert_op(b.jobs[i].net.other.series.tx_bytes, >=,
					     o->net.other.series.tx_bytes);
				sum -= os.tx_bytes + os.rx_bytes;
			}
		}
		net_adds_up(&b.other.net, &n, &series);
		other = n.tx_bytes + n.rx_bytes;
		net_adds_up(&a.other.net, &n, &series);
		tu_assert_op(other, >=, n.tx_bytes + n.rx_bytes);
		other -= n.tx_bytes + n.rx_bytes;
		tu_assert_op(sum + other, ==, b.node.net_bytes - a.node.net_bytes);
		mg_totals_view_free(&a);
		mg_totals_view_free(&b);
		mg_totals_rank(t, (__u64)(step + 1) * SEC);
		if (tu_rand() % 8 == 0)
			mg_totals_job_gone(t, tu_rand() % 2 ? 10001 + tu_rand() % STEPS :
						     1 + tu_rand() % IDS);
	}
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
	tcase_add_test(tc, series_shown_net);
	tcase_add_loop_test(tc, series_shown_exact, 0, 3);
	tcase_add_test(tc, series_join);
	tcase_add_test(tc, series_one_place);
	tcase_add_loop_test(tc, series_exact, 0, 3);
	tcase_add_test(tc, net_by_socket);
	tcase_add_test(tc, net_peer_flood);
	tcase_add_test(tc, net_peer_busy);
	tcase_add_test(tc, net_rank_receiver);
	tcase_add_test(tc, net_series_join);
	tcase_add_test(tc, net_tcp_once);
	tcase_add_test(tc, net_tcp_rings);
	tcase_add_loop_test(tc, net_series_exact, 0, 3);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
