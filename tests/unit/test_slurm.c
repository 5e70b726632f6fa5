// SPDX-License-Identifier: GPL-2.0
/*
 * lib/slurm.c: the layouts Slurm 22.05's cgroup plugins make (v2's
 * slurmstepd scope, with a node's name when several slurmd share a host;
 * v1's /slurm/uid_U tree), each directory of them, and what is not one:
 * paths that imitate a job in a user's delegated subtree, near misses of
 * every name, numbers Slurm never prints (signs, leading zeros, past its
 * ranges, past 2^64), empty and trailing directories, and random soup of
 * the layouts' own words, which must never read past the path.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "slurm.h"
#include "testutil.h"

#define V2	"/system.slice/slurmstepd.scope"

static struct mg_slurm parse_ok(const char *path)
{
	struct mg_slurm s;

	memset(&s, 0xa5, sizeof(s));
	ck_assert_msg(mg_slurm_parse(path, strlen(path), &s),
		      "'%s' not taken for Slurm's", path);
	return s;
}

static void parse_no(const char *path)
{
	struct mg_slurm s, before;

	memset(&s, 0xa5, sizeof(s));
	before = s;
	ck_assert_msg(!mg_slurm_parse(path, strlen(path), &s),
		      "'%s' taken for Slurm's", path);
	ck_assert_msg(!memcmp(&s, &before, sizeof(s)), "'%s' wrote its result", path);
}

/* The series' cgroup: the path's first series_len bytes. */
static void series_is(const char *path, const char *want)
{
	struct mg_slurm s = parse_ok(path);

	ck_assert_msg(s.series_len == strlen(want) && !memcmp(path, want, s.series_len),
		      "'%s': series '%.*s', not '%s'", path, (int)s.series_len,
		      path, want);
}

