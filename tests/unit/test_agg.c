// SPDX-License-Identifier: GPL-2.0
/*
 * daemon/agg.c: exact counts under capacity, eviction at capacity (counted,
 * heavy hitters kept, least-count then least-recent victims), top-N order
 * and ties, reset, LOST folding, record keys and comm labels, random adds
 * against reference implementations (under and over capacity), and no
 * allocation after create.
 */
#include <check.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agg.h"
#include "record.h"
#include "testutil.h"

static struct mg_agg *create(unsigned int cap)
{
	struct mg_agg *a;

	ck_assert_int_eq(mg_agg_create(cap, &a), 0);
	ck_assert_ptr_nonnull(a);
	return a;
}

static struct mg_agg_stats stats(const struct mg_agg *a)
{
	struct mg_agg_stats st;

	mg_agg_stats(a, &st);
	return st;
}

/* Every entry in use, sorted as a report. */
static unsigned int all(const struct mg_agg *a, struct mg_agg_entry *out,
			unsigned int max)
{
	unsigned int n = mg_agg_top(a, max, out);

	ck_assert_uint_eq(n, stats(a).used);
	return n;
}

/* events == entries' events + evicted_events; bytes likewise bounded. */
static void check_sums(const struct mg_agg *a)
{
	static struct mg_agg_entry e[4096];
	struct mg_agg_stats st = stats(a);
	unsigned long long ev = 0, by = 0;
	unsigned int i, n = all(a, e, 4096);

	for (i = 0; i < n; i++) {
		ev += e[i].events;
		by += e[i].bytes;
		tu_assert(e[i].events >= 1);
		tu_assert(mg_agg_find(a, e[i].key) != NULL);
	}
	tu_assert_op(ev + st.evicted_events, ==, st.events);
	tu_assert_op(by, <=, st.bytes);
	tu_assert_op(st.used, <=, st.capacity);
}

START_TEST(create_args)
{
	static const unsigned int bad[] = {
		0, 3, 6, 1000, 1025, MG_AGG_MAX_CAPACITY + 1,
		MG_AGG_MAX_CAPACITY * 2U, UINT32_MAX,
	};
	struct mg_agg *a = (struct mg_agg *)1;
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(mg_agg_create(bad[i], &a), -EINVAL);
		ck_assert_ptr_null(a);
	}
	for (i = 1; i <= 1024; i *= 2) {
		a = create(i);
		ck_assert_uint_eq(stats(a).capacity, i);
		ck_assert_uint_eq(stats(a).used, 0);
		ck_assert_ptr_null(mg_agg_find(a, 0));
		mg_agg_free(a);
	}
	mg_agg_free(NULL);
}
END_TEST

/* 1000 keys in 1024 entries: every count exact, nothing evicted. */
START_TEST(exact_counts)
{
	struct mg_agg *a = create(1024);
	const struct mg_agg_entry *e;
	unsigned long long events = 0, bytes = 0;
	struct mg_agg_stats st;
	unsigned int i, j;

	for (j = 0; j < 7; j++) {
		for (i = 0; i < 1000; i++) {
			/* Key i gets i % 7 + 1 adds, at ts 100 + j, out of order. */
			if (j > i % 7)
				continue;
			ck_assert_int_eq(mg_agg_add(a, i * 0x10001ULL, NULL,
						    8 * i, 100 + (j * 3) % 7),
					 j ? MG_AGG_HIT : MG_AGG_NEW);
			events++;
			bytes += 8 * i;
		}
	}
	st = stats(a);
	ck_assert_uint_eq(st.used, 1000);
	ck_assert_uint_eq(st.events, events);
	ck_assert_uint_eq(st.bytes, bytes);
	ck_assert_uint_eq(st.evictions, 0);
	ck_assert_uint_eq(st.evicted_events, 0);
	for (i = 0; i < 1000; i++) {
		unsigned int n = i % 7 + 1, lo = 100, hi = 100;

		for (j = 0; j < n; j++) {
			unsigned int ts = 100 + (j * 3) % 7;

			lo = ts < lo ? ts : lo;
			hi = ts > hi ? ts : hi;
		}
		e = mg_agg_find(a, i * 0x10001ULL);
		ck_assert_ptr_nonnull(e);
		ck_assert_uint_eq(e->key, i * 0x10001ULL);
		ck_assert_uint_eq(e->events, n);
		ck_assert_uint_eq(e->bytes, 8ULL * i * n);
		ck_assert_uint_eq(e->first_ts, lo);
		ck_assert_uint_eq(e->last_ts, hi);
		ck_assert_str_eq(e->label, "");
	}
	ck_assert_ptr_null(mg_agg_find(a, 1000 * 0x10001ULL));
	check_sums(a);
	mg_agg_free(a);
}
END_TEST

