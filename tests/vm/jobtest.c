// SPDX-License-Identifier: GPL-2.0
/*
 * jobtest: exact attribution (t-18-jobs). N processes, spread over three
 * cgroups, each name themselves, make one probed call (some rename
 * themselves and make a second) and exit, all at once; only then are the
 * rings read. Every record must carry its process's cgroup in the header
 * and be named by the stream's TASK records (lib/tasks.h), with no /proc
 * left to ask: the processes are gone.
 *
 *   jobtest N      needs kprobe:__x64_sys_getppid loaded, cgroup2 at
 *                  /sys/fs/cgroup; exit 0 when every check held
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "record.h"
#include "tasks.h"

#define DIR_PATH	"/sys/kernel/debug/magnet"
#define CG_PATH		"/sys/fs/cgroup"
#define JOBS		3
#define MAX_CPUS	64
#define BUF_SIZE	(1 << 20)
#define RENAMER(i)	((i) % 7 == 0)	/* these rename and call again */

struct child {
	pid_t pid;
	unsigned int job;
	unsigned int seen;	/* records of it found */
	char name[2][16];	/* before and after the rename */
	__u64 ts[2];		/* when the record of each name was written */
};

static struct child *kids;
static unsigned int nkids;
static __u64 cg_id[JOBS];

__attribute__((noreturn, format(printf, 1, 2)))
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "jobtest: FAIL: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
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

static void make_jobs(void)
{
	char path[64];
	struct stat st;

	for (unsigned int j = 0; j < JOBS; j++) {
		snprintf(path, sizeof(path), CG_PATH "/mgjob%u", j);
		if (mkdir(path, 0755) && errno != EEXIST)
			die("mkdir %s: %s", path, strerror(errno));
		if (stat(path, &st))
			die("stat %s: %s", path, strerror(errno));
		cg_id[j] = st.st_ino;	/* the cgroup id (UAPI: JOBS) */
	}
}

static void child(struct child *k, int go)
{
	char path[64], c;
	int fd;

	snprintf(path, sizeof(path), CG_PATH "/mgjob%u/cgroup.procs", k->job);
	fd = open(path, O_WRONLY);
	if (fd < 0 || write(fd, "0\n", 2) != 2)
		_exit(10);
	close(fd);
	if (prctl(PR_SET_NAME, k->name[0]))
		_exit(11);
	if (read(go, &c, 1) != 0)	/* EOF: everyone goes at once */
		_exit(12);
	syscall(SYS_getppid);
	if (k->name[1][0]) {
		if (prctl(PR_SET_NAME, k->name[1]))
			_exit(13);
		syscall(SYS_getppid);
	}
	_exit(0);
}

