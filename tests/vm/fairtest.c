// SPDX-License-Identifier: GPL-2.0
/*
 * fairtest: per-job fairness (t-28-fair; UAPI FAIRNESS). Two jobs
 * (cgroups) on CPU 0: A calls getpid() as fast as it can, B 1000 times a
 * second; this process reads cpu0 from CPU 1, 4 KiB every 20 ms (200 KB/s,
 * five times B's 40 KB/s), slower than A's flood even on the debug kernel
 * under a slow TCG host (KASAN, lockdep: ~10,000 calls/s, 400 KB/s), so a
 * small ring (t-28 loads 128K) reaches the rule's threshold within a
 * second. Every count is checked against ground truth: the calls
 * each job made, the records of each in the stream, the JOB_LOST and LOST
 * records, magnet/jobs and magnet/stats.
 *
 *   fairtest on SECONDS    the rule on (fair= not 0): B loses nothing, the
 *                          ring is never full, A's losses are the rule's
 *                          and exact, in band and per job
 *   fairtest off SECONDS   fair=0: B loses too (what the rule is for), and
 *                          each job's losses are exact (the ring's)
 *
 * Needs kprobe:__x64_sys_getpid loaded, 2 CPUs, cgroup2 at /sys/fs/cgroup.
 * The jobs are /mgfairA and /mgfairB (on), /mgfairA0 and /mgfairB0 (off),
 * left for the caller to remove. Exit 0 when every check held.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "record.h"

#define DIR_PATH	"/sys/kernel/debug/magnet"
#define CG_PATH		"/sys/fs/cgroup"
#define READ_SIZE	4096
#define B_RATE		1000	/* calls per second */

struct job {
	const char *name;
	const char *cg;		/* its cgroup's directory */
	__u64 id;		/* cgroup v2 id */
	unsigned long calls;	/* ground truth: what it did */
	unsigned long records;	/* its records in the stream */
	unsigned long in_band;	/* JOB_LOST records naming it */
	/* magnet/jobs, summed over CPUs */
	unsigned long written, lost_fair, pending, lost_ring;
};

static struct job A = { .name = "A" }, B = { .name = "B" };
static int probe, fd;
static unsigned long lost_records, job_lost_all, other_job_lost;

__attribute__((noreturn, format(printf, 1, 2)))
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "fairtest: FAIL: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity(%d): %s", cpu, strerror(errno));
}

static int probe_id(const char *sym)
{
	char line[512], t[32], s[256];
	unsigned int id;
	FILE *f = fopen(DIR_PATH "/probes", "r");

	if (!f)
		die("open probes: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%u\t%31s\t%255s", &id, t, s) == 3 && !strcmp(s, sym)) {
			fclose(f);
			return id;
		}
	die("probe %s is not loaded", sym);
}

static unsigned int fair_param(void)
{
	FILE *f = fopen("/sys/module/magnet/parameters/fair", "r");
	unsigned int v;

	if (!f || fscanf(f, "%u", &v) != 1)
		die("read /sys/module/magnet/parameters/fair");
	fclose(f);
	return v;
}

/* Column @col (0: cpu) of CPU @cpu's line in magnet/stats. */
static unsigned long stat_of(int cpu, int col)
{
	char line[512];
	FILE *f = fopen(DIR_PATH "/stats", "r");
	unsigned long v[9];
	unsigned int c;

	if (!f)
		die("open stats: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%u\t%lu\t%lu\t%lu\t%lu\t%lu\t%lu\t%lu\t%lu", &c, &v[1], &v[2],
			   &v[3], &v[4], &v[5], &v[6], &v[7], &v[8]) == 9 && (int)c == cpu) {
			fclose(f);
			return v[col];
		}
	die("no line for cpu %d in stats (or no lost_fair column)", cpu);
}

/* magnet/jobs: @j's counts, and the pending losses of all jobs of CPU 0. */
static unsigned long read_jobs(struct job *j)
{
	unsigned long w, lf, p, lr, pending0 = 0;
	unsigned long long id;
	char line[512];
	FILE *f = fopen(DIR_PATH "/jobs", "r");
	unsigned int cpu;

	if (!f)
		die("open jobs: %s", strerror(errno));
	j->written = j->lost_fair = j->pending = j->lost_ring = 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%u\t%llu\t%lu\t%lu\t%lu\t%lu", &cpu, &id, &w, &lf, &p, &lr) != 6)
			continue;
		if (!cpu)
			pending0 += p;
		if (id != j->id)
			continue;
		j->written += w;
		j->lost_fair += lf;
		j->pending += p;
		j->lost_ring += lr;
	}
	fclose(f);
	return pending0;
}

