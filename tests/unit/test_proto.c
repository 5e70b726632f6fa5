// SPDX-License-Identifier: GPL-2.0
/*
 * daemon/proto.c: every command form, case, malformed commands and their
 * exact ERR replies, intervals, line assembly across split reads, too-long
 * lines and the resync after them.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "testutil.h"

static struct mg_cmd cmd;

static void parse_ok(const char *line, enum mg_cmd_kind kind)
{
	int ret = mg_proto_parse(line, strlen(line), &cmd);

	ck_assert_msg(ret == 0, "'%s': %s", line, cmd.error);
	ck_assert_int_eq(cmd.kind, kind);
}

static void parse_err_len(const char *line, size_t len, const char *reply)
{
	ck_assert_int_eq(mg_proto_parse(line, len, &cmd), -EINVAL);
	ck_assert_str_eq(cmd.error, reply);
}

static void parse_err(const char *line, const char *reply)
{
	parse_err_len(line, strlen(line), reply);
}

static void filter_is(const char *want, size_t col)
{
	ck_assert_uint_eq(cmd.filter_len, strlen(want));
	ck_assert(!memcmp(cmd.filter, want, cmd.filter_len));
	if (cmd.filter_len)
		ck_assert_uint_eq(cmd.filter_col, col);
}

START_TEST(simple_commands)
{
	static const struct {
		const char *line;
		enum mg_cmd_kind kind;
	} ok[] = {
		{ "HELLO", MG_CMD_HELLO }, { "hello", MG_CMD_HELLO },
		{ "HeLLo", MG_CMD_HELLO }, { "  HELLO  ", MG_CMD_HELLO },
		{ "\tHELLO\t", MG_CMD_HELLO },
		{ "PROBES", MG_CMD_PROBES }, { "probes", MG_CMD_PROBES },
		{ "STATS", MG_CMD_STATS }, { "Stats", MG_CMD_STATS },
		{ "TOTALS", MG_CMD_TOTALS }, { "totals", MG_CMD_TOTALS },
		{ "UNSUBSCRIBE", MG_CMD_UNSUBSCRIBE },
		{ "unsubscribe", MG_CMD_UNSUBSCRIBE },
		{ "QUIT", MG_CMD_QUIT }, { "quit ", MG_CMD_QUIT },
	};
	unsigned int i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		parse_ok(ok[i].line, ok[i].kind);
	for (i = 0; i < MG_CMD_NR; i++) {
		char line[64];

		snprintf(line, sizeof(line), "%s%s", mg_proto_cmd_name(i),
			 i == MG_CMD_AGG ? " pid" : i == MG_CMD_AUTH ? " MUNGE x" : "");
		parse_ok(line, i);
	}
	ck_assert_str_eq(mg_proto_cmd_name(MG_CMD_NR), "?");
	ck_assert_str_eq(mg_proto_format_name(MG_FORMAT_JSON), "json");
	ck_assert_str_eq(mg_proto_format_name(MG_FORMAT_BINARY), "binary");
	ck_assert_str_eq(mg_proto_agg_key_name(MG_AGG_CGROUP), "cgroup");
	ck_assert_str_eq(mg_proto_agg_key_name(MG_AGG_NR), "?");
}
END_TEST

START_TEST(simple_errors)
{
	parse_err("HELLO there", "ERR HELLO takes no arguments");
	parse_err("probes 1", "ERR PROBES takes no arguments");
	parse_err("STATS\tx", "ERR STATS takes no arguments");
	parse_err("UNSUBSCRIBE *", "ERR UNSUBSCRIBE takes no arguments");
	parse_err("quit now", "ERR QUIT takes no arguments");
	parse_err("TOTALS all", "ERR TOTALS takes no arguments");
	parse_err("AUTH", "ERR AUTH needs a scheme: AUTH MUNGE <credential>");
	parse_err("AUTH KERBEROS x", "ERR unknown AUTH scheme 'KERBEROS' (MUNGE)");
	parse_err("AUTH MUNGE", "ERR AUTH MUNGE needs a credential (munge -s magnetd)");
	parse_err("AUTH MUNGE a b", "ERR too many arguments to AUTH");
	{
		struct mg_cmd cmd;

		ck_assert_int_eq(mg_proto_parse("auth munge  MUNGE:AbC=:  ", 25, &cmd), 0);
		ck_assert_int_eq(cmd.kind, MG_CMD_AUTH);
		ck_assert_uint_eq(cmd.cred_len, 11);
		ck_assert(!strncmp(cmd.cred, "MUNGE:AbC=:", 11));
	}
	parse_err("", "ERR empty command");
	parse_err(" \t ", "ERR empty command");
	parse_err("FOO bar", "ERR unknown command 'FOO'");
	parse_err("HELL", "ERR unknown command 'HELL'");
	parse_err("HELLOO", "ERR unknown command 'HELLOO'");
	parse_err("SUBSCRIBE_ALL", "ERR unknown command 'SUBSCRIBE_ALL'");
	parse_err("0123456789abcdef0123456789abcdefXYZ",
		  "ERR unknown command '0123456789abcdef0123456789abcdef...'");
	parse_err("HELLO\x01", "ERR control character 0x01 at column 5");
	parse_err("HELLO\r", "ERR control character 0x0d at column 5");
	parse_err("SUBSCRIBE cpu\x7f", "ERR control character 0x7f at column 13");
	parse_err_len("HELLO\0QUIT", 10, "ERR control character 0x00 at column 5");
}
END_TEST

START_TEST(too_long)
{
	static char line[MG_PROTO_LINE_MAX + 2];

	memset(line, ' ', sizeof(line));
	memcpy(line, "HELLO", 5);
	ck_assert_int_eq(mg_proto_parse(line, MG_PROTO_LINE_MAX, &cmd), 0);
	parse_err_len(line, MG_PROTO_LINE_MAX + 1, MG_PROTO_ERR_TOO_LONG);
}
END_TEST

START_TEST(subscribe)
{
	parse_ok("SUBSCRIBE", MG_CMD_SUBSCRIBE);
	filter_is("", 0);
	ck_assert_int_eq(cmd.format, MG_FORMAT_JSON);

	parse_ok("SUBSCRIBE *", MG_CMD_SUBSCRIBE);
	filter_is("*", 10);

	parse_ok("SUBSCRIBE probe == tcp_sendmsg && tgid == 1234 FORMAT binary",
		 MG_CMD_SUBSCRIBE);
	filter_is("probe == tcp_sendmsg && tgid == 1234", 10);
	ck_assert_int_eq(cmd.format, MG_FORMAT_BINARY);

	parse_ok("subscribe  cpu==1\tformat JSON ", MG_CMD_SUBSCRIBE);
	filter_is("cpu==1", 11);
	ck_assert_int_eq(cmd.format, MG_FORMAT_JSON);

	parse_ok("Subscribe !(pid == 1) FoRmAt BiNaRy", MG_CMD_SUBSCRIBE);
	filter_is("!(pid == 1)", 10);
	ck_assert_int_eq(cmd.format, MG_FORMAT_BINARY);

	parse_ok("SUBSCRIBE FORMAT binary", MG_CMD_SUBSCRIBE);
	filter_is("", 0);
	ck_assert_int_eq(cmd.format, MG_FORMAT_BINARY);

	/* The filter is not checked here: the daemon parses it. */
	parse_ok("SUBSCRIBE ((( garbage", MG_CMD_SUBSCRIBE);
	filter_is("((( garbage", 10);

	/* A FORMAT inside a quoted probe name belongs to the name. */
	parse_ok("SUBSCRIBE probe == \"a FORMAT json\"", MG_CMD_SUBSCRIBE);
	filter_is("probe == \"a FORMAT json\"", 10);
	ck_assert_int_eq(cmd.format, MG_FORMAT_JSON);
	parse_ok("SUBSCRIBE probe == \"a FORMAT\" FORMAT binary", MG_CMD_SUBSCRIBE);
	filter_is("probe == \"a FORMAT\"", 10);
	ck_assert_int_eq(cmd.format, MG_FORMAT_BINARY);
	parse_ok("SUBSCRIBE probe == \"x FORMAT\"", MG_CMD_SUBSCRIBE);
	filter_is("probe == \"x FORMAT\"", 10);

	/* Only the last two words are the format clause. */
	parse_ok("SUBSCRIBE cpu == 1 FORMAT json FORMAT binary", MG_CMD_SUBSCRIBE);
	filter_is("cpu == 1 FORMAT json", 10);
	ck_assert_int_eq(cmd.format, MG_FORMAT_BINARY);
}
END_TEST