START_TEST(v2_layout)
{
	struct mg_slurm s;
	char b[MG_SLURM_NAME_MAX], st[24];

	s = parse_ok(V2 "/job_42/step_0/user/task_3");
	ck_assert_uint_eq(s.part, MG_SLURM_TASK);
	ck_assert_uint_eq(s.job, 42);
	ck_assert_uint_eq(s.step, 0);
	ck_assert_uint_eq(s.task, 3);
	ck_assert_uint_eq(s.het, MG_SLURM_NONE);
	ck_assert_uint_eq(s.uid, MG_SLURM_NONE);	/* v2 has no uid in the path */
	ck_assert_uint_eq(s.node_len, 0);
	ck_assert_str_eq(mg_slurm_name(&s, b, sizeof(b)), "42.0");
	ck_assert_str_eq(mg_slurm_step(&s, st, sizeof(st)), "0");

	s = parse_ok(V2 "/job_42/step_batch/user/task_0");
	ck_assert_uint_eq(s.step, MG_SLURM_BATCH);
	ck_assert_str_eq(mg_slurm_name(&s, b, sizeof(b)), "42.batch");
	s = parse_ok(V2 "/job_7/step_extern/user/task_special");
	ck_assert_uint_eq(s.step, MG_SLURM_EXTERN);
	ck_assert_uint_eq(s.task, MG_SLURM_TASK_SPECIAL);
	ck_assert_str_eq(mg_slurm_name(&s, b, sizeof(b)), "7.extern");
	s = parse_ok(V2 "/job_7/step_interactive/user/task_0");
	ck_assert_str_eq(mg_slurm_step(&s, st, sizeof(st)), "interactive");
	s = parse_ok(V2 "/job_9/step_2+1/user/task_0");
	ck_assert_uint_eq(s.step, 2);
	ck_assert_uint_eq(s.het, 1);
	ck_assert_str_eq(mg_slurm_name(&s, b, sizeof(b)), "9.2+1");

	/* Each directory of the layout. */
	s = parse_ok(V2 "/job_42");
	ck_assert_uint_eq(s.part, MG_SLURM_JOB);
	ck_assert_uint_eq(s.step, MG_SLURM_NONE);
	ck_assert_str_eq(mg_slurm_name(&s, b, sizeof(b)), "42");
	ck_assert_str_eq(mg_slurm_step(&s, st, sizeof(st)), "");
	s = parse_ok(V2 "/job_42/step_0");
	ck_assert_uint_eq(s.part, MG_SLURM_STEP);
	s = parse_ok(V2 "/job_42/step_0/user");
	ck_assert_uint_eq(s.part, MG_SLURM_STEP);
	ck_assert_uint_eq(s.task, MG_SLURM_NONE);
	s = parse_ok(V2 "/job_42/step_0/slurm");
	ck_assert_uint_eq(s.part, MG_SLURM_STEPD);
	ck_assert_str_eq(mg_slurm_name(&s, b, sizeof(b)), "42.0/slurmstepd");

	/* Which series each counts in: the step's, for its tasks. */
	series_is(V2 "/job_42/step_0/user/task_3", V2 "/job_42/step_0");
	series_is(V2 "/job_42/step_0/user/task_special", V2 "/job_42/step_0");
	series_is(V2 "/job_42/step_0/user", V2 "/job_42/step_0");
	series_is(V2 "/job_42/step_0", V2 "/job_42/step_0");
	series_is(V2 "/job_42/step_0/slurm", V2 "/job_42/step_0/slurm");
	series_is(V2 "/job_42", V2 "/job_42");
	/* And their step's directory. */
	s = parse_ok(V2 "/job_42/step_0/slurm");
	ck_assert_uint_eq(s.step_len, strlen(V2 "/job_42/step_0"));
	s = parse_ok(V2 "/job_42/step_0/user/task_3/x");
	ck_assert_uint_eq(s.step_len, strlen(V2 "/job_42/step_0"));
	s = parse_ok(V2 "/job_42");
	ck_assert_uint_eq(s.step_len, 0);

	/* Several slurmd on one host: the node's name in the scope. */
	s = parse_ok("/system.slice/node_1.x-y_slurmstepd.scope/job_5/step_0/user/task_1");
	ck_assert_uint_eq(s.node_len, strlen("node_1.x-y"));
	ck_assert_uint_eq(s.node_off, strlen("/system.slice/"));
	ck_assert_uint_eq(s.job, 5);

	/*
	 * Slurm's extremes: job ids up to 2^32 - 1, steps to 0xfffffff0,
	 * tasks to 0xfffffffd (above: task_special's and no task's).
	 */
	s = parse_ok(V2 "/job_4294967295/step_4294967280+4294967293/user/task_4294967293");
	ck_assert_uint_eq(s.job, 4294967295U);
	ck_assert_uint_eq(s.step, MG_SLURM_STEP_MAX);
	ck_assert_uint_eq(s.het, 4294967293U);
	ck_assert_uint_eq(s.task, MG_SLURM_TASK_MAX);
	ck_assert_str_eq(mg_slurm_name(&s, b, sizeof(b)), "4294967295.4294967280+4294967293");
	s = parse_ok(V2 "/job_42/step_0/user/task_special");
	ck_assert_uint_eq(s.task, MG_SLURM_TASK_SPECIAL);
	s = parse_ok(V2 "/job_4294967295/step_interactive+4294967293/slurm");
	ck_assert_uint_lt(strlen(mg_slurm_name(&s, b, sizeof(b))), MG_SLURM_NAME_MAX);
}
END_TEST

/* A task's directory is the job's user's: what the user makes in it is the task's. */
START_TEST(below_a_task)
{
	struct mg_slurm s;
	const char *imitation = V2 "/job_42/step_0/user/task_0/job_99/step_1/user/task_5";

	s = parse_ok(V2 "/job_42/step_0/user/task_0/mine");
	ck_assert_uint_eq(s.part, MG_SLURM_TASK);
	ck_assert_uint_eq(s.task, 0);
	s = parse_ok(imitation);
	ck_assert_uint_eq(s.job, 42);
	ck_assert_uint_eq(s.step, 0);
	ck_assert_uint_eq(s.task, 0);
	series_is(imitation, V2 "/job_42/step_0");
	s = parse_ok(V2 "/job_42/step_0/user/task_0/system.slice/slurmstepd.scope/job_1");
	ck_assert_uint_eq(s.job, 42);
}
END_TEST

