// SPDX-License-Identifier: GPL-2.0
/*
 * lib/cgmap.c against real directories: a temporary tree standing in for
 * the cgroup2 mount (ids are its directories' st_ino, as cgroupfs'), and
 * the host's cgroup2 mount when it is writable. Paths, the rate-limited
 * rescan with its negative window, removed cgroups that keep their path,
 * "cgroup:<id>" for one never seen, and inotify naming a directory made
 * and removed between two rescans, read only when a lookup misses (a
 * record's series once per chunk). The bounds: a million mkdir/rmdir of
 * 4 KiB paths keep entries, path bytes, watches and the heap bounded while
 * live cgroups still resolve exactly; live cgroups over the bounds are
 * dropped, least recently used first (a record's series uses its entry),
 * and looked up again by handle on cgroupfs, kept without handles.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "cgmap.h"
#include "testutil.h"

static char root[PATH_MAX];

static __u32 ino_of(const char *rel)
{
	char p[2 * PATH_MAX];
	struct stat st;

	snprintf(p, sizeof(p), "%s%s", root, rel);
	ck_assert_int_eq(stat(p, &st), 0);
	return (__u32)st.st_ino;
}

static void mk(const char *rel)
{
	char p[2 * PATH_MAX];

	snprintf(p, sizeof(p), "%s%s", root, rel);
	ck_assert_msg(!mkdir(p, 0755), "mkdir %s: %s", p, strerror(errno));
}

static void rm(const char *rel)
{
	char p[2 * PATH_MAX];

	snprintf(p, sizeof(p), "%s%s", root, rel);
	ck_assert_msg(!rmdir(p), "rmdir %s: %s", p, strerror(errno));
}

/*
 * On tmpfs when there is one: like cgroupfs' ids, its inode numbers are not
 * reused soon after a removal (ext4's are, at once).
 */
static void setup(void)
{
	struct statfs fs;

	snprintf(root, sizeof(root), "%s/mg-cgmap-XXXXXX",
		 !statfs("/dev/shm", &fs) && fs.f_type == TMPFS_MAGIC &&
		 !access("/dev/shm", W_OK) ? "/dev/shm" : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(root));
	mk("/a");
	mk("/a/b");
	mk("/c");
}