START_TEST(subscribe_errors)
{
	parse_err("SUBSCRIBE cpu == 1 FORMAT xml",
		  "ERR unknown format 'xml' (json or binary)");
	parse_err("SUBSCRIBE FORMAT jsonl", "ERR unknown format 'jsonl' (json or binary)");
	parse_err("SUBSCRIBE cpu == 1 FORMAT", "ERR FORMAT needs json or binary");
	parse_err("SUBSCRIBE FORMAT", "ERR FORMAT needs json or binary");
	parse_err("SUBSCRIBE format ", "ERR FORMAT needs json or binary");
	/* A probe called "format" must be quoted at the end of a filter. */
	parse_err("SUBSCRIBE probe == format", "ERR FORMAT needs json or binary");
	parse_ok("SUBSCRIBE probe == \"format\"", MG_CMD_SUBSCRIBE);
}
END_TEST

START_TEST(agg)
{
	static const char *const keys[] = { "probe", "pid", "tgid", "comm",
					    "cgroup", "net" };
	char line[64];
	unsigned int k;

	for (k = 0; k < MG_AGG_NR; k++) {
		ck_assert_str_eq(mg_proto_agg_key_name(k), keys[k]);
		snprintf(line, sizeof(line), "AGG %s", keys[k]);
		parse_ok(line, MG_CMD_AGG);
		ck_assert_int_eq(cmd.agg_key, k);
		ck_assert_uint_eq(cmd.interval_ns, MG_PROTO_EVERY_DEFAULT_NS);
	}
	parse_ok("agg PID every 500ms", MG_CMD_AGG);
	ck_assert_int_eq(cmd.agg_key, MG_AGG_PID);
	ck_assert_uint_eq(cmd.interval_ns, 500000000ULL);
	parse_ok("Agg Tgid EVERY 2m", MG_CMD_AGG);
	ck_assert_int_eq(cmd.agg_key, MG_AGG_TGID);
	ck_assert_uint_eq(cmd.interval_ns, 120000000000ULL);
	parse_ok("\tAGG\tcgroup\tEVERY\t1s\t", MG_CMD_AGG);
	ck_assert_int_eq(cmd.agg_key, MG_AGG_CGROUP);
	ck_assert_uint_eq(cmd.interval_ns, 1000000000ULL);
	parse_ok("AGG COMM EVERY 24h", MG_CMD_AGG);
	ck_assert_uint_eq(cmd.interval_ns, MG_PROTO_EVERY_MAX_NS);
	parse_ok("AGG probe EVERY 10ms", MG_CMD_AGG);
	ck_assert_uint_eq(cmd.interval_ns, MG_PROTO_EVERY_MIN_NS);
}
END_TEST

