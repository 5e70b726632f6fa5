// SPDX-License-Identifier: GPL-2.0
/*
 * monitors/ganglia/totals.c, the Ganglia module's client of magnetd:
 * TOTALS replies parsed (counters, %XX names, sock flags, lines of kinds
 * added later) from exactly the bytes received (no NUL after them: under
 * ASan a read past them fails), malformed, cut, oversized replies and
 * numbers that are no counters (NaN, inf, 1e300, past 2^64) refused with
 * a reason; replies assembled as they arrive; rates NaN across a restart
 * or without an earlier sample; metric words; hostile job names made safe
 * for gmond's and gmetad's XML; fetches bounded in time in all (refused,
 * silent, trickling, oversized, cut servers) and none repeated while
 * magnetd is away.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "testutil.h"
#include "totals.h"

/* gmond's limit for a string metric (gm_value.h's MAX_G_STRING_SIZE). */
#define GMOND_STRING_MAX	64

static const char reply[] =
	"OK 5 totals node=n1 ts=1700000010000000000 uptime=10 module=up cpus=2 records=1300 bytes=52000 kernel_lost=4 daemon_dropped=1 probes=2 jobs=2\n"
	"probe 16 kprobe __x64_sys_getppid events=1000 sock_bytes=0 sock=0 loaded=1\n"
	"probe 17 kprobe tcp_sendmsg events=3 sock_bytes=4096 sock=1 loaded=1\n"
	"job 100 /a%20b events=1000 sock_bytes=4096 exported=1\n"
	"future 1 2 3\n"
	"job 0 other events=300 sock_bytes=0 exported=1\n";

/* len bytes of s in a buffer of exactly that size: nothing after them. */
static char *exact(const char *s, size_t len)
{
	char *b = malloc(len ? len : 1);

	ck_assert_ptr_nonnull(b);
	memcpy(b, s, len);
	return b;
}

static int parse_exact(const char *s, size_t len, struct mgg_snapshot *snap,
		       char *why)
{
	char *b = exact(s, len);
	int ret = mgg_parse(b, len, snap, why);

	free(b);
	return ret;
}

START_TEST(parse)
{
	struct mgg_snapshot s;
	char why[128];

	ck_assert_int_eq(parse_exact(reply, strlen(reply), &s, why), 0);
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

/*
 * A job's traffic (its net lines, after its job line): the protocols'
 * bytes summed per direction; peer lines left alone; a net line of
 * another job than the line before, or without its counters, refused.
 */
START_TEST(parse_net)
{
	static const char net[] =
		"OK 9 totals node=n1 ts=1 uptime=1 module=up cpus=1 records=9 bytes=9 kernel_lost=0 daemon_dropped=0 probes=0 jobs=2 net_packets=9 net_bytes=9 net_unkeyed=0\n"
		"job 100 /a events=5 sock_bytes=0 exported=1 intr=0 lost_fair=0\n"
		"net 100 tcp tx_packets=70 tx_bytes=100000 rx_packets=40 rx_bytes=1007\n"
		"net 100 udp tx_packets=5 tx_bytes=1500 rx_packets=1 rx_bytes=20\n"
		"peer 100 10.0.0.2 tx_packets=75 tx_bytes=101500 rx_packets=41 rx_bytes=1027\n"
		"peer 100 other tx_packets=0 tx_bytes=0 rx_packets=0 rx_bytes=0 evictions=0\n"
		"job 101 /b events=5 sock_bytes=0 exported=1 intr=0 lost_fair=0\n"
		"job 0 other events=0 sock_bytes=0 exported=1 intr=0 lost_fair=0\n"
		"net 0 icmp tx_packets=0 tx_bytes=0 rx_packets=2 rx_bytes=112\n"
		"peer 0 other tx_packets=0 tx_bytes=0 rx_packets=2 rx_bytes=112 evictions=0\n";
	static const char *const bad[] = {
		"OK 1 totals node=n1 ts=1 uptime=1 records=1 bytes=1 kernel_lost=0 daemon_dropped=0 probes=0\nnet 100 tcp tx_bytes=1 rx_bytes=1\n",
		"OK 2 totals node=n1 ts=1 uptime=1 records=1 bytes=1 kernel_lost=0 daemon_dropped=0 probes=0\njob 1 /a events=1 sock_bytes=1\nnet 2 tcp tx_bytes=1 rx_bytes=1\n",
		"OK 2 totals node=n1 ts=1 uptime=1 records=1 bytes=1 kernel_lost=0 daemon_dropped=0 probes=0\njob 1 /a events=1 sock_bytes=1\nnet 1 tcp tx_bytes=1\n",
		"OK 2 totals node=n1 ts=1 uptime=1 records=1 bytes=1 kernel_lost=0 daemon_dropped=0 probes=0\njob 1 /a events=1 sock_bytes=1\nnet 1 tcp tx_bytes=nan rx_bytes=1\n",
	};
	struct mgg_snapshot s;
	char why[128];
	size_t i;

	ck_assert_int_eq(parse_exact(net, strlen(net), &s, why), 0);
	ck_assert_uint_eq(s.njobs, 3);
	ck_assert(s.jobs_v[0].net_tx_bytes == 101500 && s.jobs_v[0].net_rx_bytes == 1027);
	ck_assert(s.jobs_v[1].net_tx_bytes == 0 && s.jobs_v[1].net_rx_bytes == 0);
	ck_assert(s.jobs_v[2].net_rx_bytes == 112);
	mgg_free(&s);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		ck_assert_msg(parse_exact(bad[i], strlen(bad[i]), &s, why) == -EINVAL,
			      "accepted: %s", bad[i]);
		ck_assert_msg(!strncmp(why, "bad TOTALS line: net ", 21), "%s", why);
	}
}
END_TEST