static void teardown(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(paths)
{
	struct mg_cgmap *m;
	struct mg_cgmap_stats st;
	char buf[MG_CGMAP_NAME_MIN], f[2 * PATH_MAX];
	FILE *file;
	__u32 fino;

	snprintf(f, sizeof(f), "%s/a/cgroup.procs", root);
	file = fopen(f, "w");
	ck_assert_ptr_nonnull(file);
	fclose(file);
	fino = ino_of("/a/cgroup.procs");

	ck_assert_int_eq(mg_cgmap_open(root, 0, &m), 0);
	ck_assert_str_eq(mg_cgmap_root(m), root);
	ck_assert_str_eq(mg_cgmap_path(m, ino_of(""), 1), "/");
	ck_assert_str_eq(mg_cgmap_path(m, ino_of("/a"), 1), "/a");
	ck_assert_str_eq(mg_cgmap_path(m, ino_of("/a/b"), 1), "/a/b");
	ck_assert_str_eq(mg_cgmap_path(m, ino_of("/c"), 1), "/c");
	mg_cgmap_stats(m, &st);
	ck_assert_uint_eq(st.paths, 4);
	ck_assert_uint_eq(st.rescans, 1);
	ck_assert_int_eq(mg_cgmap_fd(m), -1);
	/* Files are not cgroups. */
	ck_assert_ptr_null(mg_cgmap_path(m, fino, 1));
	/* One never seen: an exact job without a path. */
	ck_assert_str_eq(mg_cgmap_name(m, 4000000000U, 1, buf, sizeof(buf)),
			 "cgroup:4000000000");
	ck_assert_str_eq(mg_cgmap_name(m, ino_of("/a/b"), 1, buf, sizeof(buf)),
			 "/a/b");
	ck_assert(mg_cgmap_alive(m, ino_of("/a/b")));
	ck_assert(!mg_cgmap_alive(m, 4000000000U));
	mg_cgmap_free(m);

	/* A trailing slash on the root changes nothing. */
	snprintf(f, sizeof(f), "%s/", root);
	ck_assert_int_eq(mg_cgmap_open(f, 0, &m), 0);
	ck_assert_str_eq(mg_cgmap_root(m), root);
	ck_assert_str_eq(mg_cgmap_path(m, ino_of("/a/b"), 1), "/a/b");
	mg_cgmap_free(m);

	snprintf(f, sizeof(f), "%s/a/cgroup.procs", root);
	ck_assert_int_eq(mg_cgmap_open(f, 0, &m), -EINVAL);
	ck_assert_int_eq(mg_cgmap_open("/nonexistent/cg", 0, &m), -EINVAL);
}
END_TEST

/*
 * Slurm's layout: a task's cgroup counts in its step's series, slurmstepd's
 * and the step's in their own; a path parsed once, when it is learnt (at
 * the walk, and through inotify for a task made later); a user's own
 * subtree named like a job is no job.
 */
#define SCOPE "/system.slice/slurmstepd.scope"
#define STEP SCOPE "/job_42/step_0"

START_TEST(slurm_series)
{
	static const char *const dirs[] = {
		"/system.slice", SCOPE, SCOPE "/job_42", STEP, STEP "/user",
		STEP "/user/task_0", STEP "/slurm", "/u", "/u/job_42", "/u/job_42/step_0",
		"/u/job_42/step_0/user", "/u/job_42/step_0/user/task_0",
	};
	struct mg_cgmap_job j;
	struct mg_cgmap *m;
	char name[MG_SLURM_NAME_MAX];
	__u32 step;
	size_t i;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		mk(dirs[i]);
	ck_assert_int_eq(mg_cgmap_open(root, MG_CGMAP_INOTIFY, &m), 0);
	step = ino_of(STEP);
	ck_assert(mg_cgmap_job(m, ino_of(STEP "/user/task_0"), 1, &j));
	ck_assert_str_eq(j.path, STEP "/user/task_0");
	ck_assert_ptr_nonnull(j.slurm);
	ck_assert_uint_eq(j.slurm->part, MG_SLURM_TASK);
	ck_assert_str_eq(mg_slurm_name(j.slurm, name, sizeof(name)), "42.0");
	ck_assert_uint_eq(j.series, step);
	ck_assert_uint_eq(mg_cgmap_series(m, ino_of(STEP "/user/task_0")), step);
	ck_assert_uint_eq(mg_cgmap_series(m, ino_of(STEP "/user")), step);
	ck_assert(mg_cgmap_job(m, step, 1, &j));
	ck_assert_uint_eq(j.series, step);
	ck_assert_uint_eq(j.slurm->part, MG_SLURM_STEP);
	ck_assert(mg_cgmap_job(m, ino_of(STEP "/slurm"), 1, &j));
	ck_assert_uint_eq(j.series, ino_of(STEP "/slurm"));
	ck_assert_uint_eq(j.step, step);
	ck_assert_str_eq(mg_slurm_name(j.slurm, name, sizeof(name)), "42.0/slurmstepd");
	ck_assert(mg_cgmap_job(m, ino_of(STEP "/user/task_0"), 1, &j));
	ck_assert_uint_eq(j.step, step);
	ck_assert(mg_cgmap_job(m, ino_of(SCOPE "/job_42"), 1, &j));
	ck_assert_uint_eq(j.step, 0);
	/* Not Slurm's: themselves. */
	ck_assert(mg_cgmap_job(m, ino_of("/u/job_42/step_0/user/task_0"), 1, &j));
	ck_assert_ptr_null(j.slurm);
	ck_assert_uint_eq(j.series, ino_of("/u/job_42/step_0/user/task_0"));
	ck_assert_uint_eq(j.step, 0);
	ck_assert(mg_cgmap_job(m, ino_of(SCOPE), 1, &j));
	ck_assert_ptr_null(j.slurm);
	ck_assert_uint_eq(mg_cgmap_series(m, 4000000000U), 4000000000U);

	/* A task made later: learnt through inotify, in its step's series. */
	mk(STEP "/user/task_1");
	mg_cgmap_poll(m);
	ck_assert_uint_eq(mg_cgmap_series(m, ino_of(STEP "/user/task_1")), step);
	/* Removed, it keeps its series (its late records still count there). */
	i = ino_of(STEP "/user/task_1");
	rm(STEP "/user/task_1");
	mg_cgmap_poll(m);
	ck_assert(!mg_cgmap_alive(m, i));
	ck_assert_uint_eq(mg_cgmap_series(m, i), step);
	mg_cgmap_free(m);
}
END_TEST

/*
 * Inotify's events are read when a lookup misses, not before: a record's
 * series (mg_cgmap_series) reads them once after mg_cgmap_arm, a path's
 * lookup before it walks; a hit reads nothing.
 */
START_TEST(poll_on_miss)
{
	struct mg_cgmap_stats st, st0;
	struct mg_cgmap_job j;
	struct mg_cgmap *m;
	__u32 t0, t1, step;

	mk("/system.slice");
	mk(SCOPE);
	mk(SCOPE "/job_42");
	mk(STEP);
	mk(STEP "/user");
	ck_assert_int_eq(mg_cgmap_open(root, MG_CGMAP_INOTIFY, &m), 0);
	step = ino_of(STEP);
	mg_cgmap_stats(m, &st0);
	ck_assert_uint_eq(st0.polls, 0);
	mk(STEP "/user/task_0");
	t0 = ino_of(STEP "/user/task_0");
	/* Not armed: a miss is the cgroup itself, nothing read. */
	ck_assert_uint_eq(mg_cgmap_series(m, t0), t0);
	mg_cgmap_arm(m);
	/* A hit reads nothing, armed or not. */
	ck_assert_uint_eq(mg_cgmap_series(m, step), step);
	mg_cgmap_stats(m, &st);
	ck_assert_uint_eq(st.polls, 0);
	/* Armed, the first miss reads the events: the task is its step's. */
	ck_assert_uint_eq(mg_cgmap_series(m, t0), step);
	mk(STEP "/user/task_1");
	t1 = ino_of(STEP "/user/task_1");
	ck_assert_uint_eq(mg_cgmap_series(m, t1), t1);
	ck_assert_uint_eq(mg_cgmap_series(m, 4000000000U), 4000000000U);
	mg_cgmap_stats(m, &st);
	ck_assert_uint_eq(st.polls, 1);
	ck_assert_uint_eq(st.rescans, 1);
	/* A path's miss reads the events before it would walk. */
	ck_assert(mg_cgmap_job(m, t1, 100 * MG_CGMAP_RESCAN_NS, &j));
	ck_assert_uint_eq(j.series, step);
	mg_cgmap_stats(m, &st);
	ck_assert_uint_eq(st.polls, 2);
	ck_assert_uint_eq(st.rescans, 1);
	mg_cgmap_free(m);
}
END_TEST

START_TEST(rescan_rate)
{
	const __u64 t0 = 10 * MG_CGMAP_RESCAN_NS;
	struct mg_cgmap_stats st;
	struct mg_cgmap *m;
	__u32 d;

	ck_assert_int_eq(mg_cgmap_open(root, 0, &m), 0);
	mk("/d");
	d = ino_of("/d");
	/* The first miss walks the tree again (the last walk is old). */
	ck_assert_str_eq(mg_cgmap_path(m, d, t0), "/d");
	mg_cgmap_stats(m, &st);
	ck_assert_uint_eq(st.rescans, 2);

	/* Within the window a miss is a miss, however often asked. */
	mk("/a/b/e");
	ck_assert_ptr_null(mg_cgmap_path(m, ino_of("/a/b/e"), t0 + 1));
	ck_assert_ptr_null(mg_cgmap_path(m, ino_of("/a/b/e"),
					 t0 + MG_CGMAP_RESCAN_NS - 1));
	mg_cgmap_stats(m, &st);
	ck_assert_uint_eq(st.rescans, 2);
	ck_assert_str_eq(mg_cgmap_path(m, ino_of("/a/b/e"),
					t0 + MG_CGMAP_RESCAN_NS), "/a/b/e");
	mg_cgmap_stats(m, &st);
	ck_assert_uint_eq(st.rescans, 3);
	ck_assert_uint_eq(st.paths, 6);

	/* Removed: still named (its records may be read later), not alive. */
	rm("/d");
	ck_assert_str_eq(mg_cgmap_path(m, d, 100 * MG_CGMAP_RESCAN_NS), "/d");
	ck_assert(!mg_cgmap_alive(m, d));
	ck_assert(mg_cgmap_alive(m, ino_of("/a/b/e")));
	mg_cgmap_free(m);
}
END_TEST

/* A directory made and removed between two walks. */
static void made_and_removed(unsigned int flags, bool named)
{
	struct mg_cgmap_stats st;
	struct mg_cgmap *m;
	__u32 j, s;

	ck_assert_int_eq(mg_cgmap_open(root, flags, &m), 0);
	if (flags & MG_CGMAP_INOTIFY)
		ck_assert_int_ge(mg_cgmap_fd(m), 0);
	mk("/a/job");
	mk("/a/job/step");
	j = ino_of("/a/job");
	s = ino_of("/a/job/step");
	mg_cgmap_poll(m);
	rm("/a/job/step");
	rm("/a/job");
	if (named) {
		ck_assert_str_eq(mg_cgmap_path(m, j, 1), "/a/job");
		ck_assert_str_eq(mg_cgmap_path(m, s, 1), "/a/job/step");
		mg_cgmap_stats(m, &st);
		ck_assert_uint_ge(st.created, 1);
		ck_assert_uint_eq(st.rescans, 1);
		/* Removed directories' watches went with them. */
		mg_cgmap_poll(m);
		mg_cgmap_stats(m, &st);
		ck_assert_uint_eq(st.watches, 4);
	} else {
		/* Even a walk now cannot find it. */
		ck_assert_ptr_null(mg_cgmap_path(m, j, 100 * MG_CGMAP_RESCAN_NS));
	}
	mg_cgmap_free(m);
}

START_TEST(inotify_names_short_lived)
{
	made_and_removed(MG_CGMAP_INOTIFY, true);
}
END_TEST

START_TEST(without_inotify_missed)
{
	made_and_removed(0, false);
}
END_TEST


/* ---- the bounds ---------------------------------------------------------- */

#ifdef __SANITIZE_ADDRESS__
#define CHURN		100000		/* the sanitized tree: errors, not scale */
#else
#define CHURN		1000000
#endif
#define NAME_LEN	250
/* Paths this long at least: with the root and a leaf, about 4 KiB. */
#define DEEP_LEN	3600
#define LIVE		32

static size_t heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A NAME_LEN-byte name: tag, then c repeated. */
static void long_name(char *buf, const char *tag, char c)
{
	size_t n = strlen(tag);

	memcpy(buf, tag, n);
	memset(buf + n, c, NAME_LEN - n);
	buf[NAME_LEN] = '\0';
}

/* The i-th NAME_LEN-byte name below deep: "k<i>-kkk...". */
static void k_path(char *rel, size_t size, const char *deep, unsigned int i)
{
	char name[NAME_LEN + 1], tag[16];

	snprintf(tag, sizeof(tag), "k%u-", i);
	long_name(name, tag, 'k');
	snprintf(rel, size, "%s/%s", deep, name);
}

/* Directories of NAME_LEN-byte names below rel until the path has len bytes. */
static void chain(const char *rel, size_t len, char *out, size_t size)
{
	char name[NAME_LEN + 1];
	char c = 'a';

	snprintf(out, size, "%s", rel);
	while (strlen(out) < len) {
		size_t n = strlen(out);

		long_name(name, "", c++);
		ck_assert_uint_lt(n + 1 + NAME_LEN, size);
		snprintf(out + n, size - n, "/%s", name);
		mk(out);
	}
}

static int open_dir(const char *rel)
{
	char p[2 * PATH_MAX];
	int fd;

	snprintf(p, sizeof(p), "%s%s", root, rel);
	fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "open %s: %s", p, strerror(errno));
	return fd;
}