START_TEST(agg_errors)
{
	parse_err("AGG", "ERR AGG needs a key: probe, pid, tgid, comm, cgroup or net");
	parse_err("AGG  ", "ERR AGG needs a key: probe, pid, tgid, comm, cgroup or net");
	parse_err("AGG foo",
		  "ERR unknown AGG key 'foo' (probe, pid, tgid, comm, cgroup or net)");
	parse_err("AGG EVERY 1s",
		  "ERR unknown AGG key 'EVERY' (probe, pid, tgid, comm, cgroup or net)");
	parse_err("AGG pid SOMETIMES 1s",
		  "ERR expected EVERY after the AGG key, not 'SOMETIMES'");
	parse_err("AGG pid 1s", "ERR expected EVERY after the AGG key, not '1s'");
	parse_err("AGG pid EVERY", "ERR EVERY needs an interval, e.g. 500ms");
	parse_err("AGG pid EVERY 1s extra", "ERR too many arguments to AGG");
	parse_err("AGG pid EVERY 1", "ERR interval needs a unit: ns, us, ms, s, m or h");
	parse_err("AGG pid EVERY 1S", "ERR interval needs a unit: ns, us, ms, s, m or h");
	parse_err("AGG pid EVERY 1sec", "ERR interval needs a unit: ns, us, ms, s, m or h");
	parse_err("AGG pid EVERY s", "ERR interval must start with a decimal number");
	parse_err("AGG pid EVERY -1s", "ERR interval must start with a decimal number");
	parse_err("AGG pid EVERY 9ms", "ERR interval must be 10ms to 24h");
	parse_err("AGG pid EVERY 0s", "ERR interval must be 10ms to 24h");
	parse_err("AGG pid EVERY 25h", "ERR interval must be 10ms to 24h");
	parse_err("AGG pid EVERY 99999999999999999999999s",
		  "ERR interval must be 10ms to 24h");
	parse_err("AGG pid EVERY 18446744073709551615ns",
		  "ERR interval must be 10ms to 24h");
}
END_TEST