static int by_pid(const void *a, const void *b)
{
	const struct child *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Check one record of the probe against the child that wrote it. */
static void check(const struct magnet_record *r, const struct mg_task *t)
{
	struct child key = { .pid = r->pid }, *k;
	unsigned int i;

	k = bsearch(&key, kids, nkids, sizeof(*kids), by_pid);
	if (!k)
		return;		/* not ours (the shell, a kernel thread) */
	if (r->tgid != (__u32)k->pid)
		die("pid %u: tgid %u", r->pid, r->tgid);
	if (r->cgroup != (__u32)cg_id[k->job])
		die("pid %u (job %u): record cgroup %u, want %u", r->pid, k->job, r->cgroup,
		    (__u32)cg_id[k->job]);
	if (mg_record_is_intr(r))
		die("pid %u: a syscall's record flagged as interrupt context", r->pid);
	if (!t)
		die("pid %u (job %u, record %u): no TASK record named it", r->pid, k->job,
		    k->seen + 1);
	if (t->cgroup != cg_id[k->job])
		die("pid %u: TASK record's cgroup %llu, want %llu", r->pid,
		    (unsigned long long)t->cgroup, (unsigned long long)cg_id[k->job]);
	/* The two calls may land on different CPUs, read in CPU order. */
	for (i = 0; i < 2 && strcmp(t->comm, k->name[i]); i++)
		;
	if (i == 2 || !k->name[i][0])
		die("pid %u: named \"%s\", want \"%s\"%s%s", r->pid, t->comm, k->name[0],
		    k->name[1][0] ? " or " : "", k->name[1]);
	if (k->ts[i])
		die("pid %u: two records named \"%s\", one call", r->pid, t->comm);
	k->ts[i] = r->timestamp;
	k->seen++;
}

int main(int argc, char **argv)
{
	unsigned long records = 0, tasks = 0, mine = 0;
	int fds[MAX_CPUS], ncpus, id, go[2];
	struct mg_tasks *named;
	unsigned char *buf;

	if (argc != 2 || (nkids = atoi(argv[1])) < 1)
		die("usage: jobtest N");
	setvbuf(stdout, NULL, _IOLBF, 0);
	id = probe_id("__x64_sys_getppid");
	buf = aligned_alloc(4096, BUF_SIZE);
	kids = calloc(nkids, sizeof(*kids));
	named = mg_tasks_new();
	if (!buf || !kids || !named)
		die("out of memory");
	make_jobs();
	ncpus = sysconf(_SC_NPROCESSORS_CONF);
	if (ncpus > MAX_CPUS)
		die("%d CPUs: more than %d", ncpus, MAX_CPUS);
	/* Open first: an open forgets every task the ring named before. */
	for (int c = 0; c < ncpus; c++) {
		char path[64];

		snprintf(path, sizeof(path), DIR_PATH "/cpu%d", c);
		fds[c] = open(path, O_RDONLY | O_NONBLOCK);
		if (fds[c] < 0)
			die("open %s: %s", path, strerror(errno));
	}
	if (pipe(go))
		die("pipe: %s", strerror(errno));
	for (unsigned int i = 0; i < nkids; i++) {
		struct child *k = &kids[i];

		k->job = i % JOBS;
		snprintf(k->name[0], sizeof(k->name[0]), "j%u-w%u", k->job, i % 100000);
		if (RENAMER(i))
			snprintf(k->name[1], sizeof(k->name[1]), "j%u-re%u", k->job, i % 100000);
		k->pid = fork();
		if (k->pid < 0)
			die("fork %u: %s", i, strerror(errno));
		if (!k->pid) {
			close(go[1]);
			child(k, go[0]);
		}
	}
	close(go[0]);
	close(go[1]);
	for (unsigned int i = 0; i < nkids; i++) {
		int st;

		if (waitpid(kids[i].pid, &st, 0) != kids[i].pid)
			die("waitpid: %s", strerror(errno));
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			die("child %u (pid %d) failed: status %#x", i, kids[i].pid, st);
	}
	qsort(kids, nkids, sizeof(*kids), by_pid);

	/* Every child is gone now: only the records can say who they were. */
	for (int c = 0; c < ncpus; c++) {
		for (;;) {
			const struct magnet_record *r;
			size_t off = 0;
			long n = read(fds[c], buf, BUF_SIZE);
			int ret;

			if (n < 0 && errno == EAGAIN)
				break;
			if (n <= 0)
				die("read cpu%d: %s", c, n ? strerror(errno) : "EOF");
			while ((ret = mg_record_next(buf, n, &off, &r)) == 1) {
				records++;
				if (mg_record_is_lost(r))
					die("cpu%d: %llu records lost: attribution unproven", c,
					    (unsigned long long)mg_lost_total(mg_record_lost(r)));
				if (mg_tasks_feed(named, r) < 0)
					die("out of memory");
				if (mg_record_is_task(r)) {
					tasks++;
					continue;
				}
				if (r->event_id == id) {
					mine++;
					check(r, mg_tasks_of(named, r));
				}
			}
			if (ret < 0)
				die("cpu%d offset %zu: %s", c, off, mg_record_strerror(ret));
		}
	}
	for (unsigned int i = 0; i < nkids; i++) {
		const struct child *k = &kids[i];

		if (k->seen != (k->name[1][0] ? 2U : 1U))
			die("pid %d (job %u): %u records, want %u", k->pid, k->job, k->seen,
			    k->name[1][0] ? 2 : 1);
		if (k->name[1][0] && k->ts[1] <= k->ts[0])
			die("pid %d: the record named \"%s\" is not the later one", k->pid,
			    k->name[1]);
	}
	for (unsigned int j = 0; j < JOBS; j++) {
		char path[64];

		snprintf(path, sizeof(path), CG_PATH "/mgjob%u", j);
		if (rmdir(path))
			die("rmdir %s: %s", path, strerror(errno));
	}
	printf("jobs: %u exited processes in %d cgroups, %lu getppid records (of %lu), "
	       "%lu TASK records: every record's cgroup and name exact\n",
	       nkids, JOBS, mine, records, tasks);
	mg_tasks_free(named);
	free(kids);
	free(buf);
	return 0;
}