/* Key 0 (pid 0, the idle task) and ~0 are keys like any other. */
START_TEST(edge_keys)
{
	struct mg_agg *a = create(2);

	ck_assert_int_eq(mg_agg_add(a, 0, NULL, 0, 0), MG_AGG_NEW);
	ck_assert_int_eq(mg_agg_add(a, 0, NULL, 0, 0), MG_AGG_HIT);
	ck_assert_int_eq(mg_agg_add(a, UINT64_MAX, NULL, 1, UINT64_MAX),
			 MG_AGG_NEW);
	ck_assert_uint_eq(mg_agg_find(a, 0)->events, 2);
	ck_assert_uint_eq(mg_agg_find(a, UINT64_MAX)->events, 1);
	ck_assert_uint_eq(mg_agg_find(a, UINT64_MAX)->first_ts, UINT64_MAX);
	ck_assert_uint_eq(stats(a).used, 2);
	/* Full: key 1 evicts the 1-event entry, keeps key 0. */
	ck_assert_int_eq(mg_agg_add(a, 1, NULL, 0, 0), MG_AGG_EVICTED);
	ck_assert_ptr_null(mg_agg_find(a, UINT64_MAX));
	ck_assert_uint_eq(mg_agg_find(a, 0)->events, 2);
	ck_assert_uint_eq(stats(a).evictions, 1);
	ck_assert_uint_eq(stats(a).evicted_events, 1);
	mg_agg_free(a);
}
END_TEST

static const unsigned int caps[] = { 1, 2, 8, 32, 64, 256, 1024, 4096 };

/*
 * capacity + K distinct keys: exactly K evictions, each add that did one
 * says so, and the heavy hitters (as many as the sample guarantees) keep
 * their exact counts.
 */
START_TEST(eviction_count)
{
	unsigned int cap = caps[_i], K = 3 * cap + 17, i, j;
	unsigned int sample = cap < MG_AGG_EVICT_SAMPLE ? cap :
			      MG_AGG_EVICT_SAMPLE;
	unsigned int heavy = sample - 1, evicted = 0;
	struct mg_agg *a = create(cap);
	struct mg_agg_stats st;
	__u64 key = 1000000;

	for (i = 0; i < cap; i++)
		ck_assert_int_eq(mg_agg_add(a, key++, NULL, 1, i), MG_AGG_NEW);
	/* The first `heavy` keys get 100 + i more events each. */
	for (i = 0; i < heavy; i++)
		for (j = 0; j < 100 + i; j++)
			ck_assert_int_eq(mg_agg_add(a, 1000000 + i, NULL, 1, 0),
					 MG_AGG_HIT);
	ck_assert_uint_eq(stats(a).evictions, 0);
	for (i = 0; i < K; i++)
		if (mg_agg_add(a, key++, NULL, 1, i) == MG_AGG_EVICTED)
			evicted++;
	st = stats(a);
	ck_assert_uint_eq(evicted, K);
	ck_assert_uint_eq(st.evictions, K);
	/* Only one-event entries went. */
	ck_assert_uint_eq(st.evicted_events, K);
	ck_assert_uint_eq(st.used, cap);
	for (i = 0; i < heavy; i++) {
		const struct mg_agg_entry *e = mg_agg_find(a, 1000000 + i);

		ck_assert_ptr_nonnull(e);
		ck_assert_uint_eq(e->events, 101 + i);
	}
	/*
	 * Ties go to the least recently counted: the key before the last
	 * survived the last insertion (among so many one-event entries, the
	 * sample always had an older one).
	 */
	ck_assert_ptr_nonnull(mg_agg_find(a, key - 1));
	if (cap >= 256)
		ck_assert_ptr_nonnull(mg_agg_find(a, key - 2));
	check_sums(a);
	mg_agg_free(a);
}
END_TEST