START_TEST(intervals)
{
	static const struct {
		const char *s;
		unsigned long long ns;
	} ok[] = {
		{ "10000000ns", 10000000ULL }, { "10000us", 10000000ULL },
		{ "10ms", 10000000ULL }, { "500ms", 500000000ULL },
		{ "1s", 1000000000ULL }, { "90s", 90000000000ULL },
		{ "2m", 120000000000ULL }, { "1h", 3600000000000ULL },
		{ "1440m", 86400000000000ULL }, { "86400s", 86400000000000ULL },
		{ "0001s", 1000000000ULL },
	};
	static const char *const bad[] = {
		"", "ms", "1", "1x", "1 s", "1.5s", "0x10s", "9999us", "9999999ns",
		"86401s", "1441m", "25h", "184467440737095516150ns",
	};
	char why[MG_PROTO_ERR_MAX];
	__u64 ns;
	unsigned int i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ns = 0;
		ck_assert_msg(mg_proto_parse_interval(ok[i].s, strlen(ok[i].s),
						      &ns, why) == 0,
			      "%s: %s", ok[i].s, why);
		ck_assert_uint_eq(ns, ok[i].ns);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ns = 42;
		ck_assert_int_eq(mg_proto_parse_interval(bad[i], strlen(bad[i]),
							 &ns, why), -EINVAL);
		ck_assert_uint_eq(ns, 42);
		ck_assert(why[0]);
	}
}
END_TEST

/* Feed a chunk; collect events as "L:<line>" or "TOO_LONG" into out. */
static unsigned int feed(struct mg_linebuf *lb, const char *data, size_t len,
			 char out[][MG_PROTO_LINE_MAX + 3], unsigned int n)
{
	const char *line;
	size_t line_len;
	enum mg_line_status st;

	while ((st = mg_linebuf_take(lb, &data, &len, &line, &line_len)) !=
	       MG_LINE_MORE) {
		if (st == MG_LINE_TOO_LONG) {
			strcpy(out[n++], "TOO_LONG");
		} else {
			tu_assert_op(strlen(line), ==, line_len);
			out[n][0] = 'L';
			out[n][1] = ':';
			memcpy(out[n] + 2, line, line_len + 1);
			n++;
		}
	}
	tu_assert_op(len, ==, 0);
	return n;
}

static char ev[64][MG_PROTO_LINE_MAX + 3];