START_TEST(v1_layout)
{
	struct mg_slurm s;
	char b[MG_SLURM_NAME_MAX];

	s = parse_ok("/slurm/uid_1000/job_42/step_0/task_3");
	ck_assert_uint_eq(s.part, MG_SLURM_TASK);
	ck_assert_uint_eq(s.uid, 1000);
	ck_assert_uint_eq(s.job, 42);
	ck_assert_uint_eq(s.step, 0);
	ck_assert_uint_eq(s.task, 3);
	ck_assert_uint_eq(s.node_len, 0);
	series_is("/slurm/uid_1000/job_42/step_0/task_3", "/slurm/uid_1000/job_42/step_0");
	s = parse_ok("/slurm/uid_0/job_42/step_batch");
	ck_assert_uint_eq(s.part, MG_SLURM_STEP);
	ck_assert_uint_eq(s.uid, 0);
	ck_assert_str_eq(mg_slurm_name(&s, b, sizeof(b)), "42.batch");
	s = parse_ok("/slurm/uid_1000/job_42");
	ck_assert_uint_eq(s.part, MG_SLURM_JOB);
	s = parse_ok("/slurm_n3/uid_1000/job_42/step_extern/task_0");
	ck_assert_uint_eq(s.node_off, 7);
	ck_assert_uint_eq(s.node_len, 2);
	/* v1's step_S is the user's: below it, the step's, a task's below a task. */
	s = parse_ok("/slurm/uid_1000/job_42/step_0/anything/job_7/step_1/task_2");
	ck_assert_uint_eq(s.part, MG_SLURM_STEP);
	ck_assert_uint_eq(s.job, 42);
	ck_assert_uint_eq(s.task, MG_SLURM_NONE);
	series_is("/slurm/uid_1000/job_42/step_0/anything/job_7", "/slurm/uid_1000/job_42/step_0");
	s = parse_ok("/slurm/uid_1000/job_42/step_0/task_1/x");
	ck_assert_uint_eq(s.part, MG_SLURM_TASK);
	ck_assert_uint_eq(s.task, 1);
	/* No task's id: the step's, as any other directory below it. */
	s = parse_ok("/slurm/uid_1000/job_42/step_0/task_4294967294");
	ck_assert_uint_eq(s.part, MG_SLURM_STEP);
	ck_assert_uint_eq(s.task, MG_SLURM_NONE);
}
END_TEST

START_TEST(not_slurm)
{
	static const char *const no[] = {
		/* Not rooted where slurmd puts them: a user's own subtree. */
		"/user.slice/user-1000.slice/user@1000.service/slurmstepd.scope/job_42/step_0/user/task_0",
		"/user.slice/user-1000.slice/user@1000.service/app.slice/system.slice/slurmstepd.scope/job_1",
		"/system.slice/foo.service/slurmstepd.scope/job_42/step_0/user/task_0",
		"/system.slice/foo.service/system.slice/slurmstepd.scope/job_42",
		"/user.slice/slurm/uid_1000/job_42/step_0/task_0",
		"/a/slurm/uid_1000/job_42",
		"/job_42/step_0/user/task_0",
		"/slurmstepd.scope/job_42",
		/* Slurm's own, but no job. */
		"/", "", "/system.slice", V2, V2 "/system", V2 "/slurmd", "/slurm",
		"/slurm/uid_1000", "/system.slice/slurmd.service",
		/* Near misses of each name. */
		"/system.slice/slurmstepd.scope2/job_42", "/system.slice/Slurmstepd.scope/job_42",
		"/System.slice/slurmstepd.scope/job_42", "/system.slice/slurmstepd/job_42",
		"/system.slice/_slurmstepd.scope/job_42", "/system.slice/a b_slurmstepd.scope/job_42",
		"/system.slice/a/b_slurmstepd.scope/job_42",
		"/system.slice/0123456789012345678901234567890123456789012345678901234567890123_slurmstepd.scope/job_1",
		V2 "/job", V2 "/job_", V2 "/jobs_42", V2 "/Job_42", V2 "/job-42", V2 "/job_42x",
		V2 "/job_x42", V2 "/job_ 42", V2 "/job_+42", V2 "/job_-42", V2 "/job_042",
		V2 "/job_0", V2 "/job_4294967296", V2 "/job_99999999999999999999999999",
		V2 "/job_18446744073709551617", V2 "/job_42 ",
		V2 "/job_42/step", V2 "/job_42/step_", V2 "/job_42/step_00", V2 "/job_42/step_-1",
		V2 "/job_42/step_4294967281", V2 "/job_42/step_4294967295",
		V2 "/job_42/step_Batch", V2 "/job_42/step_batch2", V2 "/job_42/step_TDB",
		V2 "/job_42/step_0+", V2 "/job_42/step_+1", V2 "/job_42/step_0+01",
		V2 "/job_42/step_0+1+2", V2 "/job_42/step_0+4294967294",
		V2 "/job_42/steps_0", V2 "/job_42/other",
		V2 "/job_42/step_0/users", V2 "/job_42/step_0/other", V2 "/job_42/step_0/task_0",
		V2 "/job_42/step_0/slurm/x", V2 "/job_42/step_0/user/x",
		V2 "/job_42/step_0/user/task_", V2 "/job_42/step_0/user/task_01",
		V2 "/job_42/step_0/user/task_4294967296", V2 "/job_42/step_0/user/task_specials",
		/* Task ids that would read as task_special's, or as none. */
		V2 "/job_42/step_0/user/task_4294967294", V2 "/job_42/step_0/user/task_4294967295",
		V2 "/job_42/step_0/user/tasks_0",
		"/slurm/uid_/job_42", "/slurm/uid_01/job_42", "/slurm/uid_4294967296/job_42",
		"/slurm/uid_1000/job_0", "/slurm/uid_1000/other", "/slurm_/uid_1000/job_42",
		"/slurm_a%b/uid_1000/job_42", "/slurmx/uid_1000/job_42",
		"/slurm/uid_1000/job_42/step_x",
		/* Empty directories and trailing slashes: never how a path is written. */
		V2 "/job_42/", V2 "//job_42", V2 "/job_42//step_0", V2 "/job_42/step_0/user/task_0/",
		V2 "/job_42/step_0/user/task_0//x", "//system.slice/slurmstepd.scope/job_42",
		"system.slice/slurmstepd.scope/job_42",
	};
	size_t i;

	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		parse_no(no[i]);
}
END_TEST

