// SPDX-License-Identifier: GPL-2.0
/*
 * monitors/ganglia/totals.c, the Ganglia module's client of magnetd:
 * TOTALS replies parsed (counters, %XX names, sock flags, lines of kinds
 * added later), malformed and cut replies refused with a reason, rates
 * NaN across a restart or without an earlier sample, metric words, and
 * fetches that fail cleanly (refused, a server that never answers).
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "testutil.h"
#include "totals.h"

static const char reply[] =
	"OK 5 totals node=n1 ts=1700000010000000000 uptime=10 module=up cpus=2 records=1300 bytes=52000 kernel_lost=4 daemon_dropped=1 probes=2 jobs=2\n"
	"probe 16 kprobe __x64_sys_getppid events=1000 sock_bytes=0 sock=0 loaded=1\n"
	"probe 17 kprobe tcp_sendmsg events=3 sock_bytes=4096 sock=1 loaded=1\n"
	"job 100 /a%20b events=1000 sock_bytes=4096 exported=1\n"
	"future 1 2 3\n"
	"job 0 other events=300 sock_bytes=0 exported=1\n";

START_TEST(parse)
{
	struct mgg_snapshot s;
	char why[128];

	ck_assert_int_eq(mgg_parse(reply, strlen(reply), &s, why), 0);
	ck_assert(fabs(s.ts - 1700000010.0) < 1e-6);
	ck_assert(s.uptime == 10 && s.module_up);
	ck_assert(s.records == 1300 && s.bytes == 52000);
	ck_assert(s.kernel_lost == 4 && s.daemon_dropped == 1 && s.probes == 2);
	ck_assert_uint_eq(s.nprobes, 2);
	ck_assert_str_eq(s.probes_v[1].name, "tcp_sendmsg");
	ck_assert(s.probes_v[1].sock && s.probes_v[1].sock_bytes == 4096);
	ck_assert(!s.probes_v[0].sock && s.probes_v[0].events == 1000);
	ck_assert_uint_eq(s.njobs, 2);
	ck_assert_str_eq(s.jobs_v[0].name, "/a b");
	ck_assert_ptr_nonnull(mgg_find(s.jobs_v, s.njobs, "other"));
	ck_assert_ptr_null(mgg_find(s.jobs_v, s.njobs, "/a"));
	mgg_free(&s);
}
END_TEST

START_TEST(parse_errors)
{
	static const char *const bad[] = {
		"ERR unknown command 'TOTALS'\n",
		"OK 0 probes\n",
		"OK 1 totals node=n1 ts=1 uptime=1 module=up records=1 bytes=1 kernel_lost=0 daemon_dropped=0 probes=0 jobs=0\n",
		"OK 1 totals node=n1 ts=1 uptime=1 module=up records=1 bytes=1 kernel_lost=0 daemon_dropped=0 probes=0 jobs=0\nprobe 16 kprobe x events=1\n",
		"OK 0 totals node=n1 ts=1 uptime=1 module=up records=x bytes=1 kernel_lost=0 daemon_dropped=0 probes=0 jobs=0\n",
		"",
	};
	struct mgg_snapshot s;
	char why[128];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		ck_assert_msg(mgg_parse(bad[i], strlen(bad[i]), &s, why) == -EINVAL,
			      "accepted: %s", bad[i]);
		ck_assert_msg(why[0], "no reason for: %s", bad[i]);
	}
}
END_TEST

START_TEST(rates)
{
	struct mgg_snapshot a = { .ts = 100, .uptime = 50 }, b = { .ts = 110, .uptime = 60 },
		restarted = { .ts = 120, .uptime = 5 };

	ck_assert(fabs(mgg_rate(&a, &b, 1000, 3000) - 200) < 1e-9);
	ck_assert(isnan(mgg_rate(NULL, &b, 0, 3000)));
	ck_assert(isnan(mgg_rate(&b, &restarted, 3000, 10)));
	ck_assert(isnan(mgg_rate(&a, &b, 3000, 1000)));	/* went down */
	ck_assert(isnan(mgg_rate(&a, &a, 1, 2)));		/* no time */
}
END_TEST

START_TEST(metric_words)
{
	char w[32];

	mgg_metric_word(w, sizeof(w), "tcp_sendmsg");
	ck_assert_str_eq(w, "tcp_sendmsg");
	mgg_metric_word(w, sizeof(w), "/slurm/job 7");
	ck_assert_str_eq(w, "slurm_job_7");
	mgg_metric_word(w, sizeof(w), "/");
	ck_assert_str_eq(w, "root");
	mgg_metric_word(w, 8, "/averyveryverylongname");
	ck_assert_str_eq(w, "averyve");
}
END_TEST

START_TEST(fetch_failures)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sin);
	struct mgg_snapshot s;
	char why[256], port[16];
	int fd;

	/* Nobody listens: refused, said so. */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	snprintf(port, sizeof(port), "%u", ntohs(sin.sin_port));
	ck_assert_int_eq(mgg_fetch("127.0.0.1", port, 1000, &s, why, sizeof(why)),
			 -ECONNREFUSED);
	ck_assert_msg(strstr(why, "connect to 127.0.0.1:") && strstr(why, "refused"),
		      "%s", why);
	/* It listens and never answers: the timeout, said so. */
	ck_assert_int_eq(listen(fd, 1), 0);
	ck_assert_int_eq(mgg_fetch("127.0.0.1", port, 200, &s, why, sizeof(why)),
			 -ETIMEDOUT);
	ck_assert_msg(strstr(why, "no answer in time"), "%s", why);
	close(fd);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ganglia");
	TCase *tc = tcase_create("ganglia");

	tcase_add_test(tc, parse);
	tcase_add_test(tc, parse_errors);
	tcase_add_test(tc, rates);
	tcase_add_test(tc, metric_words);
	tcase_add_test(tc, fetch_failures);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