START_TEST(lines_basic)
{
	static const char in[] = "HELLO\nQUIT\r\n\nSUBSCRIBE cpu == 1\r\na\rb\n";
	struct mg_linebuf lb;
	unsigned int n, i;

	mg_linebuf_init(&lb);
	n = feed(&lb, in, strlen(in), ev, 0);
	ck_assert_uint_eq(n, 5);
	ck_assert_str_eq(ev[0], "L:HELLO");
	ck_assert_str_eq(ev[1], "L:QUIT");
	ck_assert_str_eq(ev[2], "L:");
	ck_assert_str_eq(ev[3], "L:SUBSCRIBE cpu == 1");
	ck_assert_str_eq(ev[4], "L:a\rb");	/* only a final '\r' goes */

	/* Byte by byte: the same lines. */
	mg_linebuf_init(&lb);
	for (n = 0, i = 0; i < strlen(in); i++)
		n = feed(&lb, in + i, 1, ev, n);
	ck_assert_uint_eq(n, 5);
	ck_assert_str_eq(ev[1], "L:QUIT");
	ck_assert_str_eq(ev[3], "L:SUBSCRIBE cpu == 1");

	/* An unfinished line waits; an empty read changes nothing. */
	mg_linebuf_init(&lb);
	ck_assert_uint_eq(feed(&lb, "HEL", 3, ev, 0), 0);
	ck_assert_uint_eq(feed(&lb, "", 0, ev, 0), 0);
	ck_assert_uint_eq(feed(&lb, "LO\nQU", 5, ev, 0), 1);
	ck_assert_str_eq(ev[0], "L:HELLO");
	ck_assert_uint_eq(feed(&lb, "IT\n", 3, ev, 0), 1);
	ck_assert_str_eq(ev[0], "L:QUIT");
	/* A '\r' and its '\n' in different reads. */
	ck_assert_uint_eq(feed(&lb, "STATS\r", 6, ev, 0), 0);
	ck_assert_uint_eq(feed(&lb, "\n", 1, ev, 0), 1);
	ck_assert_str_eq(ev[0], "L:STATS");
}
END_TEST