/* Exactly len bytes: a path is parsed within them, never past. */
START_TEST(within_len)
{
	const char *full = V2 "/job_42/step_0/user/task_3";
	char *exact;
	struct mg_slurm s;
	size_t len, n;

	for (len = 0; len <= strlen(full); len++) {
		exact = malloc(len ? len : 1);
		ck_assert_ptr_nonnull(exact);
		memcpy(exact, full, len);
		n = mg_slurm_parse(exact, len, &s);
		/* Whole directories only: the job, step, user and task prefixes. */
		if (n)
			ck_assert_msg(len == strlen(V2 "/job_42") || len == strlen(V2 "/job_4") ||
				      len == strlen(V2 "/job_42/step_0") ||
				      len == strlen(V2 "/job_42/step_0/user") ||
				      len == strlen(full), "prefix of %zu bytes taken", len);
		free(exact);
	}
}
END_TEST

/* The layouts' own words, shuffled: no crash, no read past the end, names bounded. */
START_TEST(soup)
{
	static const char *const toks[] = {
		"/", "/system.slice", "/slurmstepd.scope", "_slurmstepd.scope", "/job_",
		"/step_", "/user", "/task_", "/slurm", "/uid_", "special", "batch",
		"extern", "interactive", "+", "0", "1", "42", "4294967295", "99999999999",
		"n1", "_", "/task_special",
	};
	char buf[160], name[MG_SLURM_NAME_MAX], st[24];
	unsigned long i, taken = 0;
	struct mg_slurm s;

	tu_seed(23);
	for (i = 0; i < 200000; i++) {
		/* Half of them from a real job's directory on. */
		size_t pre = i % 2 ? strlen(V2 "/job_42") : 0, len;
		char *exact;

		memcpy(buf, V2 "/job_42", pre);
		len = pre + tu_token_soup(buf + pre, 1 + tu_rand() % (sizeof(buf) - pre),
					  toks, sizeof(toks) / sizeof(toks[0]), 40);
		exact = malloc(len ? len : 1);

		tu_assert(exact);
		memcpy(exact, buf, len);
		if (mg_slurm_parse(exact, len, &s)) {
			taken++;
			tu_assert(s.series_len <= len);
			tu_assert(s.step_len <= s.series_len);
			tu_assert(!s.node_len || s.node_off + s.node_len <= len);
			tu_assert(s.job);
			tu_assert(strlen(mg_slurm_name(&s, name, sizeof(name))) < sizeof(name) - 1);
			tu_assert(strlen(mg_slurm_step(&s, st, sizeof(st))) < sizeof(st) - 1);
		}
		free(exact);
	}
	ck_assert_uint_gt(taken, 1000);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("slurm");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, v2_layout);
	tcase_add_test(tc, below_a_task);
	tcase_add_test(tc, v1_layout);
	tcase_add_test(tc, not_slurm);
	tcase_add_test(tc, within_len);
	tcase_add_test(tc, soup);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