/*
 * A table no larger than the sample is exact LFU with LRU ties: the victim
 * is the least-count entry, of those the one counted longest ago.
 */
START_TEST(eviction_victim)
{
	struct mg_agg *a = create(MG_AGG_EVICT_SAMPLE);
	unsigned int i;

	for (i = 0; i < MG_AGG_EVICT_SAMPLE; i++)
		mg_agg_add(a, i, NULL, 0, 0);
	ck_assert_int_eq(mg_agg_add(a, 100, NULL, 0, 0), MG_AGG_EVICTED);
	ck_assert_ptr_null(mg_agg_find(a, 0));
	/* Key 1 now has 2 events: key 2 is the oldest one-event entry. */
	ck_assert_int_eq(mg_agg_add(a, 1, NULL, 0, 0), MG_AGG_HIT);
	ck_assert_int_eq(mg_agg_add(a, 101, NULL, 0, 0), MG_AGG_EVICTED);
	ck_assert_ptr_nonnull(mg_agg_find(a, 1));
	ck_assert_ptr_null(mg_agg_find(a, 2));
	/* Give every entry 2 events but key 20: it goes first, then 3. */
	for (i = 0; i < 200; i++)
		if (i != 20 && mg_agg_find(a, i) && mg_agg_find(a, i)->events < 2)
			mg_agg_add(a, i, NULL, 0, 0);
	mg_agg_add(a, 100, NULL, 0, 0);
	mg_agg_add(a, 101, NULL, 0, 0);
	ck_assert_int_eq(mg_agg_add(a, 102, NULL, 0, 0), MG_AGG_EVICTED);
	ck_assert_ptr_null(mg_agg_find(a, 20));
	ck_assert_int_eq(mg_agg_add(a, 103, NULL, 0, 0), MG_AGG_EVICTED);
	ck_assert_ptr_null(mg_agg_find(a, 102));	/* the only 1-event one */
	ck_assert_ptr_nonnull(mg_agg_find(a, 103));
	ck_assert_uint_eq(stats(a).evictions, 4);
	check_sums(a);
	mg_agg_free(a);
}
END_TEST

START_TEST(top_order)
{
	/* key: events. Ties at 5 (keys 3, 7, 9) and at 1 (keys 0, 4). */
	static const unsigned int cnt[10] = { 1, 8, 0, 5, 1, 2, 0, 5, 9, 5 };
	static const unsigned int order[] = { 8, 1, 3, 7, 9, 5, 0, 4 };
	struct mg_agg_entry out[16];
	struct mg_agg *a = create(16);
	unsigned int i, j, n;

	ck_assert_uint_eq(mg_agg_top(a, 5, out), 0);
	/* Added in an order unrelated to the report's. */
	for (j = 0; j < 9; j++)
		for (i = 0; i < 10; i++)
			if (cnt[(i * 7) % 10] > j)
				mg_agg_add(a, (i * 7) % 10, NULL, 1, 0);
	for (n = 0; n <= 10; n++) {
		unsigned int got = mg_agg_top(a, n, out);

		ck_assert_uint_eq(got, n < 8 ? n : 8);
		for (i = 0; i < got; i++) {
			ck_assert_uint_eq(out[i].key, order[i]);
			ck_assert_uint_eq(out[i].events, cnt[order[i]]);
		}
	}
	mg_agg_free(a);
}
END_TEST

/* Record encoding helpers over libmagnet's encoders. */
static ssize_t encode_lost(void *buf, const struct mg_record_hdr *h,
				 const struct magnet_lost *l)
{
	return mg_record_encode_lost(buf, 128, h, l);
}

static const struct magnet_record *kprobe(void *buf, __u16 ev, __u32 pid,
					  __u32 tgid, __u64 ts,
					  unsigned int nargs)
{
	static const __u64 args[6];
	struct mg_record_hdr h = {
		.event_id = ev, .pid = pid, .tgid = tgid, .timestamp = ts,
	};

	ck_assert_int_gt(mg_record_encode_kprobe(buf, 128, &h, args, nargs),
			 0);
	return buf;
}