/*
 * The reply: module=down, its last byte the buffer's last. The
 * search for " module=up " must stop at the line's end, not run on.
 */
START_TEST(parse_unterminated)
{
	static const char down[] =
		"OK 1 totals node=n1 ts=1 uptime=1 module=down cpus=1 records=0 bytes=0 kernel_lost=0 daemon_dropped=0 probes=0 jobs=0\n"
		"job 0 other events=0 sock_bytes=0 exported=1\n";
	static const char *const heads[] = {
		"OK 0 totals node=n1 ts=1 uptime=1 module=down records=0 bytes=0 kernel_lost=0 daemon_dropped=0 probes=0\n",
		"OK 0 totals node=n1 ts=1 uptime=1 records=0 bytes=0 kernel_lost=0 daemon_dropped=0 probes=0 module=down\n",
	};
	struct mgg_snapshot s;
	char why[128];
	size_t i;

	ck_assert_int_eq(parse_exact(down, strlen(down), &s, why), 0);
	ck_assert(!s.module_up && s.njobs == 1);
	mgg_free(&s);
	for (i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
		ck_assert_int_eq(parse_exact(heads[i], strlen(heads[i]), &s, why), 0);
		ck_assert(!s.module_up);
		mgg_free(&s);
	}
	/* Every prefix of a good reply, exactly sized: refused, never overrun. */
	for (i = 0; i < strlen(reply); i++) {
		why[0] = '\0';
		ck_assert_msg(parse_exact(reply, i, &s, why) == -EINVAL,
			      "a prefix of %zu bytes accepted", i);
		ck_assert(why[0]);
	}
}
END_TEST