START_TEST(lines_too_long)
{
	static char in[3 * MG_PROTO_LINE_MAX];
	struct mg_linebuf lb;
	unsigned int n;
	size_t i;

	/* Exactly the bound, then '\n': a line. */
	memset(in, 'x', MG_PROTO_LINE_MAX);
	in[MG_PROTO_LINE_MAX] = '\n';
	mg_linebuf_init(&lb);
	ck_assert_uint_eq(feed(&lb, in, MG_PROTO_LINE_MAX + 1, ev, 0), 1);
	ck_assert_uint_eq(strlen(ev[0]), 2 + MG_PROTO_LINE_MAX);

	/* The '\r' counts: the bound and "\r\n" is too long. */
	memcpy(in + MG_PROTO_LINE_MAX, "\r\nHELLO\n", 8);
	mg_linebuf_init(&lb);
	ck_assert_uint_eq(feed(&lb, in, MG_PROTO_LINE_MAX + 8, ev, 0), 2);
	ck_assert_str_eq(ev[0], "TOO_LONG");
	ck_assert_str_eq(ev[1], "L:HELLO");

	/* One error per line, however it arrives, then resync at '\n'. */
	memset(in, 'y', sizeof(in));
	mg_linebuf_init(&lb);
	for (n = 0, i = 0; i < 2 * MG_PROTO_LINE_MAX; i += 7)
		n = feed(&lb, in + i, 7, ev, n);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(ev[0], "TOO_LONG");
	n = feed(&lb, "yyy\nQUIT\n", 9, ev, 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(ev[0], "L:QUIT");

	/* Reported as soon as byte MAX + 1 arrives, before any '\n'. */
	mg_linebuf_init(&lb);
	ck_assert_uint_eq(feed(&lb, in, MG_PROTO_LINE_MAX, ev, 0), 0);
	ck_assert_uint_eq(feed(&lb, in, 1, ev, 0), 1);
	ck_assert_str_eq(ev[0], "TOO_LONG");
	/* Two long lines back to back: two errors, then the good one. */
	memset(in, 'z', sizeof(in));
	in[MG_PROTO_LINE_MAX + 5] = '\n';
	in[2 * MG_PROTO_LINE_MAX + 10] = '\n';
	memcpy(in + 2 * MG_PROTO_LINE_MAX + 11, "HELLO\n", 6);
	mg_linebuf_init(&lb);
	n = feed(&lb, in, 2 * MG_PROTO_LINE_MAX + 17, ev, 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(ev[0], "TOO_LONG");
	ck_assert_str_eq(ev[1], "TOO_LONG");
	ck_assert_str_eq(ev[2], "L:HELLO");
}
END_TEST

/*
 * Random lines (some past the bound, some with CRLF), the stream cut into
 * random reads: the events are exactly the lines, or one TOO_LONG each.
 */
START_TEST(lines_random)
{
	enum { LINES = 40 };
	static char stream[LINES * (2 * MG_PROTO_LINE_MAX + 2)];
	static size_t lens[LINES];
	static bool crlf[LINES];
	struct mg_linebuf lb;
	unsigned int round, i, n;
	size_t len, off, chunk, j;

	tu_seed(0x11e5);
	for (round = 0; round < 200; round++) {
		len = 0;
		for (i = 0; i < LINES; i++) {
			static const size_t sizes[] = { 0, 1, 100,
				MG_PROTO_LINE_MAX - 1, MG_PROTO_LINE_MAX,
				MG_PROTO_LINE_MAX + 1, 2 * MG_PROTO_LINE_MAX };

			lens[i] = tu_rand() % 2 ? tu_rand() % 200 :
				  sizes[tu_rand() % 7];
			crlf[i] = tu_rand() % 2;
			for (j = 0; j < lens[i]; j++)
				stream[len++] = 'a' + (i + j) % 26;
			if (crlf[i])
				stream[len++] = '\r';
			stream[len++] = '\n';
		}
		mg_linebuf_init(&lb);
		n = 0;
		for (off = 0, i = 0; off < len; off += chunk) {
			chunk = 1 + tu_rand() % (tu_rand() % 2 ? 16 : 9000);
			if (chunk > len - off)
				chunk = len - off;
			/* Check in batches: ev holds 64. */
			n = feed(&lb, stream + off, chunk, ev, n);
			for (j = 0; j < n; j++, i++) {
				size_t raw = lens[i] + crlf[i];

				if (raw > MG_PROTO_LINE_MAX) {
					tu_assert(!strcmp(ev[j], "TOO_LONG"));
					continue;
				}
				tu_assert_op(strlen(ev[j]), ==, 2 + lens[i]);
				tu_assert(!lens[i] ||
					  ev[j][2] == (char)('a' + i % 26));
			}
			n = 0;
		}
		tu_assert_op(i, ==, LINES);
	}
}
END_TEST

/* Random lines through the parser: never a crash, replies always "ERR ..." */
START_TEST(fuzz_parse)
{
	static const char *const toks[] = {
		"HELLO", "PROBES", "STATS", "SUBSCRIBE", "AGG", "UNSUBSCRIBE",
		"QUIT", "FORMAT", "json", "binary", "EVERY", "pid", "cgroup",
		"500ms", "1s", "\"", " ", "\t", "cpu == 1", "x",
	};
	static char line[MG_PROTO_LINE_MAX + 1];
	unsigned int i, ok = 0;
	size_t n, len;
	int ret;

	tu_seed(0xfeed);
	for (i = 0; i < 100000; i++) {
		len = tu_rand() % (i % 100 ? 48 : MG_PROTO_LINE_MAX + 1);
		n = tu_token_soup(line, len, toks, sizeof(toks) / sizeof(toks[0]), 8);
		ret = mg_proto_parse(line, n, &cmd);
		if (ret == 0) {
			ok++;
			tu_assert_op(cmd.kind, <, MG_CMD_NR);
			if (cmd.kind == MG_CMD_SUBSCRIBE && cmd.filter_len)
				tu_assert_op(cmd.filter_col + cmd.filter_len, <=, n);
			continue;
		}
		tu_assert_int(ret, ==, -EINVAL);
		tu_assert(!strncmp(cmd.error, "ERR ", 4));
		tu_assert(!strchr(cmd.error, '\n'));
		tu_assert_op(strlen(cmd.error), <, MG_PROTO_ERR_MAX - 1);
	}
	ck_assert_uint_gt(ok, 1000);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("proto");
	TCase *tc = tcase_create("commands");

	tcase_add_test(tc, simple_commands);
	tcase_add_test(tc, simple_errors);
	tcase_add_test(tc, too_long);
	tcase_add_test(tc, subscribe);
	tcase_add_test(tc, subscribe_errors);
	tcase_add_test(tc, agg);
	tcase_add_test(tc, agg_errors);
	tcase_add_test(tc, intervals);
	suite_add_tcase(s, tc);

	tc = tcase_create("lines");
	tcase_add_test(tc, lines_basic);
	tcase_add_test(tc, lines_too_long);
	suite_add_tcase(s, tc);

	tc = tcase_create("fuzz");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, lines_random);
	tcase_add_test(tc, fuzz_parse);
	suite_add_tcase(s, tc);

	return tu_run(s);
}