START_TEST(reset)
{
	struct mg_agg *a = create(4);
	struct mg_agg_entry out[4];
	char buf[128] __attribute__((aligned(8)));
	struct mg_record_hdr h = { .cpu = 1 };
	struct magnet_lost l = { .full = 3 };
	struct mg_agg_stats st;
	unsigned int i;

	for (i = 0; i < 10; i++)
		mg_agg_add(a, i, "x", 8, i);
	ck_assert_int_gt(encode_lost(buf, &h, &l), 0);
	ck_assert_int_eq(mg_agg_add_record(a, MG_AGG_PID,
					   (void *)buf, NULL, NULL), MG_AGG_LOST);
	/* Folded whatever the key, even one that needs a callback. */
	ck_assert_int_eq(mg_agg_add_record(a, MG_AGG_COMM, (void *)buf,
					   NULL, NULL), MG_AGG_LOST);
	st = stats(a);
	ck_assert_uint_eq(st.evictions, 6);
	ck_assert_uint_eq(st.lost.full, 6);

	mg_agg_reset(a);
	st = stats(a);
	ck_assert_uint_eq(st.used, 0);
	ck_assert_uint_eq(st.capacity, 4);
	ck_assert_uint_eq(st.events, 0);
	ck_assert_uint_eq(st.bytes, 0);
	ck_assert_uint_eq(st.evictions, 0);
	ck_assert_uint_eq(st.evicted_events, 0);
	ck_assert_uint_eq(st.lost_records, 0);
	ck_assert_uint_eq(mg_lost_total(&st.lost), 0);
	ck_assert_uint_eq(mg_agg_top(a, 4, out), 0);
	for (i = 0; i < 10; i++)
		ck_assert_ptr_null(mg_agg_find(a, i));

	/* The next interval counts from zero, in all four entries. */
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(mg_agg_add(a, i, NULL, 16, 50 + i),
				 MG_AGG_NEW);
	ck_assert_int_eq(mg_agg_add(a, 9, NULL, 16, 0), MG_AGG_EVICTED);
	ck_assert_uint_eq(stats(a).evictions, 1);
	ck_assert_str_eq(mg_agg_find(a, 9)->label, "");
	ck_assert_uint_eq(mg_agg_find(a, 1)->first_ts, 51);
	check_sums(a);
	mg_agg_free(a);
}
END_TEST

START_TEST(lost_folding)
{
	static const struct magnet_lost l[3] = {
		{ .full = 5 },
		{ .too_big = 1, .nesting = 2 },
		{ .full = 1, .overwritten = 1000 },
	};
	char buf[128] __attribute__((aligned(8)));
	struct mg_agg *a = create(8);
	struct mg_record_hdr h = { .timestamp = 7 };
	struct mg_agg_stats st;
	enum mg_agg_key k;
	unsigned int i;

	for (k = 0; k < MG_AGG_NR; k++) {
		mg_agg_reset(a);
		for (i = 0; i < 3; i++) {
			ck_assert_int_gt(encode_lost(buf, &h, &l[i]), 0);
			ck_assert_int_eq(mg_agg_add_record(a, k, (void *)buf,
							   NULL, NULL),
					 MG_AGG_LOST);
			ck_assert_int_eq(mg_agg_add_record(
					a, k, kprobe(buf, 16, 1, 1, 8, 0),
					NULL, NULL),
				k <= MG_AGG_TGID ? (i ? MG_AGG_HIT : MG_AGG_NEW)
						 : -EINVAL);
		}
		st = stats(a);
		ck_assert_uint_eq(st.lost_records, 3);
		ck_assert_uint_eq(st.lost.full, 6);
		ck_assert_uint_eq(st.lost.too_big, 1);
		ck_assert_uint_eq(st.lost.nesting, 2);
		ck_assert_uint_eq(st.lost.overwritten, 1000);
		ck_assert_uint_eq(mg_lost_total(&st.lost), 1009);
		/* LOST records are not events and have no entry. */
		ck_assert_uint_eq(st.events, k <= MG_AGG_TGID ? 3 : 0);
		ck_assert_uint_eq(st.used, k <= MG_AGG_TGID ? 1 : 0);
		ck_assert_uint_eq(st.unkeyed, k <= MG_AGG_TGID ? 0 : 3);
	}
	mg_agg_free(a);
}
END_TEST