START_TEST(parse_errors)
{
	static const char *const bad[] = {
		"ERR unknown command 'TOTALS'\n",
		"OK 0 probes\n",
		"OK\n",
		"\n",
		"",
		"OK 1 totals node=n1 ts=1 uptime=1 module=up records=1 bytes=1 kernel_lost=0 daemon_dropped=0 probes=0 jobs=0\n",
		"OK 1 totals node=n1 ts=1 uptime=1 module=up records=1 bytes=1 kernel_lost=0 daemon_dropped=0 probes=0 jobs=0\nprobe 16 kprobe x events=1\n",
		"OK 0 totals node=n1 ts=1 uptime=1 module=up records=x bytes=1 kernel_lost=0 daemon_dropped=0 probes=0 jobs=0\n",
		/* Numbers that are no counters: NaN, inf, 1e300 (UB as a long). */
		"OK nan totals node=n1 ts=1 uptime=1 records=1 bytes=1 kernel_lost=0 daemon_dropped=0 probes=0\n",
		"OK 1e300 totals node=n1 ts=1 uptime=1 records=1 bytes=1 kernel_lost=0 daemon_dropped=0 probes=0\n",
		"OK inf totals node=n1 ts=1 uptime=1 records=1 bytes=1 kernel_lost=0 daemon_dropped=0 probes=0\n",
		"OK -1 totals node=n1 ts=1 uptime=1 records=1 bytes=1 kernel_lost=0 daemon_dropped=0 probes=0\n",
		"OK 99999999999 totals node=n1 ts=1 uptime=1 records=1 bytes=1 kernel_lost=0 daemon_dropped=0 probes=0\n",
		"OK 0 totals node=n1 ts=1 uptime=1 records=nan bytes=1 kernel_lost=0 daemon_dropped=0 probes=0\n",
		"OK 0 totals node=n1 ts=inf uptime=1 records=1 bytes=1 kernel_lost=0 daemon_dropped=0 probes=0\n",
		"OK 0 totals node=n1 ts=1 uptime=1e300 records=1 bytes=1 kernel_lost=0 daemon_dropped=0 probes=0\n",
		"OK 0 totals node=n1 ts=1 uptime=1 records=-5 bytes=1 kernel_lost=0 daemon_dropped=0 probes=0\n",
		"OK 0 totals node=n1 ts=1 uptime=1 records=18446744073709551616 bytes=1 kernel_lost=0 daemon_dropped=0 probes=0\n",
		"OK 0 totals node=n1 ts=1 uptime=1 records=0x10 bytes=1 kernel_lost=0 daemon_dropped=0 probes=0\n",
		"OK 0 totals node=n1 ts=1 uptime=1 records= bytes=1 kernel_lost=0 daemon_dropped=0 probes=0\n",
		"OK 1 totals node=n1 ts=1 uptime=1 records=1 bytes=1 kernel_lost=0 daemon_dropped=0 probes=0\njob 1 /a events=nan sock_bytes=0\n",
		"OK 1 totals node=n1 ts=1 uptime=1 records=1 bytes=1 kernel_lost=0 daemon_dropped=0 probes=0\njob 1 /a events=1 sock_bytes=1e300\n",
		"OK 1 totals node=n1 ts=1 uptime=1 records=1 bytes=1 kernel_lost=0 daemon_dropped=0 probes=0\njob 1 /a events=1 sock_bytes=1 sock=x\n",
		"OK 1 totals node=n1 ts=1 uptime=1 records=1 bytes=1 kernel_lost=0 daemon_dropped=0 probes=0\njob 1 /a%00b events=1 sock_bytes=1\n",
		"OK 1 totals node=n1 ts=1 uptime=1 records=1 bytes=1 kernel_lost=0 daemon_dropped=0 probes=0\njob 1\n",
		/* More than its lines: not what was asked for. */
		"OK 0 totals node=n1 ts=1 uptime=1 records=1 bytes=1 kernel_lost=0 daemon_dropped=0 probes=0\njob 1 /a events=1 sock_bytes=1\n",
	};
	struct mgg_snapshot s;
	char why[128];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		ck_assert_msg(parse_exact(bad[i], strlen(bad[i]), &s, why) == -EINVAL,
			      "accepted: %s", bad[i]);
		ck_assert_msg(why[0], "no reason for: %s", bad[i]);
		ck_assert_msg(memchr(why, '\0', sizeof(why)), "unterminated reason");
	}
	/* What the reasons say, and that they quote the reply printably. */
	ck_assert_int_eq(parse_exact(bad[6], strlen(bad[6]), &s, why), -EINVAL);
	ck_assert_str_eq(why, "bad TOTALS line: probe 16 kprobe x events=1");
	ck_assert_int_eq(parse_exact(bad[5], strlen(bad[5]), &s, why), -EINVAL);
	ck_assert_str_eq(why, "TOTALS reply cut after 0 of 1 lines");
	ck_assert_int_eq(parse_exact(bad[9], strlen(bad[9]), &s, why), -EINVAL);
	ck_assert_msg(!strncmp(why, "TOTALS reply with a bad line count: OK 1e300 ", 45), "%s", why);
	ck_assert_int_eq(parse_exact(bad[25], strlen(bad[25]), &s, why), -EINVAL);
	ck_assert_str_eq(why, "TOTALS reply longer than its 0 lines");
	ck_assert_int_eq(parse_exact("\x1b[2J\x01\n", 6, &s, why), -EINVAL);
	ck_assert_str_eq(why, "not a TOTALS reply: %1B[2J%01");
}
END_TEST