static void assert_bounded(const struct mg_cgmap *m)
{
	struct mg_cgmap_stats st;

	mg_cgmap_stats(m, &st);
	ck_assert_uint_le(st.paths, MG_CGMAP_MAX);
	ck_assert_uint_le(st.bytes, MG_CGMAP_MAX_BYTES);
	ck_assert_uint_le(st.gone, MG_CGMAP_GONE_MAX);
}

/* Live directories of 4 KiB paths under deep: their paths and ids. */
struct live {
	char path[LIVE][2 * PATH_MAX];
	__u32 id[LIVE];
};

static void make_live(struct live *l, const char *deep)
{
	char name[NAME_LEN + 1], tag[16];
	unsigned int i;

	for (i = 0; i < LIVE; i++) {
		snprintf(tag, sizeof(tag), "live%u-", i);
		long_name(name, tag, 'l');
		snprintf(l->path[i], sizeof(l->path[i]), "%s/%s", deep, name);
		mk(l->path[i]);
		l->id[i] = ino_of(l->path[i]);
	}
}

static void check_live(struct mg_cgmap *m, const struct live *l)
{
	unsigned int i;

	for (i = 0; i < LIVE; i++) {
		const char *p = mg_cgmap_path(m, l->id[i], 1);

		ck_assert_ptr_nonnull(p);
		ck_assert_str_eq(p, l->path[i]);
		ck_assert(mg_cgmap_alive(m, l->id[i]));
	}
}

