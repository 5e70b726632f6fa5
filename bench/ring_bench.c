// SPDX-License-Identifier: GPL-2.0
/*
 * ring_bench: the writer cost of the magnet ring core, natively.
 *
 * kmod/ring_core.c is built for user space at -O2 (bench/build.mk) and
 * linked here, so this times the very code the module runs. One writer
 * thread (pinned to -w CPU) does reserve + fill + commit of records of a
 * given size into a 1 MiB ring (the module's default buf_size) while a
 * reader thread (pinned to -r CPU) drains it the way the module's read path
 * does: mg_ring_consume() into a 256 KiB buffer, here with memcpy standing
 * in for copy_to_user. The reader behaves like a woken reader, not a
 * spinning one: it drains everything, then sleeps 20 us before looking
 * again (a spinning reader would keep the ring's cache lines bouncing and
 * time the interconnect, not the ring). The writer writes bursts of a
 * quarter ring, timed, and lets the reader catch up in between, untimed
 * (see run_writer()), so nothing is lost and only the success path is
 * timed.
 *
 * The fill is what mg_kprobe_pre() does: the header fields the ring does
 * not write, then the payload (u64 stores for the args of a 64-byte record,
 * a memcpy for larger ones, like a capture).
 *
 * The record clock (mg_ring_clock(), which the ring calls once per reserve)
 * is the includer's: -c mono is clock_gettime(CLOCK_MONOTONIC) through the
 * vDSO (the user-space counterpart of the module's default clock), -c tsc
 * is rdtsc (the module's clock=tsc). Elapsed time is CLOCK_MONOTONIC.
 *
 * Modes (each prints key=value lines, median of -k runs):
 *   ring_bench [-n RECORDS] [-k RUNS] [-c mono|tsc] SIZE...   writer cost
 *   ring_bench -f [-n RECORDS] [-k RUNS] [-c mono|tsc]          fail path
 *   ring_bench -C [-n RECORDS] SIZE           single thread, for callgrind
 *   ring_bench -F [-n RECORDS]                fail path, for callgrind
 *   ring_bench -K [-n CALLS]                  cost of the clock alone
 * -J (with any mode) writes as magnet_reserve() does with the per-job
 * fairness of kmod/fair.h: admit, reports, reserve, done, one job, the
 * rule on at its default threshold (so each record pays its checks).
 * -C/-F run write_records()/fail_records() so that
 * valgrind --tool=callgrind --toggle-collect=<that function> counts the
 * instructions of exactly the writer path (reserve + fill + commit).
 *
 * SIZE is the whole record (header included); the format's smallest record
 * is the 40-byte header alone.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <x86intrin.h>

#include "fair.h"
#include "ring_core.h"

#define RING_SIZE	(1UL << 20)
#define READ_SIZE	(256UL << 10)
#define EV		MAGNET_EVENT_FIRST_DYNAMIC
#define MAX_RUNS	31

static int use_tsc, use_fair;
unsigned int mg_fair_fill = MAGNET_FAIR_FILL_DEFAULT;
static struct mg_fair_cpu fair_cpu;

__u64 mg_ring_clock(void)
{
	struct timespec ts;

	if (use_tsc)
		return __rdtsc();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		fprintf(stderr, "ring_bench: cannot pin to CPU %d: %s\n", cpu, strerror(errno));
}

static unsigned char src[MAGNET_PAYLOAD_MAX];

static __always_inline struct magnet_record *reserve(struct mg_ring *rb, unsigned int size,
						      int fair)
{
	struct magnet_record *rec, *meta = NULL;
	struct mg_fair_job *j;
	unsigned int plan;

	if (!fair)
		return mg_ring_reserve(rb, size);
	j = mg_fair_admit(&fair_cpu, rb, 1234, 0);
	if (!j)
		return NULL;
	plan = mg_fair_reports(&fair_cpu, rb, j);
	rec = mg_ring_reserve_meta(rb, size, mg_fair_meta(plan), &meta);
	mg_fair_done(&fair_cpu, rb, j, plan, rec, meta, size + mg_fair_meta(plan));
	return rec;
}

/* What a probe handler does per hit: reserve, fill, commit. */
static __always_inline unsigned long write_n(struct mg_ring *rb, unsigned long n,
					     unsigned int size, int fair)
{
	unsigned int payload = size - MAGNET_RECORD_HEADER;
	unsigned long i, ok = 0;

	for (i = 0; i < n; i++) {
		struct magnet_record *rec = reserve(rb, size, fair);

		if (!rec)
			continue;
		rec->event_id = EV;
		rec->flags = 3 << MAGNET_REC_NARGS_SHIFT;
		rec->cpu = rb->cpu;
		rec->cgroup = 0;
		rec->abstract_id = i;
		rec->pid = 1234;
		rec->tgid = 1234;
		if (payload == 24) {
			__u64 *args = (__u64 *)rec->payload;

			args[0] = i;
			args[1] = (unsigned long)rb;
			args[2] = size;
		} else if (payload) {
			memcpy(rec->payload, src, payload);
		}
		mg_ring_commit(rb, rec);
		ok++;
	}
	return ok;
}