/*
 * A Slurm job's words on its job line (magnetd's TOTALS): named for gmond
 * as Slurm names it, within a gmond string's bytes whatever the ids;
 * malformed words refuse the reply as any bad line does.
 */
START_TEST(slurm_names)
{
	static const char head[] =
		"OK 1 totals node=n1 ts=1 uptime=1 module=up records=1 bytes=1 kernel_lost=0 daemon_dropped=0 probes=0\n";
	static const struct { const char *words, *want; } good[] = {
		{ " slurm_job_id=42 slurm_step=0 uid=1000", "42.0 uid=1000" },
		{ " slurm_job_id=42 slurm_step=batch", "42.batch" },
		{ " slurm_job_id=42", "42" },
		{ " slurm_job_id=42 slurm_step=3+1 slurm_stepd=1 slurm_node=n-1.x_y uid=0",
		  "42.3+1/slurmstepd node=n-1.x_y uid=0" },
		/* The longest: the node left out, the job and its user kept. */
		{ " slurm_job_id=4294967295 slurm_step=interactive+4294967293 slurm_stepd=1"
		  " slurm_node=nodenamenodenamenodenamenodenamenodenamenodenamenodenam uid=4294967295",
		  "4294967295.interactive+4294967293/slurmstepd uid=4294967295" },
		{ " future=1", NULL },
	};
	static const char *const bad[] = {
		" slurm_job_id=x", " slurm_job_id=", " slurm_job_id=42 slurm_step=0%20",
		" slurm_job_id=42 uid=-1", " slurm_job_id=42 uid=99999999999",
		" slurm_job_id=42 slurm_node=a<b", " slurm_job_id=42 slurm_stepd=2",
		" slurm_job_id=12345678901",
	};
	struct mgg_snapshot sn;
	char text[512], why[128], out[GMOND_STRING_MAX];
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(text, sizeof(text), "%sjob 7 /system.slice/slurmstepd.scope/job_42/step_0 events=5 sock_bytes=9 exported=1%s\n",
			 head, good[i].words);
		ck_assert_msg(!parse_exact(text, strlen(text), &sn, why), "%s: %s", text, why);
		ck_assert_uint_eq(sn.njobs, 1);
		ck_assert_str_eq(sn.jobs_v[0].name, "/system.slice/slurmstepd.scope/job_42/step_0");
		if (good[i].want) {
			ck_assert_str_eq(sn.jobs_v[0].slurm, good[i].want);
			ck_assert_str_eq(mgg_job_name(&sn.jobs_v[0]), good[i].want);
			mgg_safe_name(out, sizeof(out), mgg_job_name(&sn.jobs_v[0]));
			ck_assert_str_eq(out, good[i].want);	/* never cut */
		} else {
			ck_assert_ptr_null(sn.jobs_v[0].slurm);
			ck_assert_str_eq(mgg_job_name(&sn.jobs_v[0]), sn.jobs_v[0].name);
		}
		mgg_free(&sn);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "%sjob 7 /s events=5 sock_bytes=9 exported=1%s\n",
			 head, bad[i]);
		ck_assert_msg(parse_exact(text, strlen(text), &sn, why) == -EINVAL,
			      "accepted: %s", text);
		ck_assert_msg(!strncmp(why, "bad TOTALS line: job 7 /s", 25), "%s", why);
	}
}
END_TEST

/* Counters up to 2^64 - 1 are taken (as doubles). */
START_TEST(parse_big_counters)
{
	static const char big[] =
		"OK 1 totals node=n1 ts=18446744073709551615 uptime=1 records=18446744073709551615 bytes=00000000000000000001 kernel_lost=0 daemon_dropped=0 probes=0\n"
		"job 1 /a events=9007199254740993 sock_bytes=0\n";
	struct mgg_snapshot s;
	char why[128];

	ck_assert_int_eq(parse_exact(big, strlen(big), &s, why), 0);
	ck_assert(s.records == 18446744073709551615.0 && s.bytes == 1);
	ck_assert(s.jobs_v[0].events == 9007199254740992.0);
	mgg_free(&s);
}
END_TEST