/*
 * A user's mkdir/rmdir loop in a subtree of its own, with 4 KiB paths, the
 * map polled between each mkdir and its rmdir (it sees every cgroup): it
 * stays within its bounds all along, forgets removed cgroups beyond
 * MG_CGMAP_GONE_MAX, leaks no watch, and live cgroups still resolve.
 */
static void churn(unsigned int flags)
{
	struct mg_cgmap_stats st, st0;
	struct mg_cgmap *m;
	char deep[PATH_MAX], name[NAME_LEN + 1], tag[16];
	struct live *live = malloc(sizeof(*live));
	unsigned int i, n = CHURN;
	__u32 first = 0, last = 0;
	size_t heap0, heap, peak = 0;
	double t0;
	int dfd;

	ck_assert_ptr_nonnull(live);
	if (getenv("CGMAP_CHURN"))
		n = strtoul(getenv("CGMAP_CHURN"), NULL, 0);
	mk("/u");
	chain("/u", DEEP_LEN, deep, sizeof(deep));
	make_live(live, deep);
	dfd = open_dir(deep);
	ck_assert_int_eq(mg_cgmap_open(root, flags, &m), 0);
	mg_cgmap_stats(m, &st0);
	heap0 = heap_bytes();
	t0 = mono_s();
	for (i = 0; i < n; i++) {
		snprintf(tag, sizeof(tag), "c%u-", i % 7);
		long_name(name, tag, 'z');
		ck_assert_int_eq(mkdirat(dfd, name, 0755), 0);
		mg_cgmap_poll(m);
		if (i == 0 || i == n - 1) {
			struct stat sb;

			ck_assert_int_eq(fstatat(dfd, name, &sb, 0), 0);
			*(i ? &last : &first) = (__u32)sb.st_ino;
		}
		ck_assert_int_eq(unlinkat(dfd, name, AT_REMOVEDIR), 0);
		if (i % 4096 == 0) {
			mg_cgmap_poll(m);
			assert_bounded(m);
			heap = heap_bytes();
			if (heap > peak)
				peak = heap;
		}
	}
	mg_cgmap_poll(m);
	mg_cgmap_stats(m, &st);
	fprintf(stderr, "churn: %u mkdir/rmdir of %zu-byte paths in %.1f s: %u entries (%u removed), %zu path bytes, %u watches, %llu evicted, heap %+zd KiB (peak %+zd)\n",
		n, strlen(root) + strlen(deep) + 1 + NAME_LEN, mono_s() - t0,
		st.paths, st.gone, st.bytes, st.watches,
		(unsigned long long)st.evicted,
		((ssize_t)heap_bytes() - (ssize_t)heap0) / 1024,
		((ssize_t)peak - (ssize_t)heap0) / 1024);
	assert_bounded(m);
	ck_assert_uint_eq(st.created - st0.created, n);
	ck_assert_uint_eq(st.removed - st0.removed, n);
	/* Kept: the last ones removed, as many as the bounds allow. */
	ck_assert_uint_ge(st.gone, n < MG_CGMAP_GONE_MAX / 2 ? n : MG_CGMAP_GONE_MAX / 2);
	ck_assert_uint_eq(st.evicted, n - st.gone);
	ck_assert_uint_eq(st.evicted_live, 0);
	/* No watch left behind: the live tree's only. */
	ck_assert_uint_eq(st.watches, st0.watches);
	ck_assert_uint_eq(st.rescans, 1);
	/* Heap: the bounded entries and tables, never the churn's size. */
	if (peak)
		ck_assert_uint_lt(peak - heap0, 16U << 20);
	check_live(m, live);
	/* The last one removed is named still, the first forgotten. */
	ck_assert_ptr_nonnull(mg_cgmap_path(m, last, 1));
	if (n > MG_CGMAP_GONE_MAX)
		ck_assert_ptr_null(mg_cgmap_path(m, first, 1));
	close(dfd);
	mg_cgmap_free(m);
	free(live);
}