__attribute__((noinline))
unsigned long write_records(struct mg_ring *rb, unsigned long n, unsigned int size)
{
	return use_fair ? write_n(rb, n, size, 1) : write_n(rb, n, size, 0);
}

/* The same calls on a full ring: every reserve fails and counts a loss. */
__attribute__((noinline))
unsigned long fail_records(struct mg_ring *rb, unsigned long n, unsigned int size)
{
	return write_records(rb, n, size);
}

static unsigned long copy_mem(void *ctx, const void *from, unsigned long len)
{
	memcpy(ctx, from, len);
	return 0;
}

static struct mg_ring *ring_new(void)
{
	struct mg_ring *rb = calloc(1, sizeof(*rb));
	void *data = aligned_alloc(4096, RING_SIZE);

	if (!rb || !data) {
		fprintf(stderr, "ring_bench: out of memory\n");
		exit(1);
	}
	memset(data, 0, RING_SIZE);	/* fault the pages in before timing */
	if (mg_ring_init(rb, data, RING_SIZE, MG_RING_DISCARD, 0)) {
		fprintf(stderr, "ring_bench: mg_ring_init failed\n");
		exit(1);
	}
	return rb;
}

static void ring_free(struct mg_ring *rb)
{
	free(rb->data);
	free(rb);
}

/* Drain everything there is; returns the bytes read, adds up the records. */
static unsigned long drain(struct mg_ring *rb, void *buf, unsigned long *records)
{
	struct mg_reader rd = { .copy = copy_mem, .ctx = buf };
	unsigned long total = 0;
	long n;

	while ((n = mg_ring_consume(rb, &rd, READ_SIZE)) > 0) {
		total += n;
		*records += rd.records;
	}
	if (n < 0) {
		fprintf(stderr, "ring_bench: mg_ring_consume: %ld\n", n);
		exit(1);
	}
	return total;
}

struct reader_arg {
	struct mg_ring *rb;
	int cpu;
	volatile int stop;
	unsigned long records;
};