/* A reply given to mgg_rx_more n bytes at a time. */
static long rx_in_steps(const char *text, size_t len, size_t step, char *why)
{
	struct mgg_rx rx = { 0 };
	char *b = exact(text, len);
	size_t have = 0;
	long ret = 0;

	while (!ret && have < len) {
		have = have + step < len ? have + step : len;
		ret = mgg_rx_more(&rx, b, have, why);
	}
	free(b);
	return ret;
}

START_TEST(rx)
{
	static const char err[] = "ERR too many clients\n";
	char why[128], *big;
	size_t step, whole = strlen(reply);
	struct mgg_rx rx = { 0 };
	char more[sizeof(reply) + 32];

	for (step = 1; step <= whole; step++) {
		ck_assert_int_eq(rx_in_steps(reply, whole, step, why), whole);
		ck_assert_int_eq(rx_in_steps(reply, whole - 1, step, why), 0);
	}
	/* What follows the reply is not part of it. */
	snprintf(more, sizeof(more), "%sjob 9 /x events=1\n", reply);
	ck_assert_int_eq(rx_in_steps(more, strlen(more), 7, why), whole);
	ck_assert_int_eq(rx_in_steps(err, strlen(err), 3, why), strlen(err));
	ck_assert_int_eq(rx_in_steps("OK 0 totals\n", 12, 1, why), 12);
	ck_assert_int_eq(rx_in_steps("OK 1e300 totals\n", 16, 1, why), -EINVAL);
	ck_assert_msg(strstr(why, "bad line count: OK 1e300 totals"), "%s", why);
	ck_assert_int_eq(rx_in_steps("OK 2000000 totals\n", 18, 5, why), -EINVAL);
	ck_assert_int_eq(rx_in_steps("OK nan totals\n", 14, 5, why), -EINVAL);
	/* A first line without end. */
	big = malloc(65536);
	ck_assert_ptr_nonnull(big);
	memset(big, 'O', 65536);
	ck_assert_int_eq(mgg_rx_more(&rx, big, 65535, why), 0);
	ck_assert_int_eq(mgg_rx_more(&rx, big, 65536, why), -EINVAL);
	ck_assert_str_eq(why, "no end of line in the first 65536 bytes");
	free(big);
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

/*
 * Whether gmond's XML and gmetad's stay well-formed with s as an
 * attribute value. gmond 3.7's xml_escape writes < > & " ' as entities,
 * a byte below 0x20 as "&#NN;" (XML 1.0 allows only &#09; &#10; &#13; of
 * those), and passes bytes >= 0x7f through, >= 0x80 garbled into "&#..."
 * references no parser takes (seen with the real gmond); gmetad parses
 * gmond's XML and writes the values back unescaped. So: printable ASCII,
 * none of < > & " ' (tab, LF and CR would pass gmond but are no part of
 * a name).
 */
static bool xml_safe(const char *s)
{
	for (; *s; s++) {
		unsigned char c = *s;

		if (c < 0x20 || c >= 0x7f || strchr("<>&\"'", c))
			return false;
	}
	return true;
}

/* mgg_safe_name's output back to bytes (it is %XX for all but plain). */
static void unsafe(char *dst, const char *s)
{
	unsigned int c;

	while (*s) {
		if (*s == '%' && sscanf(s + 1, "%2X", &c) == 1) {
			*dst++ = c;
			s += 3;
		} else {
			*dst++ = *s++;
		}
	}
	*dst = '\0';
}

START_TEST(safe_names)
{
	static const struct { const char *name, *want; } cases[] = {
		{ "/a", "/a" },
		{ "/a b/c-d_e.f", "/a b/c-d_e.f" },
		{ "/j\x01", "/j%01" },
		{ "/x\xffy", "/x%FFy" },
		{ "/caf\xc3\xa9", "/caf%C3%A9" },
		{ "/<&>\"'", "/%3C%26%3E%22%27" },
		{ "/100%", "/100%25" },
		{ "/\t\n\r\x7f", "/%09%0A%0D%7F" },
		{ "", "" },
	};
	static const size_t sizes[] = { GMOND_STRING_MAX, 4, 5, 6, 7, 8, 256 };
	char out[256], back[256], name[4097];
	size_t i, k;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		mgg_safe_name(out, GMOND_STRING_MAX, cases[i].name);
		ck_assert_str_eq(out, cases[i].want);
		ck_assert(xml_safe(out));
		unsafe(back, out);
		ck_assert_str_eq(back, cases[i].name);
	}
	/* A 4 KiB path of hostile bytes: "..." and its end, bounded, safe. */
	for (i = 0; i < sizeof(name) - 1; i++)
		name[i] = i % 64 == 0 ? '/' : "j\x01\xff\xc3\xa9<&>\"'x"[i % 11];
	name[sizeof(name) - 1] = '\0';
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		mgg_safe_name(out, sizes[k], name);
		ck_assert_uint_lt(strlen(out), sizes[k]);
		ck_assert_msg(xml_safe(out), "%s", out);
		ck_assert_msg(!strncmp(out, "...", 3), "%s", out);
		/* Its end, whole escapes only: it decodes to the name's end. */
		unsafe(back, out + 3);
		ck_assert_str_eq(back, name + strlen(name) - strlen(back));
		ck_assert_uint_ge(strlen(out), sizes[k] - 3);
	}
	/* Every byte: itself when safe (and no %), else %XX. */
	for (i = 1; i < 256; i++) {
		char one[2] = { (char)i, 0 }, want[4];

		if (xml_safe(one) && i != '%')
			snprintf(want, sizeof(want), "%c", (int)i);
		else
			snprintf(want, sizeof(want), "%%%02X", (unsigned int)i);
		mgg_safe_name(out, GMOND_STRING_MAX, one);
		ck_assert_str_eq(out, want);
	}
}
END_TEST