START_TEST(churn_bounded)
{
	churn(MG_CGMAP_INOTIFY);
}
END_TEST

/*
 * More live paths than MG_CGMAP_MAX_BYTES, without handles (not cgroupfs):
 * no live cgroup is dropped (a walk would be the only way back), each
 * resolves; removed ones still go.
 */
START_TEST(live_kept_without_handles)
{
	char deep[PATH_MAX], rel[2 * PATH_MAX];
	unsigned int i, n = MG_CGMAP_MAX_BYTES / (DEEP_LEN + NAME_LEN) + 64;
	struct mg_cgmap_stats st;
	struct mg_cgmap *m;
	__u32 *ids = calloc(n, sizeof(*ids));

	ck_assert_ptr_nonnull(ids);
	mk("/u");
	chain("/u", DEEP_LEN, deep, sizeof(deep));
	ck_assert_int_eq(mg_cgmap_open(root, MG_CGMAP_INOTIFY, &m), 0);
	for (i = 0; i < n; i++) {
		k_path(rel, sizeof(rel), deep, i);
		mk(rel);
		ids[i] = ino_of(rel);
		mg_cgmap_poll(m);
	}
	mg_cgmap_stats(m, &st);
	ck_assert(!st.handles);
	ck_assert_uint_gt(st.bytes, MG_CGMAP_MAX_BYTES);
	ck_assert_uint_eq(st.evicted_live, 0);
	for (i = 0; i < n; i++) {
		k_path(rel, sizeof(rel), deep, i);
		ck_assert_str_eq(mg_cgmap_path(m, ids[i], 1), rel);
	}
	/* Removed, they go (all but the GONE_MAX last) . */
	for (i = 0; i < n; i++) {
		k_path(rel, sizeof(rel), deep, i);
		rm(rel);
	}
	mg_cgmap_poll(m);
	mg_cgmap_stats(m, &st);
	ck_assert_uint_eq(st.gone, n < MG_CGMAP_GONE_MAX ? n : MG_CGMAP_GONE_MAX);
	ck_assert_uint_le(st.bytes, MG_CGMAP_MAX_BYTES);
	mg_cgmap_free(m);
	free(ids);
}
END_TEST