static void *reader(void *p)
{
	struct reader_arg *a = p;
	const struct timespec nap = { 0, 20000 };
	void *buf = aligned_alloc(4096, READ_SIZE);

	pin(a->cpu);
	prctl(PR_SET_TIMERSLACK, 1000UL);	/* wake after ~20 us, not 20 + 50 */
	while (!a->stop) {
		if (!drain(a->rb, buf, &a->records))
			nanosleep(&nap, NULL);
	}
	drain(a->rb, buf, &a->records);
	free(buf);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * One timed run with a concurrent reader: ns per record, loss fraction.
 * The writer goes in bursts of a quarter ring and, untimed, lets the reader
 * catch up in between: on this machine a reader on another core drains
 * slower than the writer fills (each record's cache lines cross cores), so
 * an unthrottled writer would mostly time the fail path of a full ring.
 */
static double run_writer(unsigned int size, unsigned long n, int wcpu, int rcpu, double *lost)
{
	struct mg_ring *rb = ring_new();
	struct reader_arg a = { .rb = rb, .cpu = rcpu };
	unsigned long burst = (RING_SIZE / 4) / size, done = 0, ok = 0;
	struct mg_ring_stats st;
	pthread_t th;
	double t = 0;

	pin(wcpu);
	if (pthread_create(&th, NULL, reader, &a)) {
		fprintf(stderr, "ring_bench: pthread_create failed\n");
		exit(1);
	}
	write_records(rb, burst, size);		/* warm up */
	while (done < n) {
		unsigned long k = n - done < burst ? n - done : burst;
		double t0;

		while (mg_ring_avail_bytes(rb))
			__builtin_ia32_pause();
		t0 = now_ns();
		ok += write_records(rb, k, size);
		t += now_ns() - t0;
		done += k;
	}
	a.stop = 1;
	pthread_join(th, NULL);
	mg_ring_stats(rb, &st);
	if (st.written != a.records || st.written + st.lost_full != n + burst) {
		fprintf(stderr, "ring_bench: wrote %lu records, read %lu, lost %lu\n",
			st.written, a.records, st.lost_full);
		exit(1);
	}
	*lost = (double)(n - ok) / n;
	ring_free(rb);
	return t / n;
}

/* One timed run on a full ring (no reader): ns per failed reserve. */
static double run_fail(unsigned long n, int wcpu)
{
	struct mg_ring *rb = ring_new();
	unsigned long ok;
	double t0, t1;

	pin(wcpu);
	while (write_records(rb, 1000, 64))
		;
	t0 = now_ns();
	ok = fail_records(rb, n, 64);
	t1 = now_ns();
	if (ok) {
		fprintf(stderr, "ring_bench: a reserve succeeded on a full ring\n");
		exit(1);
	}
	ring_free(rb);
	return (t1 - t0) / n;
}

static void usage(void)
{
	fprintf(stderr,
"usage: ring_bench [-n RECORDS] [-k RUNS] [-c mono|tsc] [-w CPU] [-r CPU] SIZE...\n"
"       ring_bench -f [-n RECORDS] [-k RUNS] [-c mono|tsc] [-w CPU]\n"
"       ring_bench -C [-n RECORDS] SIZE | -F [-n RECORDS] | -K [-n CALLS]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned long n = 20000000;
	int runs = 5, wcpu = 0, rcpu = 1, opt, i;
	char mode = 'w';

	mg_fair_cpu_init(&fair_cpu);
	while ((opt = getopt(argc, argv, "n:k:c:w:r:fCFKJ")) != -1) {
		switch (opt) {
		case 'n': n = strtoul(optarg, NULL, 0); break;
		case 'k': runs = atoi(optarg); break;
		case 'c':
			if (!strcmp(optarg, "tsc"))
				use_tsc = 1;
			else if (strcmp(optarg, "mono"))
				usage();
			break;
		case 'w': wcpu = atoi(optarg); break;
		case 'r': rcpu = atoi(optarg); break;
		case 'J': use_fair = 1; break;
		case 'f': case 'C': case 'F': case 'K': mode = opt; break;
		default: usage();
		}
	}
	if (!n || runs < 1 || runs > MAX_RUNS)
		usage();
	for (i = 0; i < (int)sizeof(src); i++)
		src[i] = i * 7 + 1;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		rcpu = -1;	/* one CPU: let the scheduler share it */

	switch (mode) {
	case 'w':
		if (optind == argc)
			usage();
		for (; optind < argc; optind++) {
			unsigned int size = atoi(argv[optind]);
			double ns[MAX_RUNS], lost[MAX_RUNS], med;

			if (size < MAGNET_RECORD_HEADER || size > MAGNET_RECORD_MAX || size % 8)
				usage();
			for (i = 0; i < runs; i++)
				ns[i] = run_writer(size, n, wcpu, rcpu, &lost[i]);
			med = median(ns, runs);	/* sorts: min and max after it */
			printf("size=%u ns=%.2f min=%.2f max=%.2f lost_pct=%.3f runs=%d records=%lu clock=%s\n",
			       size, med, ns[0], ns[runs - 1], 100 * median(lost, runs),
			       runs, n, use_tsc ? "tsc" : "mono");
			fflush(stdout);
		}
		break;
	case 'f': {
		double ns[MAX_RUNS], med;

		for (i = 0; i < runs; i++)
			ns[i] = run_fail(n, wcpu);
		med = median(ns, runs);
		printf("fail ns=%.2f min=%.2f max=%.2f runs=%d records=%lu clock=%s\n",
		       med, ns[0], ns[runs - 1], runs, n, use_tsc ? "tsc" : "mono");
		break;
	}
	case 'C': {
		struct mg_ring *rb = ring_new();
		void *buf = aligned_alloc(4096, READ_SIZE);
		unsigned int size;
		unsigned long done = 0, ok = 0, records = 0;

		if (optind + 1 != argc)
			usage();
		size = atoi(argv[optind]);
		/* Batches that fit the ring, drained (not collected) in between. */
		while (done < n) {
			ok += write_records(rb, 1000, size);
			done += 1000;
			drain(rb, buf, &records);
		}
		printf("records=%lu written=%lu\n", done, ok);
		break;
	}
	case 'F': {
		struct mg_ring *rb = ring_new();

		while (write_records(rb, 1000, 64))
			;
		printf("records=%lu written=%lu\n", n, fail_records(rb, n, 64));
		break;
	}
	case 'K': {
		double ns[MAX_RUNS], t0;
		unsigned long j;
		volatile __u64 sink;

		for (i = 0; i < runs; i++) {
			t0 = now_ns();
			for (j = 0; j < n; j++)
				sink = mg_ring_clock();
			ns[i] = (now_ns() - t0) / n;
		}
		(void)sink;
		printf("clock ns=%.2f clock=%s\n", median(ns, runs), use_tsc ? "tsc" : "mono");
		break;
	}
	}
	return 0;
}