/* A TOTALS reply naming hostile jobs, parsed, ranked names made safe. */
START_TEST(hostile_reply)
{
	static const char hostile[] =
		"OK 6 totals node=n1 ts=1 uptime=1 module=up records=1 bytes=1 kernel_lost=0 daemon_dropped=0 probes=0\n"
		"job 1 /j%01 events=5 sock_bytes=0\n"
		"job 2 /x%FFy events=4 sock_bytes=0\n"
		"job 3 /caf%C3%A9 events=3 sock_bytes=0\n"
		"job 4 /<&>\"' events=2 sock_bytes=0\n"
		"job 5 /%3C%26%3E%22%27 events=1 sock_bytes=0\n"
		"job 0 other events=0 sock_bytes=0\n";
	static const char *const want[] = {
		"/j%01", "/x%FFy", "/caf%C3%A9", "/%3C%26%3E%22%27", "/%3C%26%3E%22%27", "other",
	};
	struct mgg_snapshot s;
	char why[128], out[GMOND_STRING_MAX];
	size_t i;

	ck_assert_int_eq(parse_exact(hostile, strlen(hostile), &s, why), 0);
	ck_assert_uint_eq(s.njobs, 6);
	for (i = 0; i < s.njobs; i++) {
		mgg_safe_name(out, sizeof(out), s.jobs_v[i].name);
		ck_assert_str_eq(out, want[i]);
	}
	mgg_free(&s);
}
END_TEST

/* ------------------------------------------------------------ fetches */

static long long ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

/* A listener on a free loopback port; port gets its number. */
static int listener(char *port, size_t size, int backlog)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	if (backlog >= 0)
		ck_assert_int_eq(listen(fd, backlog), 0);
	snprintf(port, size, "%u", ntohs(sin.sin_port));
	return fd;
}

/* A server of one connection: reads the command, then behaves. */
struct server {
	int lfd;
	const char *send;	/* these bytes, then close */
	size_t len;
	size_t junk;		/* then this many bytes of "xxx...\n" lines */
	int trickle_ms;		/* or one byte of send every so often, forever */
};

static void *serve(void *arg)
{
	const struct server *sv = arg;
	int fd = accept(sv->lfd, NULL, NULL);
	char cmd[16], junk[4096];
	size_t i;

	if (fd < 0)
		return NULL;
	if (read(fd, cmd, sizeof(cmd)) <= 0)
		goto out;
	if (sv->trickle_ms && sv->len) {
		for (i = 0; ; i++) {
			if (send(fd, sv->send + i % sv->len, 1, MSG_NOSIGNAL) != 1)
				goto out;
			usleep(sv->trickle_ms * 1000);
		}
	}
	if (send(fd, sv->send, sv->len, MSG_NOSIGNAL) != (ssize_t)sv->len)
		goto out;
	memset(junk, 'x', sizeof(junk) - 1);
	junk[sizeof(junk) - 1] = '\n';
	for (i = 0; i < sv->junk; i += sizeof(junk))
		if (send(fd, junk, sizeof(junk), MSG_NOSIGNAL) != sizeof(junk))
			break;
out:
	close(fd);
	return NULL;
}