/* The host's cgroup2 mount, found in mountinfo, when it is writable. */
START_TEST(real_cgroup2)
{
	struct mg_cgmap *m;
	char rel[64], buf[MG_CGMAP_NAME_MIN];
	const char *r;
	__u32 id;

	ck_assert_int_eq(mg_cgmap_open(NULL, MG_CGMAP_INOTIFY, &m), 0);
	r = mg_cgmap_root(m);
	if (!r) {
		fprintf(stderr, "real_cgroup2: no cgroup2 mount, skipped\n");
		mg_cgmap_free(m);
		return;
	}
	snprintf(root, sizeof(root), "%s", r);
	ck_assert_str_eq(mg_cgmap_path(m, ino_of(""), 1), "/");
	snprintf(rel, sizeof(rel), "/mg-cgmap-test-%d", (int)getpid());
	{
		char p[2 * PATH_MAX];

		snprintf(p, sizeof(p), "%s%s", root, rel);
		if (mkdir(p, 0755)) {
			fprintf(stderr, "real_cgroup2: %s: %s, skipped\n", p,
				strerror(errno));
			mg_cgmap_free(m);
			return;
		}
	}
	id = ino_of(rel);
	/* cgroupfs reports the mkdir: named after the cgroup is gone. */
	mg_cgmap_poll(m);
	rm(rel);
	ck_assert_str_eq(mg_cgmap_name(m, id, 1, buf, sizeof(buf)), rel);
	ck_assert(!mg_cgmap_alive(m, id));
	mg_cgmap_free(m);
}
END_TEST

