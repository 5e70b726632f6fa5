// SPDX-License-Identifier: GPL-2.0
/*
 * lib/cgmap.c against real directories: a temporary tree standing in for
 * the cgroup2 mount (ids are its directories' st_ino, as cgroupfs'), and
 * the host's cgroup2 mount when it is writable. Paths, the rate-limited
 * rescan with its negative window, removed cgroups that keep their path,
 * "cgroup:<id>" for one never seen, and inotify naming a directory made
 * and removed between two rescans.
 */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

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

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/mg-cgmap-XXXXXX");
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

int main(void)
{
	Suite *s = suite_create("cgmap");
	TCase *tc = tcase_create("tree");
	TCase *real = tcase_create("cgroup2");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, paths);
	tcase_add_test(tc, rescan_rate);
	tcase_add_test(tc, inotify_names_short_lived);
	tcase_add_test(tc, without_inotify_missed);
	tcase_add_test(real, real_cgroup2);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, real);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