static __u64 make_cgroup(const char *name)
{
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), CG_PATH "/%s", name);
	if (mkdir(path, 0755) && errno != EEXIST)
		die("mkdir %s: %s", path, strerror(errno));
	if (stat(path, &st))
		die("stat %s: %s", path, strerror(errno));
	return st.st_ino;	/* the cgroup id (UAPI: JOBS) */
}

static void join(const char *name)
{
	char path[128];
	int f;

	snprintf(path, sizeof(path), CG_PATH "/%s/cgroup.procs", name);
	f = open(path, O_WRONLY);
	if (f < 0 || write(f, "0\n", 2) != 2)
		_exit(10);
	close(f);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

enum { FLOOD, PACED, ONCE };

/* A child in cgroup @cg on CPU 0: the calls it made go back through @out. */
static pid_t spawn(const char *cg, int out, double secs, int how)
{
	pid_t pid = fork();
	unsigned long n = 0;
	struct timespec next;
	double end;

	if (pid)
		return pid;
	pin(0);
	join(cg);
	end = now() + secs;
	clock_gettime(CLOCK_MONOTONIC, &next);
	if (how == ONCE) {
		syscall(SYS_getpid);
		n = 1;
	}
	while (how != ONCE && now() < end) {
		if (how == PACED) {
			next.tv_nsec += 1000000000 / B_RATE;
			if (next.tv_nsec >= 1000000000) {
				next.tv_nsec -= 1000000000;
				next.tv_sec++;
			}
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
			syscall(SYS_getpid);
			n++;
		} else {
			for (int i = 0; i < 1000; i++)
				syscall(SYS_getpid);
			n += 1000;
		}
	}
	if (write(out, &n, sizeof(n)) != sizeof(n))
		_exit(11);
	_exit(0);
}

/* The calls of the job @pid, which waitpid() returned with @st (-1: wait). */
static unsigned long reap(pid_t pid, int st, int in, const char *what)
{
	unsigned long n;

	if (st == -1 && waitpid(pid, &st, 0) != pid)
		die("job %s: waitpid: %s", what, strerror(errno));
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		die("job %s failed (status %#x)", what, st);
	if (read(in, &n, sizeof(n)) != sizeof(n))
		die("job %s: no count", what);
	return n;
}

/* One read of cpu0; 0 when it was empty. */
static long read_some(void)
{
	static __u64 buf[READ_SIZE / 8];
	const struct magnet_record *r;
	size_t off = 0;
	long n = read(fd, buf, sizeof(buf));
	int ret;

	if (n < 0 && errno == EAGAIN)
		return 0;
	if (n <= 0)
		die("read cpu0: %s", n ? strerror(errno) : "EOF");
	while ((ret = mg_record_next(buf, n, &off, &r)) == 1) {
		if (r->cpu)
			die("cpu0's stream has a record of cpu %u", r->cpu);
		if (mg_record_is_lost(r)) {
			lost_records += mg_lost_total(mg_record_lost(r));
		} else if (mg_record_is_job_lost(r)) {
			if (r->cgroup != (__u32)r->abstract_id)
				die("JOB_LOST: cgroup %u, abstract id %llu", r->cgroup,
				    (unsigned long long)r->abstract_id);
			job_lost_all += mg_record_job_lost(r);
			if (r->abstract_id == A.id)
				A.in_band += mg_record_job_lost(r);
			else if (r->abstract_id == B.id)
				B.in_band += mg_record_job_lost(r);
			else
				other_job_lost += mg_record_job_lost(r);
		} else if (r->event_id == probe) {
			if (r->cgroup == (__u32)A.id)
				A.records++;
			else if (r->cgroup == (__u32)B.id)
				B.records++;
		}
	}
	if (ret < 0)
		die("cpu0 offset %zu: %s", off, mg_record_strerror(ret));
	return n;
}

static void drain(void)
{
	while (read_some())
		;
}

static void show(const char *path)
{
	char line[512];
	FILE *f = fopen(path, "r");

	while (f && fgets(line, sizeof(line), f))
		fprintf(stderr, "fairtest: %s: %s", path, line);
	if (f)
		fclose(f);
}

static void check_exact(struct job *j)
{
	read_jobs(j);
	if (j->records != j->written || j->calls != j->written + j->lost_fair + j->lost_ring ||
	    j->in_band + j->pending != j->lost_fair) {
		fprintf(stderr, "fairtest: %s is cgroup %llu\n", j->name, (unsigned long long)j->id);
		show(DIR_PATH "/jobs");
		show(DIR_PATH "/stats");
	}
	if (j->records != j->written)
		die("%s: %lu records in the stream, magnet/jobs says %lu written", j->name,
		    j->records, j->written);
	if (j->calls != j->written + j->lost_fair + j->lost_ring)
		die("%s: %lu calls != %lu written + %lu lost_fair + %lu lost_ring", j->name,
		    j->calls, j->written, j->lost_fair, j->lost_ring);
	if (j->in_band + j->pending != j->lost_fair)
		die("%s: %lu lost in band + %lu pending != %lu lost_fair", j->name, j->in_band,
		    j->pending, j->lost_fair);
}

int main(int argc, char **argv)
{
	unsigned long full0, fair0, pending0;
	int pa[2], pb[2], pc[2], on, st;
	double secs;
	pid_t a, b, c;

	if (argc != 3 || (strcmp(argv[1], "on") && strcmp(argv[1], "off")) ||
	    (secs = atof(argv[2])) <= 0)
		die("usage: fairtest on|off SECONDS");
	setvbuf(stdout, NULL, _IOLBF, 0);
	on = !strcmp(argv[1], "on");
	if (!!fair_param() != on)
		die("fair=%u, want %s", fair_param(), on ? "the rule on" : "0");
	probe = probe_id("__x64_sys_getpid");
	/* Other cgroups for each run: fresh ids, fresh slots. */
	A.cg = on ? "mgfairA" : "mgfairA0";
	B.cg = on ? "mgfairB" : "mgfairB0";
	A.id = make_cgroup(A.cg);
	B.id = make_cgroup(B.cg);
	pin(1);
	fd = open(DIR_PATH "/cpu0", O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		die("open cpu0: %s", strerror(errno));
	drain();
	full0 = stat_of(0, 3);
	fair0 = stat_of(0, 8);
	if (pipe(pa) || pipe(pb) || pipe(pc))
		die("pipe: %s", strerror(errno));

	/* B first: the flood starts among running jobs, as on a node. */
	b = spawn(B.cg, pb[1], secs + 1, PACED);
	usleep(300000);
	a = spawn(A.cg, pa[1], secs, FLOOD);
	/* The reader: 4 KiB every 20 ms at most, slower than A's flood. */
	while (waitpid(b, &st, WNOHANG) == 0) {
		read_some();
		usleep(20000);
	}
	B.calls = reap(b, st, pb[0], "B");
	A.calls = reap(a, -1, pa[0], "A");
	drain();
	/* One more record of A's on an empty ring reports what is pending. */
	c = spawn(A.cg, pc[1], 0, ONCE);
	A.calls += reap(c, -1, pc[0], "A's last call");
	drain();

	check_exact(&A);
	check_exact(&B);
	pending0 = read_jobs(&A);
	if (job_lost_all + pending0 != stat_of(0, 8) - fair0)
		die("cpu0: %lu in band + %lu pending != %lu lost_fair in stats", job_lost_all,
		    pending0, stat_of(0, 8) - fair0);
	if (other_job_lost)
		die("%lu losses of jobs other than A and B", other_job_lost);
	if (lost_records != stat_of(0, 3) - full0)
		die("LOST records report %lu, stats lost_full grew by %lu", lost_records,
		    stat_of(0, 3) - full0);
	printf("fair %s (fair=%u): A %lu calls, %lu records, lost %lu by the rule (%lu in band), %lu by the ring; B %lu calls, %lu records, lost %lu (%.2f%%)\n",
	       argv[1], fair_param(), A.calls, A.records, A.lost_fair, A.in_band, A.lost_ring,
	       B.calls, B.records, B.calls - B.records,
	       100.0 * (B.calls - B.records) / B.calls);
	if (on) {
		if (!A.lost_fair)
			die("the rule never held A back: the reader kept up, nothing proven");
		if (A.pending)
			die("A: %lu losses still pending after its last record", A.pending);
		if (B.records != B.calls)
			die("B lost %lu of %lu records under A's flood", B.calls - B.records,
			    B.calls);
		if (A.lost_ring || stat_of(0, 3) != full0)
			die("the ring filled up: %lu of A's records lost full",
			    stat_of(0, 3) - full0);
	} else {
		if (A.lost_fair || B.lost_fair || stat_of(0, 8) != fair0)
			die("fair=0, yet the rule dropped records");
		if (B.records == B.calls)
			die("B lost nothing without the rule: the flood did not fill the ring");
	}
	close(fd);
	return 0;	/* the cgroups stay, for magnet-ctl to name the jobs */
}