START_TEST(record_keys)
{
	char buf[128] __attribute__((aligned(8)));
	struct mg_agg *a = create(8);
	const struct mg_agg_entry *e;
	struct mg_agg_stats st;

	kprobe(buf, 17, 100, 99, 1000, 2);
	ck_assert_int_eq(mg_agg_add_record(a, MG_AGG_PROBE, (void *)buf,
					   NULL, NULL), MG_AGG_NEW);
	ck_assert_int_eq(mg_agg_add_record(a, MG_AGG_PID, (void *)buf,
					   NULL, NULL), MG_AGG_NEW);
	ck_assert_int_eq(mg_agg_add_record(a, MG_AGG_TGID, (void *)buf,
					   NULL, NULL), MG_AGG_NEW);
	kprobe(buf, 17, 101, 99, 900, 0);
	ck_assert_int_eq(mg_agg_add_record(a, MG_AGG_PROBE, (void *)buf,
					   NULL, NULL), MG_AGG_HIT);
	ck_assert_int_eq(mg_agg_add_record(a, MG_AGG_TGID, (void *)buf,
					   NULL, NULL), MG_AGG_HIT);
	e = mg_agg_find(a, 17);
	ck_assert_uint_eq(e->events, 2);
	ck_assert_uint_eq(e->bytes, 56 + 40);
	ck_assert_uint_eq(e->first_ts, 900);
	ck_assert_uint_eq(e->last_ts, 1000);
	ck_assert_uint_eq(mg_agg_find(a, 100)->events, 1);
	ck_assert_uint_eq(mg_agg_find(a, 99)->events, 2);
	ck_assert_ptr_null(mg_agg_find(a, 101));
	/* A kind that does not exist. */
	ck_assert_int_eq(mg_agg_add_record(a, MG_AGG_NR, (void *)buf,
					   NULL, NULL), -EINVAL);
	st = stats(a);
	ck_assert_uint_eq(st.events, 5);
	ck_assert_uint_eq(st.bytes, 56 * 3 + 40 * 2);
	ck_assert_uint_eq(st.unkeyed, 1);
	mg_agg_free(a);
}
END_TEST

/* Caller's tables: pid -> comm and cgroup id, as magnetd would cache them. */
static const struct {
	__u32 pid;
	const char *comm;
	__u64 cgroup;
} tasks[] = {
	{ 10, "bash", 1 },
	{ 11, "bash", 2 },
	{ 12, "kworker/0:1H-kblockd", 2 },	/* longer than a comm */
	{ 13, "", 3 },
};

static unsigned int calls;

static int key_of(void *arg, enum mg_agg_key kind,
		  const struct magnet_record *r, __u64 *key, char *label)
{
	size_t i;

	calls++;
	ck_assert_ptr_eq(arg, &calls);
	if (r->pid == 998 && kind == MG_AGG_COMM) {
		strcpy(label, "guess");	/* dropped: the name is unknown */
		return MG_AGG_COMM_UNKNOWN_NAME;
	}
	for (i = 0; i < sizeof(tasks) / sizeof(tasks[0]); i++) {
		if (tasks[i].pid != r->pid)
			continue;
		ck_assert_str_eq(label, "");
		switch (kind) {
		case MG_AGG_COMM:
			*key = 12345;	/* ignored: the key is the comm's */
			/* fall through */
		case MG_AGG_PID:
			strncpy(label, tasks[i].comm, MG_AGG_LABEL_LEN);
			return 0;
		case MG_AGG_CGROUP:
			*key = tasks[i].cgroup;
			return 0;
		default:
			return 0;
		}
	}
	return -ESRCH;
}