/* One fetch from a server behaving as sv says: its result and why. */
static int fetch_from(struct server *sv, int timeout_ms, struct mgg_snapshot *s,
		      char *why, size_t whylen)
{
	struct mgg_link l;
	pthread_t t;
	char port[16];
	int ret;

	sv->lfd = listener(port, sizeof(port), 1);
	ck_assert_int_eq(mgg_link_init(&l, "127.0.0.1", port, timeout_ms, why, whylen), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, serve, sv), 0);
	ret = mgg_link_fetch(&l, s, why, whylen);
	shutdown(sv->lfd, SHUT_RDWR);
	if (!sv->trickle_ms)
		pthread_join(t, NULL);
	else
		pthread_detach(t);	/* it stops once we have closed */
	close(sv->lfd);
	return ret;
}

START_TEST(fetch_good)
{
	struct server sv = { .send = reply, .len = strlen(reply) };
	struct mgg_snapshot s;
	char why[256];

	ck_assert_int_eq(fetch_from(&sv, 2000, &s, why, sizeof(why)), 1);
	ck_assert_uint_eq(s.njobs, 2);
	mgg_free(&s);
}
END_TEST

/*
 * A module=down reply of exactly the receive buffer's first size (64
 * KiB): the reply's last byte is the buffer's.
 */
START_TEST(fetch_exact_buffer)
{
	static const char head[] =
		"OK 2 totals node=n1 ts=1 uptime=1 module=down cpus=1 records=0 bytes=0 kernel_lost=0 daemon_dropped=0 probes=0 jobs=1\n"
		"job 1 /";
	static const char tail[] = " events=1 sock_bytes=0\njob 0 other events=0 sock_bytes=0 exported=1\n";
	struct mgg_snapshot s;
	struct server sv;
	char why[256], *r = malloc(65536);

	ck_assert_ptr_nonnull(r);
	memcpy(r, head, strlen(head));
	memset(r + strlen(head), 'a', 65536 - strlen(head) - strlen(tail));
	memcpy(r + 65536 - strlen(tail), tail, strlen(tail));
	sv = (struct server){ .send = r, .len = 65536 };
	ck_assert_int_eq(fetch_from(&sv, 2000, &s, why, sizeof(why)), 1);
	ck_assert(!s.module_up && s.njobs == 2);
	mgg_free(&s);
	free(r);
}
END_TEST

START_TEST(fetch_cut)
{
	static const char cut[] =
		"OK 3 totals node=n1 ts=1 uptime=1 module=up records=0 bytes=0 kernel_lost=0 daemon_dropped=0 probes=0\n"
		"job 1 /a events=1 sock_bytes=0\n";
	struct server sv = { .send = cut, .len = strlen(cut) };
	struct mgg_snapshot s;
	char why[256], want[64];

	ck_assert_int_eq(fetch_from(&sv, 2000, &s, why, sizeof(why)), -ECONNRESET);
	snprintf(want, sizeof(want), ": closed after %zu bytes, the reply unfinished", strlen(cut));
	ck_assert_msg(strstr(why, "read from 127.0.0.1:") && strstr(why, want), "%s", why);
}
END_TEST

START_TEST(fetch_oversized)
{
	static const char head[] =
		"OK 1000000 totals node=n1 ts=1 uptime=1 module=up records=0 bytes=0 kernel_lost=0 daemon_dropped=0 probes=0\n";
	struct server sv = { .send = head, .len = strlen(head), .junk = 33 << 20 };
	struct mgg_snapshot s;
	char why[256];

	ck_assert_int_eq(fetch_from(&sv, 10000, &s, why, sizeof(why)), -EFBIG);
	ck_assert_msg(strstr(why, ": reply larger than 32 MiB"), "%s", why);
}
END_TEST

START_TEST(fetch_bad)
{
	static const char e[] = "ERR too many clients\n";
	struct server sv = { .send = e, .len = strlen(e) };
	struct mgg_snapshot s;
	char why[256];

	ck_assert_int_eq(fetch_from(&sv, 2000, &s, why, sizeof(why)), -EINVAL);
	ck_assert_msg(strstr(why, "reply from 127.0.0.1:") &&
		      strstr(why, ": not a TOTALS reply: ERR too many clients"), "%s", why);
}
END_TEST