/*
 * The test's subtree of the real mount: named before the fork, removed
 * after it however the test ended (unchecked fixtures run in the runner).
 */
static char real_top[2 * PATH_MAX];

static int rmdir_one(const char *path, const struct stat *sb, int flag,
		     struct FTW *ftw)
{
	if (flag == FTW_DP)
		rmdir(path);
	return 0;
}

static void real_setup(void)
{
	struct mg_cgmap *m;

	real_top[0] = '\0';
	if (mg_cgmap_open(NULL, 0, &m))
		return;
	if (mg_cgmap_root(m))
		snprintf(real_top, sizeof(real_top), "%s/mg-cgmap-bounds-%d",
			 mg_cgmap_root(m), (int)getpid());
	mg_cgmap_free(m);
}

static void real_teardown(void)
{
	if (real_top[0])
		nftw(real_top, rmdir_one, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * On the real cgroupfs, with handles. A churn: cgroupfs tells only the
 * parent of an rmdir, and no watch stays. Then more live cgroups of 4 KiB
 * paths than MG_CGMAP_MAX_BYTES holds: the least recently used are
 * dropped (not one whose records' series are looked up), and each named
 * again is looked up by its handle: exact, the bounds kept.
 */
START_TEST(real_cgroup2_bounds)
{
	char top[PATH_MAX], deep[PATH_MAX], rel[2 * PATH_MAX];
	unsigned int i, n = MG_CGMAP_MAX_BYTES / (DEEP_LEN + NAME_LEN) + 64;
	struct mg_cgmap_stats st, st0;
	__u32 *ids = calloc(n, sizeof(*ids));
	struct mg_cgmap *m;
	const char *r;
	__u32 dino;
	int dfd;

	ck_assert_ptr_nonnull(ids);
	ck_assert_int_eq(mg_cgmap_open(NULL, MG_CGMAP_INOTIFY, &m), 0);
	r = mg_cgmap_root(m);
	mg_cgmap_stats(m, &st);
	if (!r || !st.handles) {
		fprintf(stderr, "real_cgroup2_bounds: %s, skipped\n",
			r ? "no file handles (CAP_DAC_READ_SEARCH?)" : "no cgroup2 mount");
		goto out;
	}
	snprintf(root, sizeof(root), "%s", r);
	ck_assert(!strncmp(real_top, root, strlen(root)));
	snprintf(top, sizeof(top), "%s", real_top + strlen(root));
	if (mkdir(real_top, 0755)) {
		fprintf(stderr, "real_cgroup2_bounds: %s: %s, skipped\n",
			real_top, strerror(errno));
		goto out;
	}
	chain(top, DEEP_LEN, deep, sizeof(deep));
	dino = ino_of(deep);
	/* A churn: each rmdir seen through the parent, its watch gone. */
	dfd = open_dir(deep);
	mg_cgmap_poll(m);
	mg_cgmap_stats(m, &st0);
	for (i = 0; i < 2000; i++) {
		ck_assert_int_eq(mkdirat(dfd, "churn", 0755), 0);
		mg_cgmap_poll(m);
		ck_assert_int_eq(unlinkat(dfd, "churn", AT_REMOVEDIR), 0);
	}
	close(dfd);
	mg_cgmap_poll(m);
	mg_cgmap_stats(m, &st);
	ck_assert_uint_eq(st.created - st0.created, 2000);
	ck_assert_uint_eq(st.removed - st0.removed, 2000);
	ck_assert_uint_eq(st.watches, st0.watches);
	for (i = 0; i < n; i++) {
		k_path(rel, sizeof(rel), deep, i);
		mk(rel);
		ids[i] = ino_of(rel);
		mg_cgmap_poll(m);
		assert_bounded(m);
		/*
		 * The first one's records keep coming (their series uses its
		 * entry); deep is named (its watch stays: the next is seen).
		 */
		mg_cgmap_series(m, ids[0]);
		ck_assert_str_eq(mg_cgmap_path(m, dino, 1), deep);
	}
	mg_cgmap_stats(m, &st0);
	ck_assert_uint_gt(st0.evicted_live, 0);
	/* Used, never dropped: named without a lookup by handle. */
	k_path(rel, sizeof(rel), deep, 0);
	ck_assert_str_eq(mg_cgmap_path(m, ids[0], 1), rel);
	mg_cgmap_stats(m, &st);
	ck_assert_uint_eq(st.resolved, st0.resolved);
	for (i = 0; i < n; i++) {
		k_path(rel, sizeof(rel), deep, i);
		ck_assert_str_eq(mg_cgmap_path(m, ids[i], 1), rel);
		ck_assert(mg_cgmap_alive(m, ids[i]));
		assert_bounded(m);
	}
	mg_cgmap_stats(m, &st);
	ck_assert_uint_gt(st.resolved, 0);
	ck_assert_uint_eq(st.rescans, 1);
	fprintf(stderr, "real_cgroup2_bounds: %u live cgroups of %zu-byte paths: %u entries, %zu path bytes, %llu live dropped, %llu looked up by handle\n",
		n, strlen(root) + strlen(rel), st.paths, st.bytes,
		(unsigned long long)st.evicted_live,
		(unsigned long long)st.resolved);
	assert_bounded(m);
out:
	mg_cgmap_free(m);
	free(ids);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cgmap");
	TCase *tc = tcase_create("tree");
	TCase *real = tcase_create("cgroup2");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, paths);
	tcase_add_test(tc, slurm_series);
	tcase_add_test(tc, poll_on_miss);
	tcase_add_test(tc, rescan_rate);
	tcase_add_test(tc, inotify_names_short_lived);
	tcase_add_test(tc, without_inotify_missed);
	tcase_add_test(tc, churn_bounded);
	tcase_add_test(tc, live_kept_without_handles);
	tcase_set_timeout(tc, 300);
	tcase_add_unchecked_fixture(real, real_setup, real_teardown);
	tcase_add_test(real, real_cgroup2);
	tcase_add_test(real, real_cgroup2_bounds);
	tcase_set_timeout(real, 120);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, real);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