START_TEST(comm_labels)
{
	char buf[128] __attribute__((aligned(8)));
	struct mg_agg *a = create(16);
	const struct mg_agg_entry *e;
	struct mg_agg_entry out[16];
	unsigned int i;

	/* FNV-1a 64 ("" and "a"), the first 15 bytes only. */
	ck_assert_uint_eq(mg_agg_comm_key(""), 0xcbf29ce484222325ULL);
	ck_assert_uint_eq(mg_agg_comm_key("a"), 0xaf63dc4c8601ec8cULL);
	ck_assert_uint_eq(mg_agg_comm_key("kworker/0:1H-kb"),
			  mg_agg_comm_key("kworker/0:1H-kblockd"));
	ck_assert_uint_ne(mg_agg_comm_key("bash"), mg_agg_comm_key("bas"));

	for (i = 0; i < 4; i++) {
		kprobe(buf, 16, tasks[i].pid, 1, i, 0);
		ck_assert_int_ge(mg_agg_add_record(a, MG_AGG_COMM, (void *)buf,
						   key_of, &calls), 0);
	}
	kprobe(buf, 16, 999, 1, 0, 0);
	ck_assert_int_eq(mg_agg_add_record(a, MG_AGG_COMM, (void *)buf,
					   key_of, &calls), -ESRCH);
	ck_assert_uint_eq(calls, 5);
	ck_assert_uint_eq(stats(a).unkeyed, 1);
	/* A thread no TASK record named: the unknown-name key, not a guess. */
	kprobe(buf, 16, 998, 1, 0, 0);
	ck_assert_int_eq(mg_agg_add_record(a, MG_AGG_COMM, (void *)buf,
					   key_of, &calls), MG_AGG_NEW);
	e = mg_agg_find(a, MG_AGG_COMM_UNKNOWN);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->events, 1);
	ck_assert_str_eq(e->label, "");
	ck_assert_ptr_null(mg_agg_find(a, mg_agg_comm_key("guess")));
	ck_assert_uint_eq(stats(a).unkeyed, 1);
	calls--;
	ck_assert_uint_eq(mg_agg_top(a, 16, out), 4);
	ck_assert_uint_eq(out[0].key, mg_agg_comm_key("bash"));
	ck_assert_str_eq(out[0].label, "bash");
	ck_assert_uint_eq(out[0].events, 2);
	e = mg_agg_find(a, mg_agg_comm_key("kworker/0:1H-kblockd"));
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(e->label, "kworker/0:1H-kb");
	e = mg_agg_find(a, mg_agg_comm_key(""));
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(e->label, "");
	ck_assert_ptr_null(mg_agg_find(a, 12345));

	/* cgroup: the callback's key; pid: the record's, with a label. */
	mg_agg_reset(a);
	for (i = 0; i < 4; i++) {
		kprobe(buf, 16, tasks[i].pid, 1, i, 0);
		mg_agg_add_record(a, MG_AGG_CGROUP, (void *)buf, key_of,
				  &calls);
		mg_agg_add_record(a, MG_AGG_PID, (void *)buf, key_of, &calls);
	}
	ck_assert_uint_eq(mg_agg_find(a, 2)->events, 2);
	ck_assert_str_eq(mg_agg_find(a, 2)->label, "");
	ck_assert_str_eq(mg_agg_find(a, 11)->label, "bash");
	ck_assert_str_eq(mg_agg_find(a, 12)->label, "kworker/0:1H-kb");

	/* A pid's label follows its latest comm; NULL keeps it. */
	mg_agg_add(a, 11, "python3", 0, 0);
	ck_assert_str_eq(mg_agg_find(a, 11)->label, "python3");
	mg_agg_add(a, 11, NULL, 0, 0);
	ck_assert_str_eq(mg_agg_find(a, 11)->label, "python3");
	mg_agg_add(a, 11, "abcdefghijklmnopqrstuvwxyz", 0, 0);
	e = mg_agg_find(a, 11);
	ck_assert_str_eq(e->label, "abcdefghijklmno");
	ck_assert_uint_eq(e->events, 4);
	mg_agg_free(a);
}
END_TEST

START_TEST(rates)
{
	ck_assert_double_eq(mg_agg_rate(500, 500000000ULL), 1000.0);
	ck_assert_double_eq(mg_agg_rate(3, 1000000000ULL), 3.0);
	ck_assert_double_eq(mg_agg_rate(1, 2000000000ULL), 0.5);
	ck_assert_double_eq(mg_agg_rate(0, 10000000ULL), 0.0);
	ck_assert_double_eq(mg_agg_rate(7, 0), 0.0);
	ck_assert_double_eq_tol(mg_agg_rate(1000000, 86400000000000ULL),
				1000000.0 / 86400, 1e-9);
}
END_TEST

/* The reference: a plain array, linear search, counts since insertion. */
struct ref {
	__u64 key;
	__u64 events, bytes, first, last;
	char label[MG_AGG_LABEL_LEN];
	__u64 total;		/* every add, evicted or not */
	int present;
};