/* One byte every 50 ms, forever: the timeout is for the whole fetch. */
START_TEST(fetch_trickle)
{
	struct server sv = { .send = reply, .len = strlen(reply), .trickle_ms = 50 };
	struct mgg_snapshot s;
	char why[256];
	long long t0 = ms(), took;

	ck_assert_int_eq(fetch_from(&sv, 300, &s, why, sizeof(why)), -ETIMEDOUT);
	took = ms() - t0;
	ck_assert_msg(took >= 290 && took < 600, "took %lld ms", took);
	ck_assert_msg(strstr(why, ": no whole reply in 300 ms ("), "%s", why);
}
END_TEST

/*
 * magnetd refused or silent: one fetch, bounded by the timeout; then none
 * while the backoff lasts (a collection's other metrics, the next
 * collections), each call returning at once.
 */
START_TEST(fetch_backoff)
{
	struct mgg_snapshot s;
	struct mgg_link l;
	char why[256], port[16];
	long long t0, took;
	int fd, i;

	/* Nobody listens: refused, said so. */
	fd = listener(port, sizeof(port), -1);
	ck_assert_int_eq(mgg_link_init(&l, "127.0.0.1", port, 200, why, sizeof(why)), 0);
	ck_assert_int_eq(mgg_link_fetch(&l, &s, why, sizeof(why)), -ECONNREFUSED);
	ck_assert_msg(strstr(why, "connect to 127.0.0.1:") && strstr(why, "refused"), "%s", why);
	ck_assert_int_eq(mgg_link_fetch(&l, &s, why, sizeof(why)), 0);
	/* It listens and never answers: the timeout once, then nothing. */
	ck_assert_int_eq(listen(fd, 1), 0);
	usleep(1100 * 1000);
	t0 = ms();
	ck_assert_int_eq(mgg_link_fetch(&l, &s, why, sizeof(why)), -ETIMEDOUT);
	took = ms() - t0;
	ck_assert_msg(took >= 195 && took < 400, "took %lld ms", took);
	ck_assert_msg(strstr(why, "read from 127.0.0.1:") &&
		      strstr(why, ": no whole reply in 200 ms (0 bytes)"), "%s", why);
	t0 = ms();
	for (i = 0; i < 30; i++)
		ck_assert_int_eq(mgg_link_fetch(&l, &s, why, sizeof(why)), 0);
	took = ms() - t0;
	ck_assert_msg(took < 50, "30 calls in backoff took %lld ms", took);
	/* Two failures in a row: 2 s before the next try. */
	ck_assert_msg(l.next_ms - ms() > 1900 && l.next_ms - ms() <= 2000,
		      "next try in %lld ms", l.next_ms - ms());
	close(fd);
}
END_TEST

START_TEST(link_init)
{
	struct mgg_link l;
	char why[256];

	ck_assert_int_eq(mgg_link_init(&l, "127.0.0.1", "8650", 2000, why, sizeof(why)), 0);
	ck_assert_str_eq(l.where, "127.0.0.1:8650");
	ck_assert_int_eq(mgg_link_init(&l, "no such host.invalid", "8650", 2000, why,
				       sizeof(why)), -EINVAL);
	ck_assert_msg(!strncmp(why, "no such host.invalid:8650: ", 27), "%s", why);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ganglia");
	TCase *tc = tcase_create("ganglia");

	tcase_add_test(tc, parse);
	tcase_add_test(tc, parse_net);
	tcase_add_test(tc, parse_unterminated);
	tcase_add_test(tc, parse_errors);
	tcase_add_test(tc, slurm_names);
	tcase_add_test(tc, parse_big_counters);
	tcase_add_test(tc, rx);
	tcase_add_test(tc, rates);
	tcase_add_test(tc, metric_words);
	tcase_add_test(tc, safe_names);
	tcase_add_test(tc, hostile_reply);
	tcase_add_test(tc, fetch_good);
	tcase_add_test(tc, fetch_exact_buffer);
	tcase_add_test(tc, fetch_cut);
	tcase_add_test(tc, fetch_oversized);
	tcase_add_test(tc, fetch_bad);
	tcase_add_test(tc, fetch_trickle);
	tcase_add_test(tc, fetch_backoff);
	tcase_add_test(tc, link_init);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