static int ref_cmp(const void *x, const void *y)
{
	const struct ref *a = x, *b = y;

	if (a->events != b->events)
		return a->events > b->events ? -1 : 1;
	return a->key < b->key ? -1 : a->key > b->key;
}

static void ref_check(const struct mg_agg *a, struct ref *r, unsigned int nr)
{
	unsigned int i, used = 0;

	for (i = 0; i < nr; i++) {
		const struct mg_agg_entry *e = mg_agg_find(a, r[i].key);

		if (!r[i].present) {
			tu_assert(!e);
			continue;
		}
		used++;
		tu_assert(e);
		tu_assert_op(e->key, ==, r[i].key);
		tu_assert_op(e->events, ==, r[i].events);
		tu_assert_op(e->bytes, ==, r[i].bytes);
		tu_assert_op(e->first_ts, ==, r[i].first);
		tu_assert_op(e->last_ts, ==, r[i].last);
		tu_assert(!strcmp(e->label, r[i].label));
		tu_assert_op(e->events, <=, r[i].total);
	}
	tu_assert_op(stats(a).used, ==, used);
}

/* A random pool of distinct keys, some small, some wide. */
static void pool(struct ref *r, unsigned int n)
{
	unsigned int i, j;

	memset(r, 0, n * sizeof(*r));
	for (i = 0; i < n; i++) {
again:
		r[i].key = (tu_rand() & 1) ? tu_rand() % 4096 : tu_rand();
		for (j = 0; j < i; j++)
			if (r[j].key == r[i].key)
				goto again;
	}
}

static const char *const labels[] = { NULL, "a", "bash", "", "sshd" };

static void ref_add(struct mg_agg *a, struct ref *r, unsigned int nr,
		    unsigned int i, enum mg_agg_result *res)
{
	const char *label = labels[tu_rand() % 5];
	__u64 bytes = tu_rand() % 4136, ts = tu_rand() % 1000000;

	*res = mg_agg_add(a, r[i].key, label, bytes, ts);
	if (!r[i].present) {
		tu_assert(*res == MG_AGG_NEW || *res == MG_AGG_EVICTED);
		r[i].present = 1;
		r[i].events = r[i].bytes = 0;
		r[i].first = r[i].last = ts;
		memset(r[i].label, 0, sizeof(r[i].label));
	} else {
		tu_assert(*res == MG_AGG_HIT);
	}
	r[i].events++;
	r[i].total++;
	r[i].bytes += bytes;
	r[i].first = ts < r[i].first ? ts : r[i].first;
	r[i].last = ts > r[i].last ? ts : r[i].last;
	if (label)
		strcpy(r[i].label, label);
	(void)nr;
}

/* Under capacity: every field of every entry, and the report, exact. */
START_TEST(random_reference)
{
	static struct ref r[1000];
	static struct mg_agg_entry out[1024];
	struct mg_agg *a = create(1024);
	enum mg_agg_result res;
	unsigned int round, i, n;

	tu_seed(0x5eed0000 + _i);
	for (round = 0; round < 3; round++) {
		n = 1 + tu_rand() % 1000;
		pool(r, n);
		mg_agg_reset(a);
		for (i = 0; i < 200000; i++) {
			/* Skewed: low indices far more often. */
			unsigned int k = tu_rand() % n;

			if (tu_rand() & 1)
				k = k * k / n;
			ref_add(a, r, n, k, &res);
			if (i % 50000 == 0)
				ref_check(a, r, n);
		}
		ref_check(a, r, n);
		ck_assert_uint_eq(stats(a).evictions, 0);
		/* The report: the reference sorted, for every prefix. */
		qsort(r, n, sizeof(r[0]), ref_cmp);
		for (i = 0; i < n && r[i].present; i++)
			;
		ck_assert_uint_eq(all(a, out, 1024), i);
		for (i = 0; i < stats(a).used; i++) {
			tu_assert_op(out[i].key, ==, r[i].key);
			tu_assert_op(out[i].events, ==, r[i].events);
		}
		for (n = 0; n < 40; n++) {
			static struct mg_agg_entry part[1024];
			unsigned int want = tu_rand() % (stats(a).used + 2);
			unsigned int got = mg_agg_top(a, want, part);

			tu_assert_op(got, ==, want < stats(a).used ?
					      want : stats(a).used);
			tu_assert(!memcmp(part, out, got * sizeof(out[0])));
		}
		check_sums(a);
	}
	mg_agg_free(a);
}
END_TEST

/*
 * Over capacity: the reference mirrors every eviction (the victim is the
 * one entry that vanished), so each surviving entry's counts since its
 * insertion are exact, and every victim had at least min(sample, cap) - 1
 * other entries with as many events or more.
 */
START_TEST(random_eviction)
{
	static struct ref r[3000];
	static unsigned int live[4096];
	unsigned int cap = caps[_i], n = 3000, nlive = 0, i, j, evictions = 0;
	unsigned int sample = cap < MG_AGG_EVICT_SAMPLE ? cap :
			      MG_AGG_EVICT_SAMPLE;
	struct mg_agg *a = create(cap);
	enum mg_agg_result res;

	tu_seed(0xe71c + cap);
	pool(r, n);
	for (i = 0; i < 100000; i++) {
		unsigned int k = tu_rand() % n, v, ge = 0;

		if (tu_rand() % 4)
			k = (unsigned long long)k * k * k / n / n;
		ref_add(a, r, n, k, &res);
		if (res == MG_AGG_HIT)
			continue;
		if (res == MG_AGG_EVICTED) {
			evictions++;
			for (j = 0; j < nlive; j++)
				if (!mg_agg_find(a, r[live[j]].key))
					break;
			tu_assert(j < nlive);
			v = live[j];
			live[j] = live[--nlive];
			r[v].present = 0;
			for (j = 0; j < nlive; j++)
				if (r[live[j]].events >= r[v].events)
					ge++;
			tu_assert_op(ge, >=, sample - 1);
		}
		live[nlive++] = k;
		tu_assert_op(nlive, <=, cap);
		if (i % 5000 == 0)
			ref_check(a, r, n);
	}
	ref_check(a, r, n);
	ck_assert_uint_eq(stats(a).evictions, evictions);
	ck_assert_uint_eq(stats(a).used, cap);
	ck_assert_uint_gt(evictions, 0);
	check_sums(a);
	mg_agg_free(a);
}
END_TEST

static size_t heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/* Nothing allocates after create: ten million adds, reports, resets. */
START_TEST(no_alloc)
{
	static struct mg_agg_entry out[1024];
	char buf[128] __attribute__((aligned(8)));
	struct mg_agg *a = create(1024);
	size_t before;
	unsigned int i;

	tu_seed(42);
	kprobe(buf, 16, 1, 1, 0, 0);
	before = heap_bytes();
	for (i = 0; i < 10000000; i++) {
		mg_agg_add(a, tu_rand() % (i & 1 ? 512 : 100000),
			   i & 2 ? "comm" : NULL, 64, i);
		if (i % 1000000 == 999999) {
			tu_assert_op(mg_agg_top(a, 10, out), ==, 10);
			tu_assert_op(mg_agg_top(a, 1024, out), ==, 1024);
			mg_agg_add_record(a, MG_AGG_PID, (void *)buf, NULL,
					  NULL);
			mg_agg_reset(a);
		}
	}
	ck_assert_uint_eq(heap_bytes(), before);
	ck_assert_uint_eq(stats(a).events, 0);
	mg_agg_free(a);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("agg");
	TCase *tc = tcase_create("agg");

	tcase_add_test(tc, create_args);
	tcase_add_test(tc, exact_counts);
	tcase_add_test(tc, edge_keys);
	tcase_add_loop_test(tc, eviction_count, 0,
			    sizeof(caps) / sizeof(caps[0]));
	tcase_add_test(tc, eviction_victim);
	tcase_add_test(tc, top_order);
	tcase_add_test(tc, reset);
	tcase_add_test(tc, lost_folding);
	tcase_add_test(tc, record_keys);
	tcase_add_test(tc, comm_labels);
	tcase_add_test(tc, rates);
	suite_add_tcase(s, tc);

	tc = tcase_create("random");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, random_reference, 0, 3);
	/* Not 4096: 3000 keys fit. */
	tcase_add_loop_test(tc, random_eviction, 0,
			    sizeof(caps) / sizeof(caps[0]) - 1);
	tcase_add_test(tc, no_alloc);
	suite_add_tcase(s, tc);

	return tu_run(s);
}
