// SPDX-License-Identifier: GPL-2.0
/*
 * magnet-ctl without a kernel: the value parsers; every command form
 * parsed into the request it sends (attributes checked type by type
 * against the UAPI header); every malformed form refused with exit status
 * 1 and a message; and whole commands run against a fake kernel on a
 * socketpair: replies, dumps interrupted and retried, extended-ACK
 * errors, alarms, and the text, JSON and tab-separated output. And
 * ctl_exec(), the program callable in-process: it returns where the
 * program exits, prints what the program prints, and leaks nothing.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/genl/genl.h>

#include "ctl.h"

int magnet_ctl_main(int argc, char **argv);

#define FAM	0x1c			/* the fake family id */

/* ---- capturing output ---- */

static char *out_buf, *err_buf;
static size_t out_len, err_len;

static void cap_begin(void)
{
	free(out_buf);
	free(err_buf);
	out_buf = err_buf = NULL;
	ctl_outf = open_memstream(&out_buf, &out_len);
	ctl_errf = open_memstream(&err_buf, &err_len);
	ck_assert_ptr_nonnull(ctl_outf);
	ck_assert_ptr_nonnull(ctl_errf);
}

static void cap_end(void)
{
	fclose(ctl_outf);
	fclose(ctl_errf);
	ctl_outf = ctl_errf = NULL;
}

/* ---- command lines ---- */

static char line_buf[4096];
static char *argv_buf[64];
static struct ctl_req R;

/*
 * Split line at spaces into argv_buf (argv[0] is the program); the word
 * '' is an empty argument, as in a shell.
 */
static int split(const char *line)
{
	int argc = 0;
	char *p;

	snprintf(line_buf, sizeof(line_buf), "%s", line);
	argv_buf[argc++] = "magnet-ctl";
	for (p = strtok(line_buf, " "); p; p = strtok(NULL, " "))
		argv_buf[argc++] = strcmp(p, "''") ? p : "";
	argv_buf[argc] = NULL;
	return argc;
}

/* Parse line into R; it must be accepted silently. */
static void parse_ok(const char *line)
{
	int argc = split(line), ret;

	cap_begin();
	ret = ctl_parse(argc, argv_buf, &R);
	cap_end();
	if (ret)
		ck_abort_msg("'%s' refused: %s", line, err_buf);
	ck_assert_msg(!err_len, "'%s': unexpected message: %s", line, err_buf);
}

/* The whole program on line must exit 1 with want in its message. */
static void usage_error(const char *line, const char *want)
{
	int argc = split(line), ret;

	cap_begin();
	ret = magnet_ctl_main(argc, argv_buf);
	cap_end();
	ck_assert_msg(ret == CTL_EXIT_USAGE, "'%s': exit %d, want 1 (stderr: %s)",
		      line, ret, err_buf);
	ck_assert_msg(err_buf && strstr(err_buf, want),
		      "'%s': message lacks \"%s\":\n%s", line, want, err_buf);
	ck_assert_msg(strstr(err_buf, "usage:"), "'%s': no usage line:\n%s",
		      line, err_buf);
	ck_assert_msg(!strncmp(err_buf, "magnet-ctl: ", 12),
		      "'%s': message does not start with magnet-ctl: %s", line, err_buf);
	ck_assert_msg(!out_len, "'%s': printed on stdout: %s", line, out_buf);
}

/* ---- the request message, attribute by attribute ---- */

static struct nl_msg *req_msg;
static struct nlattr *top[MAGNET_A_MAX + 1];
static struct nlattr *pa[MAGNET_PROBE_A_MAX + 1];
static struct nlattr *fa[MAGNET_FILTER_A_MAX + 1];
static struct nlattr *ba[MAGNET_BUFFER_A_MAX + 1];

/* Build R's message and parse it back; cmd and dump checked. */
static void build(__u8 cmd, bool dump)
{
	struct nlmsghdr *nlh;
	struct genlmsghdr *g;

	if (req_msg)
		nlmsg_free(req_msg);
	req_msg = ctl_req_msg(&R, FAM);
	ck_assert_ptr_nonnull(req_msg);
	nlh = nlmsg_hdr(req_msg);
	g = nlmsg_data(nlh);
	ck_assert_int_eq(nlh->nlmsg_type, FAM);
	ck_assert_int_eq(g->cmd, cmd);
	ck_assert_int_eq(g->version, MAGNET_GENL_VERSION);
	ck_assert_int_eq(R.genl_cmd, cmd);
	ck_assert_int_eq(R.dump, dump);
	if (dump)
		ck_assert_int_eq(nlh->nlmsg_flags & (NLM_F_DUMP | NLM_F_ACK), NLM_F_DUMP);
	else
		ck_assert_int_eq(nlh->nlmsg_flags & (NLM_F_DUMP | NLM_F_ACK), NLM_F_ACK);
	memset(pa, 0, sizeof(pa));
	memset(fa, 0, sizeof(fa));
	memset(ba, 0, sizeof(ba));
	ck_assert_int_eq(genlmsg_parse(nlh, 0, top, MAGNET_A_MAX, NULL), 0);
	if (top[MAGNET_A_PROBE])
		ck_assert_int_eq(nla_parse_nested(pa, MAGNET_PROBE_A_MAX,
						  top[MAGNET_A_PROBE], NULL), 0);
	if (top[MAGNET_A_FILTER])
		ck_assert_int_eq(nla_parse_nested(fa, MAGNET_FILTER_A_MAX,
						  top[MAGNET_A_FILTER], NULL), 0);
	if (top[MAGNET_A_BUFFER])
		ck_assert_int_eq(nla_parse_nested(ba, MAGNET_BUFFER_A_MAX,
						  top[MAGNET_A_BUFFER], NULL), 0);
	ck_assert_ptr_null(top[MAGNET_A_CPU_STATS]);
	ck_assert_ptr_null(top[MAGNET_A_ALARM]);
	ck_assert_ptr_null(top[MAGNET_A_GENERATION]);
}

/* Exactly these attributes are present in tb[0..max]. */
static void only(struct nlattr **tb, int max, __u32 bits)
{
	int i;

	for (i = 0; i <= max; i++)
		ck_assert_msg(!!tb[i] == !!(bits & (1U << i)),
			      "attribute %d %s", i, tb[i] ? "unexpected" : "missing");
}

#define B(x)	(1U << (x))

static void expect_uint(struct nlattr *a, int width, __u64 v)
{
	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq(nla_len(a), width);
	switch (width) {
	case 1:
		ck_assert_uint_eq(nla_get_u8(a), v);
		break;
	case 2:
		ck_assert_uint_eq(nla_get_u16(a), v);
		break;
	case 4:
		ck_assert_uint_eq(nla_get_u32(a), v);
		break;
	case 8:
		ck_assert_uint_eq(nla_get_u64(a), v);
		break;
	}
}

/* NLA_NUL_STRING: the terminating NUL is inside the attribute. */
static void expect_str(struct nlattr *a, const char *s)
{
	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq(nla_len(a), strlen(s) + 1);
	ck_assert_str_eq(nla_data(a), s);
}

/* ---- value parsers ---- */

START_TEST(numbers)
{
	__u64 v;

	ck_assert_int_eq(ctl_parse_u64("0", 10, &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(ctl_parse_u64("42", 100, &v), 0);
	ck_assert_uint_eq(v, 42);
	ck_assert_int_eq(ctl_parse_u64("0x1F", UINT64_MAX, &v), 0);
	ck_assert_uint_eq(v, 31);
	ck_assert_int_eq(ctl_parse_u64("010", 100, &v), 0);
	ck_assert_uint_eq(v, 10);			/* decimal, not octal */
	ck_assert_int_eq(ctl_parse_u64("18446744073709551615", UINT64_MAX, &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	ck_assert_int_eq(ctl_parse_u64("0xffffffffffffffff", UINT64_MAX, &v), 0);
	ck_assert_int_eq(ctl_parse_u64("18446744073709551616", UINT64_MAX, &v), -ERANGE);
	ck_assert_int_eq(ctl_parse_u64("0x10000000000000000", UINT64_MAX, &v), -ERANGE);
	ck_assert_int_eq(ctl_parse_u64("7", 6, &v), -ERANGE);
	ck_assert_int_eq(ctl_parse_u64("", 6, &v), -EINVAL);
	ck_assert_int_eq(ctl_parse_u64("-1", 6, &v), -EINVAL);
	ck_assert_int_eq(ctl_parse_u64("+1", 6, &v), -EINVAL);
	ck_assert_int_eq(ctl_parse_u64(" 1", 6, &v), -EINVAL);
	ck_assert_int_eq(ctl_parse_u64("1 ", 6, &v), -EINVAL);
	ck_assert_int_eq(ctl_parse_u64("1x", 6, &v), -EINVAL);
	ck_assert_int_eq(ctl_parse_u64("0x", 6, &v), -EINVAL);
	ck_assert_int_eq(ctl_parse_u64("0xg", 6, &v), -EINVAL);
	ck_assert_int_eq(ctl_parse_u64("1.5", 6, &v), -EINVAL);
	ck_assert(ctl_is_number("123"));
	ck_assert(!ctl_is_number(""));
	ck_assert(!ctl_is_number("12a"));
	ck_assert(!ctl_is_number("0x12"));
}
END_TEST

START_TEST(sizes)
{
	static const struct {
		const char *s;
		__u64 v;
	} ok[] = {
		{ "4096", 4096 }, { "64K", 65536 }, { "64KiB", 65536 },
		{ "64k", 65536 }, { "4M", 4194304 }, { "4MiB", 4194304 },
		{ "1G", 1073741824 }, { "1GiB", 1073741824 }, { "2g", 2147483648ULL },
		{ "0x10K", 16384 }, { "3M", 3145728 }, { "0", 0 },
		{ "17179869183G", 17179869183ULL << 30 },
	};
	static const char *const bad[] = {
		"", "M", "4X", "4 M", "-4M", "4MB", "4Mi", "4.5M", "4T", "K4",
	};
	unsigned int i;
	__u64 v;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ck_assert_msg(!ctl_parse_size(ok[i].s, &v), "%s refused", ok[i].s);
		ck_assert_uint_eq(v, ok[i].v);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(ctl_parse_size(bad[i], &v) == -EINVAL, "%s accepted", bad[i]);
	ck_assert_int_eq(ctl_parse_size("17179869184G", &v), -ERANGE);
	ck_assert_int_eq(ctl_parse_size("99999999999999999999", &v), -ERANGE);
}
END_TEST

START_TEST(durations)
{
	static const struct {
		const char *s;
		__u64 ns;
	} ok[] = {
		{ "0", 0 }, { "0.0", 0 }, { "0ns", 0 }, { "5ns", 5 },
		{ "100us", 100000 }, { "1ms", 1000000 }, { "2s", 2000000000 },
		{ "1.5ms", 1500000 }, { "0.25s", 250000000 }, { "1.000001s", 1000001000 },
		{ "2.5us", 2500 }, { "1.0ns", 1 }, { "1.500000000s", 1500000000 },
		{ "18446744073709551615ns", UINT64_MAX },
	};
	static const char *const bad[] = {
		"", "5", "1.5", "ms", "1 ms", "-1ms", "+1ms", "1.5ns", "0.0000000001s",
		"1.ms", ".5ms", "1m", "1h", "1msx", "1sec", "0x10ms",
	};
	unsigned int i;
	__u64 v;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ck_assert_msg(!ctl_parse_duration(ok[i].s, &v), "%s refused", ok[i].s);
		ck_assert_msg(v == ok[i].ns, "%s: %llu", ok[i].s, (unsigned long long)v);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(ctl_parse_duration(bad[i], &v) == -EINVAL, "%s accepted", bad[i]);
	ck_assert_int_eq(ctl_parse_duration("18446744073709551616ns", &v), -ERANGE);
	ck_assert_int_eq(ctl_parse_duration("18446744074s", &v), -ERANGE);
}
END_TEST

START_TEST(cpu_lists)
{
	__u64 m[CTL_CPU_WORDS];
	unsigned int w;
	char buf[256];

	ck_assert_int_eq(ctl_parse_cpus("0-3,5", m, &w), 0);
	ck_assert_uint_eq(w, 1);
	ck_assert_uint_eq(m[0], 0x2f);
	ctl_format_cpus(buf, sizeof(buf), m, w);
	ck_assert_str_eq(buf, "0-3,5");

	ck_assert_int_eq(ctl_parse_cpus("64", m, &w), 0);
	ck_assert_uint_eq(w, 2);
	ck_assert_uint_eq(m[0], 0);
	ck_assert_uint_eq(m[1], 1);

	ck_assert_int_eq(ctl_parse_cpus("8191", m, &w), 0);
	ck_assert_uint_eq(w, CTL_CPU_WORDS);
	ck_assert_uint_eq(m[CTL_CPU_WORDS - 1], 1ULL << 63);

	ck_assert_int_eq(ctl_parse_cpus("5,1,3-4,63-65", m, &w), 0);
	ctl_format_cpus(buf, sizeof(buf), m, w);
	ck_assert_str_eq(buf, "1,3-5,63-65");
	ck_assert_int_eq(ctl_parse_cpus("2-2", m, &w), 0);
	ctl_format_cpus(buf, sizeof(buf), m, w);
	ck_assert_str_eq(buf, "2");
	memset(m, 0, sizeof(m));
	ctl_format_cpus(buf, sizeof(buf), m, 1);
	ck_assert_str_eq(buf, "none");

	ck_assert_int_eq(ctl_parse_cpus("8192", m, &w), -ERANGE);
	ck_assert_int_eq(ctl_parse_cpus("99999", m, &w), -ERANGE);
	ck_assert_int_eq(ctl_parse_cpus("0-8192", m, &w), -ERANGE);
	ck_assert_int_eq(ctl_parse_cpus("99999999999999999999999", m, &w), -ERANGE);
	ck_assert_int_eq(ctl_parse_cpus("", m, &w), -EINVAL);
	ck_assert_int_eq(ctl_parse_cpus("3-1", m, &w), -EINVAL);
	ck_assert_int_eq(ctl_parse_cpus("1,,2", m, &w), -EINVAL);
	ck_assert_int_eq(ctl_parse_cpus("1,", m, &w), -EINVAL);
	ck_assert_int_eq(ctl_parse_cpus(",1", m, &w), -EINVAL);
	ck_assert_int_eq(ctl_parse_cpus("1-", m, &w), -EINVAL);
	ck_assert_int_eq(ctl_parse_cpus("-1", m, &w), -EINVAL);
	ck_assert_int_eq(ctl_parse_cpus("a", m, &w), -EINVAL);
	ck_assert_int_eq(ctl_parse_cpus("0x1", m, &w), -EINVAL);
	ck_assert_int_eq(ctl_parse_cpus("1 2", m, &w), -EINVAL);
}
END_TEST

START_TEST(targets_and_captures)
{
	char sym[16];
	__u32 off;
	bool has;
	__u16 len;
	__u8 arg;

	ck_assert_int_eq(ctl_parse_target("vfs_read", sym, sizeof(sym), &off, &has), 0);
	ck_assert_str_eq(sym, "vfs_read");
	ck_assert(!has);
	ck_assert_int_eq(ctl_parse_target("vfs_read+0x10", sym, sizeof(sym), &off, &has), 0);
	ck_assert_str_eq(sym, "vfs_read");
	ck_assert(has);
	ck_assert_uint_eq(off, 16);
	ck_assert_int_eq(ctl_parse_target("f.cold+4294967295", sym, sizeof(sym), &off, &has), 0);
	ck_assert_uint_eq(off, UINT32_MAX);
	ck_assert_int_eq(ctl_parse_target("f+4294967296", sym, sizeof(sym), &off, &has), -ERANGE);
	ck_assert_int_eq(ctl_parse_target("0123456789abcdef", sym, sizeof(sym), &off, &has), -ERANGE);
	ck_assert_int_eq(ctl_parse_target("", sym, sizeof(sym), &off, &has), -EINVAL);
	ck_assert_int_eq(ctl_parse_target("+4", sym, sizeof(sym), &off, &has), -EINVAL);
	ck_assert_int_eq(ctl_parse_target("f+", sym, sizeof(sym), &off, &has), -EINVAL);
	ck_assert_int_eq(ctl_parse_target("f+-1", sym, sizeof(sym), &off, &has), -EINVAL);
	ck_assert_int_eq(ctl_parse_target("f+x", sym, sizeof(sym), &off, &has), -EINVAL);
	ck_assert_int_eq(ctl_parse_target("f+1+2", sym, sizeof(sym), &off, &has), -EINVAL);
	ck_assert_int_eq(ctl_parse_target("f g", sym, sizeof(sym), &off, &has), -EINVAL);
	ck_assert_int_eq(ctl_parse_target("f@1", sym, sizeof(sym), &off, &has), -EINVAL);

	ck_assert_int_eq(ctl_parse_capture("64@1", &len, &arg), 0);
	ck_assert_uint_eq(len, 64);
	ck_assert_uint_eq(arg, 1);
	ck_assert_int_eq(ctl_parse_capture("64", &len, &arg), 0);
	ck_assert_uint_eq(arg, 0);
	ck_assert_int_eq(ctl_parse_capture("4096@5", &len, &arg), 0);
	ck_assert_int_eq(ctl_parse_capture("4097", &len, &arg), -ERANGE);
	ck_assert_int_eq(ctl_parse_capture("5000@1", &len, &arg), -ERANGE);
	ck_assert_int_eq(ctl_parse_capture("0", &len, &arg), -ERANGE);
	ck_assert_int_eq(ctl_parse_capture("64@6", &len, &arg), -ERANGE);
	ck_assert_int_eq(ctl_parse_capture("64@", &len, &arg), -EINVAL);
	ck_assert_int_eq(ctl_parse_capture("@1", &len, &arg), -EINVAL);
	ck_assert_int_eq(ctl_parse_capture("-64", &len, &arg), -EINVAL);
	ck_assert_int_eq(ctl_parse_capture("64@1@2", &len, &arg), -EINVAL);
	ck_assert_int_eq(ctl_parse_capture("x@1", &len, &arg), -EINVAL);

	/* 4096 - 8 (struct magnet_capture) - 8 * nargs [- 16 for a kretprobe] */
	ck_assert_uint_eq(ctl_capture_max(MAGNET_PROBE_KPROBE, 0), 4088);
	ck_assert_uint_eq(ctl_capture_max(MAGNET_PROBE_KPROBE, 6), 4040);
	ck_assert_uint_eq(ctl_capture_max(MAGNET_PROBE_KRETPROBE, 6), 4024);
}
END_TEST

START_TEST(formats)
{
	char buf[64];

	ctl_format_size(buf, sizeof(buf), 4194304);
	ck_assert_str_eq(buf, "4M");
	ctl_format_size(buf, sizeof(buf), 1073741824);
	ck_assert_str_eq(buf, "1G");
	ctl_format_size(buf, sizeof(buf), 65536);
	ck_assert_str_eq(buf, "64K");
	ctl_format_size(buf, sizeof(buf), 1000);
	ck_assert_str_eq(buf, "1000");
	ctl_format_size(buf, sizeof(buf), 0);
	ck_assert_str_eq(buf, "0");
	ctl_format_duration(buf, sizeof(buf), 1000000);
	ck_assert_str_eq(buf, "1ms");
	ctl_format_duration(buf, sizeof(buf), 1500000);
	ck_assert_str_eq(buf, "1500us");
	ctl_format_duration(buf, sizeof(buf), 3000000000ULL);
	ck_assert_str_eq(buf, "3s");
	ctl_format_duration(buf, sizeof(buf), 7);
	ck_assert_str_eq(buf, "7ns");
	ctl_format_duration(buf, sizeof(buf), 0);
	ck_assert_str_eq(buf, "0");
}
END_TEST

START_TEST(word_matching)
{
	static const char *const w[] = { "add", "del", "disable", "list", NULL };
	char c[64];

	ck_assert_int_eq(ctl_match("add", w, c, sizeof(c)), 0);
	ck_assert_int_eq(ctl_match("a", w, c, sizeof(c)), 0);
	ck_assert_int_eq(ctl_match("l", w, c, sizeof(c)), 3);
	ck_assert_int_eq(ctl_match("de", w, c, sizeof(c)), 1);
	ck_assert_int_eq(ctl_match("di", w, c, sizeof(c)), 2);
	ck_assert_int_eq(ctl_match("d", w, c, sizeof(c)), -EAMBIGUOUS);
	ck_assert_str_eq(c, "del, disable");
	ck_assert_int_eq(ctl_match("x", w, c, sizeof(c)), -ENOENT);
	ck_assert_int_eq(ctl_match("", w, c, sizeof(c)), -ENOENT);
	ck_assert_int_eq(ctl_match("adds", w, c, sizeof(c)), -ENOENT);
	ck_assert_int_eq(ctl_match("ADD", w, c, sizeof(c)), -ENOENT);
}
END_TEST

/* ---- command forms ---- */

START_TEST(probe_set_forms)
{
	parse_ok("probe add set net-rx");
	ck_assert_ptr_nonnull(R.set);
	parse_ok("probe add set udp capture 4072 -j");
	usage_error("probe add set", "SET after 'set'");
	usage_error("probe add set nope", "no probe set 'nope' (sets: udp-journey tcp-traffic net-rx net-jobs net-dev sched)");
	usage_error("probe add set udp-journey capture 4081", "out of range");
	usage_error("probe add set udp-journey capture 0", "capture 0");
	usage_error("probe add set udp-journey capture 1 capture 2", "given twice");
	usage_error("probe add set udp-journey args 2", "args");
	parse_ok("probe del set tcp");
	ck_assert_ptr_nonnull(R.set);
	parse_ok("probe del set");	/* a probe named "set" */
	ck_assert_ptr_null(R.set);
	parse_ok("probe sets -m");
	ck_assert(R.offline);
}
END_TEST

START_TEST(probe_add_forms)
{
	parse_ok("probe add kprobe vfs_read");
	build(MAGNET_CMD_PROBE_ADD, false);
	only(top, MAGNET_A_MAX, B(MAGNET_A_PROBE));
	only(pa, MAGNET_PROBE_A_MAX, B(MAGNET_PROBE_A_TYPE) | B(MAGNET_PROBE_A_SYMBOL));
	expect_uint(pa[MAGNET_PROBE_A_TYPE], 1, MAGNET_PROBE_KPROBE);
	expect_str(pa[MAGNET_PROBE_A_SYMBOL], "vfs_read");
	ck_assert_int_eq(R.mode, PR_TEXT);
	ck_assert_str_eq(R.cmd->name, "add");

	parse_ok("probe add kretprobe tcp_sendmsg args 3 capture 64@1 name tx handler sock notify disabled");
	build(MAGNET_CMD_PROBE_ADD, false);
	only(pa, MAGNET_PROBE_A_MAX, B(MAGNET_PROBE_A_TYPE) | B(MAGNET_PROBE_A_SYMBOL) |
	     B(MAGNET_PROBE_A_NARGS) | B(MAGNET_PROBE_A_CAPTURE_LEN) |
	     B(MAGNET_PROBE_A_CAPTURE_ARG) | B(MAGNET_PROBE_A_NAME) |
	     B(MAGNET_PROBE_A_HANDLER) | B(MAGNET_PROBE_A_FLAGS));
	expect_uint(pa[MAGNET_PROBE_A_TYPE], 1, MAGNET_PROBE_KRETPROBE);
	expect_str(pa[MAGNET_PROBE_A_SYMBOL], "tcp_sendmsg");
	expect_uint(pa[MAGNET_PROBE_A_NARGS], 1, 3);
	expect_uint(pa[MAGNET_PROBE_A_CAPTURE_LEN], 2, 64);
	expect_uint(pa[MAGNET_PROBE_A_CAPTURE_ARG], 1, 1);
	expect_str(pa[MAGNET_PROBE_A_NAME], "tx");
	expect_str(pa[MAGNET_PROBE_A_HANDLER], "sock");
	expect_uint(pa[MAGNET_PROBE_A_FLAGS], 4, MAGNET_PROBE_F_NOTIFY | MAGNET_PROBE_F_DISABLED);

	/* Keywords in any order, abbreviated; the offset in hex. */
	parse_ok("pr a kp vfs_read+0x10 d no na no ca 4000 h generic a 6 -j");
	build(MAGNET_CMD_PROBE_ADD, false);
	expect_uint(pa[MAGNET_PROBE_A_OFFSET], 4, 16);
	expect_str(pa[MAGNET_PROBE_A_SYMBOL], "vfs_read");
	expect_uint(pa[MAGNET_PROBE_A_NARGS], 1, 6);
	expect_uint(pa[MAGNET_PROBE_A_CAPTURE_LEN], 2, 4000);
	expect_uint(pa[MAGNET_PROBE_A_CAPTURE_ARG], 1, 0);
	expect_str(pa[MAGNET_PROBE_A_NAME], "no");
	expect_str(pa[MAGNET_PROBE_A_HANDLER], "generic");
	expect_uint(pa[MAGNET_PROBE_A_FLAGS], 4, MAGNET_PROBE_F_NOTIFY | MAGNET_PROBE_F_DISABLED);
	ck_assert_int_eq(R.mode, PR_JSON);

	parse_ok("probe add kprobe vfs_read+0");
	build(MAGNET_CMD_PROBE_ADD, false);
	expect_uint(pa[MAGNET_PROBE_A_OFFSET], 4, 0);

	/* The largest captures that fit one record. */
	parse_ok("probe add kretprobe vfs_read args 6 capture 4024@5");
	build(MAGNET_CMD_PROBE_ADD, false);
	expect_uint(pa[MAGNET_PROBE_A_CAPTURE_LEN], 2, 4024);
	expect_uint(pa[MAGNET_PROBE_A_CAPTURE_ARG], 1, 5);
	parse_ok("probe add kprobe vfs_read capture 4088");
	/* Another handler's layout is the kernel's to judge. */
	parse_ok("probe add kprobe tcp_sendmsg handler sock capture 4096");

	parse_ok("-m probe add kprobe vfs_read args 0");
	build(MAGNET_CMD_PROBE_ADD, false);
	expect_uint(pa[MAGNET_PROBE_A_NARGS], 1, 0);
	ck_assert_int_eq(R.mode, PR_MACHINE);
}
END_TEST

START_TEST(probe_other_forms)
{
	parse_ok("probe del 16");
	build(MAGNET_CMD_PROBE_DEL, false);
	only(pa, MAGNET_PROBE_A_MAX, B(MAGNET_PROBE_A_ID));
	expect_uint(pa[MAGNET_PROBE_A_ID], 2, 16);

	parse_ok("probe del 65535");
	build(MAGNET_CMD_PROBE_DEL, false);
	expect_uint(pa[MAGNET_PROBE_A_ID], 2, 65535);

	parse_ok("probe del vfs_read%return");
	build(MAGNET_CMD_PROBE_DEL, false);
	only(pa, MAGNET_PROBE_A_MAX, B(MAGNET_PROBE_A_NAME));
	expect_str(pa[MAGNET_PROBE_A_NAME], "vfs_read%return");

	parse_ok("probe list");
	build(MAGNET_CMD_PROBE_GET, true);
	only(top, MAGNET_A_MAX, 0);
	parse_ok("probe");
	build(MAGNET_CMD_PROBE_GET, true);
	ck_assert_str_eq(R.cmd->name, "list");
	parse_ok("probe -j");
	ck_assert_str_eq(R.cmd->name, "list");
	ck_assert_int_eq(R.mode, PR_JSON);
	parse_ok("pr l -j");
	ck_assert_int_eq(R.mode, PR_JSON);
	parse_ok("--json probe list");
	ck_assert_int_eq(R.mode, PR_JSON);
	parse_ok("probe list --machine");
	ck_assert_int_eq(R.mode, PR_MACHINE);

	parse_ok("probe show rd -j");
	build(MAGNET_CMD_PROBE_GET, false);
	only(pa, MAGNET_PROBE_A_MAX, B(MAGNET_PROBE_A_NAME));
	expect_str(pa[MAGNET_PROBE_A_NAME], "rd");
	ck_assert_int_eq(R.mode, PR_JSON);

	/* enable, disable, notify: a read-modify-write of FLAGS at run time */
	parse_ok("probe enable 17");
	build(MAGNET_CMD_PROBE_SET, false);
	only(pa, MAGNET_PROBE_A_MAX, B(MAGNET_PROBE_A_ID));
	ck_assert_uint_eq(R.flags_set, 0);
	ck_assert_uint_eq(R.flags_clear, MAGNET_PROBE_F_DISABLED);
	parse_ok("probe disable rd");
	build(MAGNET_CMD_PROBE_SET, false);
	ck_assert_uint_eq(R.flags_set, MAGNET_PROBE_F_DISABLED);
	ck_assert_uint_eq(R.flags_clear, 0);
	parse_ok("probe notify rd on");
	ck_assert_uint_eq(R.flags_set, MAGNET_PROBE_F_NOTIFY);
	ck_assert_uint_eq(R.flags_clear, 0);
	parse_ok("probe no 17 of");
	build(MAGNET_CMD_PROBE_SET, false);
	ck_assert_uint_eq(R.flags_set, 0);
	ck_assert_uint_eq(R.flags_clear, MAGNET_PROBE_F_NOTIFY);
	expect_uint(pa[MAGNET_PROBE_A_ID], 2, 17);
}
END_TEST

START_TEST(filter_forms)
{
	__u64 *cpus;
	struct statfs sfs;
	struct stat st;

	parse_ok("filter add 16 tgid 1234");
	build(MAGNET_CMD_FILTER_ADD, false);
	only(top, MAGNET_A_MAX, B(MAGNET_A_PROBE) | B(MAGNET_A_FILTER));
	only(pa, MAGNET_PROBE_A_MAX, B(MAGNET_PROBE_A_ID));
	expect_uint(pa[MAGNET_PROBE_A_ID], 2, 16);
	only(fa, MAGNET_FILTER_A_MAX, B(MAGNET_FILTER_A_KIND) |
	     B(MAGNET_FILTER_A_ACTION) | B(MAGNET_FILTER_A_VALUE));
	expect_uint(fa[MAGNET_FILTER_A_KIND], 1, MAGNET_FILTER_TGID);
	expect_uint(fa[MAGNET_FILTER_A_ACTION], 1, MAGNET_FILTER_INCLUDE);
	expect_uint(fa[MAGNET_FILTER_A_VALUE], 8, 1234);

	parse_ok("filter add rd exclude cpu 0-3,5");
	build(MAGNET_CMD_FILTER_ADD, false);
	expect_str(pa[MAGNET_PROBE_A_NAME], "rd");
	only(fa, MAGNET_FILTER_A_MAX, B(MAGNET_FILTER_A_KIND) |
	     B(MAGNET_FILTER_A_ACTION) | B(MAGNET_FILTER_A_CPUS));
	expect_uint(fa[MAGNET_FILTER_A_KIND], 1, MAGNET_FILTER_CPU);
	expect_uint(fa[MAGNET_FILTER_A_ACTION], 1, MAGNET_FILTER_EXCLUDE);
	ck_assert_int_eq(nla_len(fa[MAGNET_FILTER_A_CPUS]), 8);
	cpus = nla_data(fa[MAGNET_FILTER_A_CPUS]);
	ck_assert_uint_eq(cpus[0], 0x2f);

	/* Bitmap words: CPU n is bit n % 64 of word n / 64; 8192 CPUs at most. */
	parse_ok("filter add rd cpu 1,64,8191");
	build(MAGNET_CMD_FILTER_ADD, false);
	ck_assert_int_eq(nla_len(fa[MAGNET_FILTER_A_CPUS]), 1024);
	cpus = nla_data(fa[MAGNET_FILTER_A_CPUS]);
	ck_assert_uint_eq(cpus[0], 2);
	ck_assert_uint_eq(cpus[1], 1);
	ck_assert_uint_eq(cpus[2], 0);
	ck_assert_uint_eq(cpus[127], 1ULL << 63);

	parse_ok("fi a rd i abstract 0xffff888012345678");
	build(MAGNET_CMD_FILTER_ADD, false);
	expect_uint(fa[MAGNET_FILTER_A_KIND], 1, MAGNET_FILTER_ABSTRACT_ID);
	expect_uint(fa[MAGNET_FILTER_A_ACTION], 1, MAGNET_FILTER_INCLUDE);
	expect_uint(fa[MAGNET_FILTER_A_VALUE], 8, 0xffff888012345678ULL);

	parse_ok("filter add rd e ab 18446744073709551615");
	build(MAGNET_CMD_FILTER_ADD, false);
	expect_uint(fa[MAGNET_FILTER_A_ACTION], 1, MAGNET_FILTER_EXCLUDE);
	expect_uint(fa[MAGNET_FILTER_A_VALUE], 8, UINT64_MAX);

	parse_ok("filter add rd tgid 0");
	parse_ok("filter add rd tgid 4194304");

	parse_ok("filter add rd cgroup 4242");
	build(MAGNET_CMD_FILTER_ADD, false);
	expect_uint(fa[MAGNET_FILTER_A_KIND], 1, MAGNET_FILTER_CGROUP);
	expect_uint(fa[MAGNET_FILTER_A_VALUE], 8, 4242);

	/* A cgroup2 directory gives its inode number, where there is one. */
	if (!statfs("/sys/fs/cgroup", &sfs) && sfs.f_type == 0x63677270 &&
	    !stat("/sys/fs/cgroup", &st)) {
		parse_ok("filter add rd exclude cgroup /sys/fs/cgroup");
		build(MAGNET_CMD_FILTER_ADD, false);
		expect_uint(fa[MAGNET_FILTER_A_VALUE], 8, st.st_ino);
		expect_uint(fa[MAGNET_FILTER_A_ACTION], 1, MAGNET_FILTER_EXCLUDE);
	}

	parse_ok("filter del rd 3");
	build(MAGNET_CMD_FILTER_DEL, false);
	only(fa, MAGNET_FILTER_A_MAX, B(MAGNET_FILTER_A_ID));
	expect_uint(fa[MAGNET_FILTER_A_ID], 4, 3);
	expect_str(pa[MAGNET_PROBE_A_NAME], "rd");

	parse_ok("filter list 16 -m");
	build(MAGNET_CMD_PROBE_GET, false);
	only(top, MAGNET_A_MAX, B(MAGNET_A_PROBE));
	only(pa, MAGNET_PROBE_A_MAX, B(MAGNET_PROBE_A_ID));
	ck_assert_int_eq(R.mode, PR_MACHINE);
}
END_TEST

START_TEST(sample_buffer_stats_monitor_forms)
{
	parse_ok("sample set rd every 100");
	build(MAGNET_CMD_SAMPLE_SET, false);
	only(pa, MAGNET_PROBE_A_MAX, B(MAGNET_PROBE_A_NAME) | B(MAGNET_PROBE_A_SAMPLE_EVERY));
	expect_uint(pa[MAGNET_PROBE_A_SAMPLE_EVERY], 4, 100);

	parse_ok("sample set 16 interval 1ms");
	build(MAGNET_CMD_SAMPLE_SET, false);
	only(pa, MAGNET_PROBE_A_MAX, B(MAGNET_PROBE_A_ID) |
	     B(MAGNET_PROBE_A_SAMPLE_INTERVAL_NS));
	expect_uint(pa[MAGNET_PROBE_A_SAMPLE_INTERVAL_NS], 8, 1000000);

	parse_ok("sa s 16 i 2.5us e 4294967295");
	build(MAGNET_CMD_SAMPLE_SET, false);
	expect_uint(pa[MAGNET_PROBE_A_SAMPLE_EVERY], 4, UINT32_MAX);
	expect_uint(pa[MAGNET_PROBE_A_SAMPLE_INTERVAL_NS], 8, 2500);

	parse_ok("sample set 16 every 1 interval 0");
	build(MAGNET_CMD_SAMPLE_SET, false);
	expect_uint(pa[MAGNET_PROBE_A_SAMPLE_EVERY], 4, 1);
	expect_uint(pa[MAGNET_PROBE_A_SAMPLE_INTERVAL_NS], 8, 0);

	parse_ok("sample clear 16");
	build(MAGNET_CMD_SAMPLE_SET, false);
	only(pa, MAGNET_PROBE_A_MAX, B(MAGNET_PROBE_A_ID) | B(MAGNET_PROBE_A_SAMPLE_EVERY) |
	     B(MAGNET_PROBE_A_SAMPLE_INTERVAL_NS));
	expect_uint(pa[MAGNET_PROBE_A_SAMPLE_EVERY], 4, 1);
	expect_uint(pa[MAGNET_PROBE_A_SAMPLE_INTERVAL_NS], 8, 0);

	parse_ok("buffer show");
	build(MAGNET_CMD_BUFFER_GET, false);
	only(top, MAGNET_A_MAX, 0);
	parse_ok("buffer");
	build(MAGNET_CMD_BUFFER_GET, false);
	parse_ok("b -j");
	build(MAGNET_CMD_BUFFER_GET, false);
	ck_assert_int_eq(R.mode, PR_JSON);

	parse_ok("buffer set size 4M mode overwrite");
	build(MAGNET_CMD_BUFFER_SET, false);
	only(top, MAGNET_A_MAX, B(MAGNET_A_BUFFER));
	only(ba, MAGNET_BUFFER_A_MAX, B(MAGNET_BUFFER_A_SIZE) | B(MAGNET_BUFFER_A_MODE));
	expect_uint(ba[MAGNET_BUFFER_A_SIZE], 8, 4194304);
	expect_uint(ba[MAGNET_BUFFER_A_MODE], 1, 1);
	parse_ok("buffer set m d");
	build(MAGNET_CMD_BUFFER_SET, false);
	only(ba, MAGNET_BUFFER_A_MAX, B(MAGNET_BUFFER_A_MODE));
	expect_uint(ba[MAGNET_BUFFER_A_MODE], 1, 0);
	parse_ok("buffer set size 65536");
	build(MAGNET_CMD_BUFFER_SET, false);
	only(ba, MAGNET_BUFFER_A_MAX, B(MAGNET_BUFFER_A_SIZE));
	expect_uint(ba[MAGNET_BUFFER_A_SIZE], 8, 65536);
	/* Out of the kernel's range (64K..1G) but a power of two: its call. */
	parse_ok("buffer set size 2G");
	parse_ok("buffer set fair 30");
	build(MAGNET_CMD_BUFFER_SET, false);
	only(ba, MAGNET_BUFFER_A_MAX, B(MAGNET_BUFFER_A_FAIR_FILL));
	expect_uint(ba[MAGNET_BUFFER_A_FAIR_FILL], 1, 30);
	parse_ok("buffer set fair off size 1M");
	build(MAGNET_CMD_BUFFER_SET, false);
	only(ba, MAGNET_BUFFER_A_MAX, B(MAGNET_BUFFER_A_FAIR_FILL) | B(MAGNET_BUFFER_A_SIZE));
	expect_uint(ba[MAGNET_BUFFER_A_FAIR_FILL], 1, 0);

	parse_ok("stats");
	build(MAGNET_CMD_STATS_GET, true);
	only(top, MAGNET_A_MAX, 0);
	parse_ok("st -j");
	ck_assert_int_eq(R.mode, PR_JSON);
	parse_ok("-m stats");
	ck_assert_int_eq(R.mode, PR_MACHINE);

	parse_ok("monitor");
	ck_assert_int_eq(R.count, -1);
	ck_assert_int_eq(R.genl_cmd, 0);
	parse_ok("monitor -c 5");
	ck_assert_int_eq(R.count, 5);
	parse_ok("mo -j --count 7");
	ck_assert_int_eq(R.count, 7);
	ck_assert_int_eq(R.mode, PR_JSON);
	parse_ok("monitor count 3 -m");
	ck_assert_int_eq(R.count, 3);
	ck_assert_int_eq(R.mode, PR_MACHINE);
}
END_TEST

START_TEST(help_forms)
{
	static const char *const helps[] = {
		"help", "-h", "--help", "h", "help probe", "help st", "probe help",
		"filter h", "stats help", "monitor help", "buffer help", "sample help",
		/* -h where options may follow the words, or a word is due */
		"probe list -h", "probe -h", "filter -h", "probe list -j --help",
		"filter add 16 tgid 1 -h", "probe add kprobe vfs_read args 3 -h junk",
		"probe add -h", "filter add -h", "stats -j -h", "monitor -c 2 --help",
		"sample set 16 every 2 -h", "buffer set -h", "help -h",
	};
	unsigned int i;
	int argc, ret;

	for (i = 0; i < sizeof(helps) / sizeof(helps[0]); i++) {
		argc = split(helps[i]);
		cap_begin();
		ret = magnet_ctl_main(argc, argv_buf);
		cap_end();
		ck_assert_msg(ret == 0, "%s: exit %d", helps[i], ret);
		ck_assert_msg(out_buf && strstr(out_buf, "usage: magnet-ctl"),
			      "%s: no usage on stdout", helps[i]);
		ck_assert_msg(!err_len, "%s: stderr %s", helps[i], err_buf);
	}
	/* The global help has every object's usage. */
	argc = split("help");
	cap_begin();
	magnet_ctl_main(argc, argv_buf);
	cap_end();
	ck_assert(strstr(out_buf, "magnet-ctl probe add kprobe|kretprobe|fentry SYMBOL[+OFFSET]"));
	ck_assert(strstr(out_buf, "magnet-ctl filter add PROBE [include|exclude] tgid PID"));
	ck_assert(strstr(out_buf, "magnet-ctl sample set PROBE [every N] [interval DURATION]"));
	ck_assert(strstr(out_buf, "magnet-ctl buffer set [size SIZE] [mode discard|overwrite]"));
	ck_assert(strstr(out_buf, "magnet-ctl stats [-j|-m]"));
	ck_assert(strstr(out_buf, "magnet-ctl monitor [-j|-m] [-c COUNT]"));
	/* An object's help has only its own. */
	argc = split("sample help");
	cap_begin();
	magnet_ctl_main(argc, argv_buf);
	cap_end();
	ck_assert(strstr(out_buf, "sample clear PROBE"));
	ck_assert(!strstr(out_buf, "probe add"));
	/* So is OBJECT ... -h. */
	argc = split("probe list -h");
	cap_begin();
	magnet_ctl_main(argc, argv_buf);
	cap_end();
	ck_assert(strstr(out_buf, "usage: magnet-ctl probe add"));
	ck_assert(!strstr(out_buf, "filter add"));
	argc = split("filter add 16 -h");
	cap_begin();
	magnet_ctl_main(argc, argv_buf);
	cap_end();
	ck_assert(strstr(out_buf, "usage: magnet-ctl filter add"));
	ck_assert(!strstr(out_buf, "probe add"));

	argc = split("-V");
	cap_begin();
	ck_assert_int_eq(magnet_ctl_main(argc, argv_buf), 0);
	cap_end();
	ck_assert(strstr(out_buf, "magnet-ctl "));
	argc = split("probe list -V");
	cap_begin();
	ck_assert_int_eq(magnet_ctl_main(argc, argv_buf), 0);
	cap_end();
	ck_assert(!strncmp(out_buf, "magnet-ctl ", 11));
	ck_assert(!err_len);
}
END_TEST

/* ---- malformed forms ---- */

static const struct {
	const char *line;
	const char *want;
} bad_lines[] = {
	{ "", "missing OBJECT" },
	{ "bogus", "unknown object 'bogus'" },
	{ "s", "ambiguous object 's': sample, stats" },
	{ "-x probe list", "unknown option '-x'" },
	{ "help bogus", "unknown object 'bogus'" },
	{ "help probe extra", "unexpected 'extra'" },
	{ "probe list junk -h", "unexpected 'junk'" },	/* the error first */
	{ "probe frob", "unknown command 'frob'" },
	{ "probe d 16", "ambiguous command 'd': del, disable" },
	{ "probe add", "missing kprobe|kretprobe|fentry|tracepoint|set" },
	{ "probe add tracepoint", "missing SUBSYSTEM:EVENT" },
	{ "probe add tracepoint sched_switch", "bad tracepoint 'sched_switch' (expected SUBSYSTEM:EVENT" },
	{ "probe add tracepoint sched:", "bad tracepoint 'sched:'" },
	{ "probe add tracepoint :sched_switch", "bad tracepoint ':sched_switch'" },
	{ "probe add tracepoint a:b:c", "bad tracepoint 'a:b:c'" },
	{ "probe add tracepoint sched:sched_switch+4", "a tracepoint probe takes no +OFFSET" },
	{ "probe add uprobe vfs_read", "unknown probe type 'uprobe'" },
	{ "probe add k vfs_read", "ambiguous probe type 'k': kprobe, kretprobe" },
	{ "probe add kprobe", "missing SYMBOL" },
	{ "probe add kprobe +4", "bad target '+4'" },
	{ "probe add kprobe vfs_read+", "bad target 'vfs_read+'" },
	{ "probe add kprobe vfs_read+x", "bad target 'vfs_read+x'" },
	{ "probe add kprobe vfs_read+-4", "bad target" },
	{ "probe add kprobe vfs_read+4294967296", "offset in 'vfs_read+4294967296' out of range" },
	{ "probe add kretprobe vfs_read+4", "a kretprobe takes no +OFFSET" },
	{ "probe add fentry vfs_read+4", "an fentry probe takes no +OFFSET" },
	{ "probe add kprobe vfs_read args", "missing the number of arguments" },
	{ "probe add kprobe vfs_read args 7", "args 7: out of range (0..6)" },
	{ "probe add kprobe vfs_read args -1", "args -1: not a number" },
	{ "probe add kprobe vfs_read args x", "args x: not a number" },
	{ "probe add kprobe vfs_read args 99999999999999999999", "out of range" },
	{ "probe add kprobe vfs_read args 1 args 2", "'args' given twice" },
	{ "probe add kprobe vfs_read capture", "missing LEN[@ARG]" },
	{ "probe add kprobe vfs_read capture 5000", "capture 5000: out of range" },
	{ "probe add kprobe vfs_read capture 5000@1", "capture 5000@1: out of range" },
	{ "probe add kprobe vfs_read capture 0", "capture 0: out of range" },
	{ "probe add kprobe vfs_read capture 64@6", "capture 64@6: out of range" },
	{ "probe add kprobe vfs_read capture 64@x", "capture 64@x: expected LEN[@ARG]" },
	{ "probe add kprobe vfs_read capture -64", "expected LEN[@ARG]" },
	{ "probe add kprobe vfs_read capture 4089", "at most 4088 bytes" },
	{ "probe add kretprobe vfs_read args 6 capture 4025", "at most 4024 bytes fit one record" },
	{ "probe add kprobe vfs_read name", "missing NAME" },
	{ "probe add kprobe vfs_read name 123", "cannot be a number" },
	{ "probe add kprobe vfs_read handler", "missing HANDLER" },
	{ "probe add kprobe vfs_read notify notify", "'notify' given twice" },
	{ "probe add kprobe vfs_read bogus", "unknown keyword 'bogus'" },
	{ "probe add kprobe vfs_read 3", "unknown keyword '3'" },
	{ "probe add kprobe vfs_read -x", "unknown keyword '-x'" },
	{ "probe del", "missing ID|NAME" },
	{ "probe del 16 junk", "unexpected 'junk'" },
	{ "probe del 70000", "probe id 70000: out of range (16..65535)" },
	{ "probe del 5", "probe id 5: out of range (16..65535)" },
	{ "probe list junk", "unexpected 'junk'" },
	{ "probe show", "missing ID|NAME" },
	{ "probe enable", "missing ID|NAME" },
	{ "probe disable 16 now", "unexpected 'now'" },
	{ "probe notify 16", "missing on|off" },
	{ "probe notify 16 maybe", "unknown value 'maybe' (expected on, off)" },
	{ "probe notify 16 o", "ambiguous value 'o': on, off" },
	{ "filter", "missing command" },
	{ "filter add", "missing PROBE" },
	{ "filter add 16", "missing tgid|cpu|abstract|cgroup" },
	{ "filter add 16 include", "missing tgid|cpu|abstract|cgroup" },
	{ "filter add 16 c 1", "ambiguous keyword 'c': cpu, cgroup" },
	{ "filter add 16 include include 1", "unknown filter kind 'include'" },
	{ "filter add 16 pid 1", "unknown keyword 'pid'" },
	{ "filter add 16 tgid", "missing the process id" },
	{ "filter add 16 tgid -5", "tgid -5: not a number" },
	{ "filter add 16 tgid 4194305", "tgid 4194305: out of range (0..4194304)" },
	{ "filter add 16 tgid 1 extra", "unexpected 'extra'" },
	{ "filter add 16 cpu 99999", "cpu 99999: out of range (0..8191)" },
	{ "filter add 16 cpu 8192", "cpu 8192: out of range" },
	{ "filter add 16 cpu 3-1", "cpu 3-1: expected a CPU list" },
	{ "filter add 16 cpu 1,,2", "expected a CPU list" },
	{ "filter add 16 cpu", "missing a CPU list" },
	{ "filter add 16 abstract zz", "abstract zz: not a number" },
	{ "filter add 16 abstract 0x10000000000000000", "out of range" },
	{ "filter add 16 cgroup /nonexistent/magnet", "No such file or directory" },
	{ "filter add 16 cgroup /dev/null", "not a directory" },
	{ "filter add 16 cgroup /", "not a cgroup2 directory" },
	{ "filter add 16 cgroup 0", "cgroup 0: bad cgroup id" },
	{ "filter add 16 cgroup ''", "cgroup: the path is empty (a cgroup2 directory or id)" },
	{ "filter del 16", "missing FILTER_ID" },
	{ "filter del 16 x", "filter id x: not a number" },
	{ "filter del 16 4294967296", "filter id 4294967296: out of range" },
	{ "filter list", "missing PROBE" },
	{ "sample", "missing command" },
	{ "sample set 16", "missing 'every N' or 'interval DURATION'" },
	{ "sample set 16 every", "missing N after 'every'" },
	{ "sample set 16 every -1", "every -1: not a number" },
	{ "sample set 16 every 4294967296", "every 4294967296: out of range" },
	{ "sample set 16 every 2 every 3", "'every' given twice" },
	{ "sample set 16 interval 5", "interval 5: expected a duration" },
	{ "sample set 16 interval 1.5ns", "interval 1.5ns: expected a duration" },
	{ "sample set 16 interval -1ms", "expected a duration" },
	{ "sample set 16 interval 99999999999s", "interval 99999999999s: out of range" },
	{ "sample set 16 often", "unknown keyword 'often'" },
	{ "sample clear", "missing PROBE" },
	{ "sample clear 16 every 2", "unexpected 'every'" },
	{ "buffer set", "missing 'size SIZE', 'mode discard|overwrite' or 'fair PERCENT'" },
	{ "buffer set fair 100", "fair 100: expected a percentage from 0 (off) to 99, or 'off'" },
	{ "buffer set fair", "missing PERCENT or 'off'" },
	{ "buffer set fair 5 fair 6", "'fair' given twice" },
	{ "buffer set size", "missing SIZE" },
	{ "buffer set size 3M", "size 3M: not a power of two" },
	{ "buffer set size 0", "size 0: not a power of two" },
	{ "buffer set size 4X", "size 4X: expected bytes" },
	{ "buffer set size -4M", "expected bytes" },
	{ "buffer set size 99999999999G", "out of range" },
	{ "buffer set mode sideways", "unknown mode 'sideways' (expected discard, overwrite)" },
	{ "buffer set mode", "missing discard|overwrite" },
	{ "buffer set size 4M size 8M", "'size' given twice" },
	{ "buffer show junk", "unexpected 'junk'" },
	{ "stats junk", "unexpected 'junk'" },
	{ "monitor -c", "missing COUNT" },
	{ "monitor -c 0", "count 0: expected a number from 1" },
	{ "monitor -c x", "count x: expected a number" },
	{ "monitor -c -1", "expected a number" },
	{ "monitor junk", "unknown option 'junk'" },
};

START_TEST(malformed)
{
	usage_error(bad_lines[_i].line, bad_lines[_i].want);
}
END_TEST

/* The usage line printed is the failing command's own. */
START_TEST(usage_lines)
{
	usage_error("probe add kprobe vfs_read args 7", "usage: magnet-ctl probe add kprobe|kretprobe|fentry");
	ck_assert(!strstr(err_buf, "probe del"));
	usage_error("filter add 16 cpu 99999", "usage: magnet-ctl filter add PROBE");
	usage_error("probe bogus", "       magnet-ctl probe del ID|NAME | set SET\n");
	usage_error("bogus", "objects:");
	/* One message line, then the usage. */
	usage_error("buffer set size 3M",
		    "magnet-ctl: buffer set: size 3M: not a power of two\n"
		    "usage: magnet-ctl buffer set [size SIZE] [mode discard|overwrite] [fair PERCENT|off]\n");
}
END_TEST

/* Without the family (this host cannot load modules): exit 2, a message. */
START_TEST(no_kernel)
{
	int argc = split("probe list"), ret;

	cap_begin();
	ret = magnet_ctl_main(argc, argv_buf);
	cap_end();
	ck_assert_int_eq(ret, CTL_EXIT_FAIL);
	ck_assert(!strncmp(err_buf, "magnet-ctl: ", 12));
	if (strstr(err_buf, "not loaded"))
		ck_assert_str_eq(err_buf, "magnet-ctl: the magnet module is not loaded (insmod magnet.ko)\n");
	ck_assert(!out_len);
}
END_TEST

/* ---- a fake kernel on a socketpair ---- */

static int kfd = -1;			/* the kernel's end */
static int tfd = -1;			/* the tool's end */
static struct ctl_nl *knl;		/* the tool's */
static unsigned char kbuf[65536];	/* one datagram being assembled */
static size_t klen;

void __real_ctl_nl_close(struct ctl_nl *nl);

static void fake_setup(void)
{
	int sv[2];

	/* A test may start over with a new fake: the last one goes. */
	__real_ctl_nl_close(knl);
	if (kfd >= 0) {
		close(kfd);
		close(tfd);
	}
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), 0);
	knl = ctl_nl_wrap(sv[0], FAM, 5);
	ck_assert_ptr_nonnull(knl);
	tfd = sv[0];
	kfd = sv[1];
	klen = 0;
}

/*
 * ctl_exec() opens its socket with ctl_nl_open(): the test is linked with
 * --wrap=ctl_nl_open,--wrap=ctl_nl_close (tools/ctl.mk), so that while
 * fake_open is set it gets knl, the fake kernel's, and every close is
 * counted.
 */
struct ctl_nl *__real_ctl_nl_open(void);
void __real_ctl_nl_close(struct ctl_nl *nl);
static bool fake_open;
static int fake_opened, fake_closed;

struct ctl_nl *__wrap_ctl_nl_open(void)
{
	if (!fake_open)
		return __real_ctl_nl_open();
	fake_opened++;
	return knl;
}

void __wrap_ctl_nl_close(struct ctl_nl *nl)
{
	if (nl && nl == knl) {
		fake_closed++;
		knl = NULL;
	}
	__real_ctl_nl_close(nl);
}

/* Append a message to the datagram. */
static void k_add(struct nlmsghdr *nlh)
{
	ck_assert_uint_le(klen + NLMSG_ALIGN(nlh->nlmsg_len), sizeof(kbuf));
	memcpy(kbuf + klen, nlh, nlh->nlmsg_len);
	klen += NLMSG_ALIGN(nlh->nlmsg_len);
}

/* Send the datagram (a dump's messages travel together, as the kernel's). */
static void k_flush(void)
{
	ck_assert_int_eq(send(kfd, kbuf, klen, 0), (ssize_t)klen);
	klen = 0;
}

static struct nl_msg *k_msg(__u32 seq, int flags, __u8 cmd)
{
	struct nl_msg *m = nlmsg_alloc_size(16384);

	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_nonnull(genlmsg_put(m, 0, seq, FAM, 0, flags, cmd, 1));
	return m;
}

static void k_add_free(struct nl_msg *m)
{
	k_add(nlmsg_hdr(m));
	nlmsg_free(m);
}

static void k_done(__u32 seq, int err)
{
	struct {
		struct nlmsghdr h;
		int err;
	} d = {
		.h = {
			.nlmsg_len = NLMSG_LENGTH(sizeof(int)),
			.nlmsg_type = NLMSG_DONE,
			.nlmsg_flags = NLM_F_MULTI,
			.nlmsg_seq = seq,
		},
		.err = err,
	};

	k_add(&d.h);
}

/* An NLMSG_ERROR for seq: err, optionally the request echoed, TLVs. */
static void k_error(__u32 seq, int err, struct nl_msg *echo, const char *msg,
		    int offs, int miss_type, int miss_nest)
{
	unsigned char b[8192];
	struct nlmsghdr *h = (struct nlmsghdr *)b;
	struct nlmsgerr *e = NLMSG_DATA(h);
	size_t len = NLMSG_LENGTH(sizeof(*e));
	struct nlattr *a;
	bool tlvs = msg || offs >= 0 || miss_type >= 0;

	memset(b, 0, sizeof(b));
	e->error = err;
	if (echo) {
		struct nlmsghdr *r = nlmsg_hdr(echo);

		memcpy(&e->msg, r, r->nlmsg_len);
		len = NLMSG_LENGTH(sizeof(e->error) + r->nlmsg_len);
	} else {
		e->msg.nlmsg_len = NLMSG_HDRLEN;
	}
	len = NLMSG_ALIGN(len);
#define PUT(t, p, l) do {						\
		a = (struct nlattr *)(b + len);				\
		a->nla_type = (t);					\
		a->nla_len = NLA_HDRLEN + (l);				\
		memcpy((unsigned char *)a + NLA_HDRLEN, (p), (l));	\
		len += NLA_ALIGN(a->nla_len);				\
	} while (0)
	if (msg)
		PUT(NLMSGERR_ATTR_MSG, msg, strlen(msg) + 1);
	if (offs >= 0) {
		__u32 o = offs;

		PUT(NLMSGERR_ATTR_OFFS, &o, 4);
	}
	if (miss_type >= 0) {
		__u32 t = miss_type, n = miss_nest;

		PUT(NLMSGERR_ATTR_MISS_TYPE, &t, 4);
		if (miss_nest >= 0)
			PUT(NLMSGERR_ATTR_MISS_NEST, &n, 4);
	}
#undef PUT
	h->nlmsg_len = len;
	h->nlmsg_type = NLMSG_ERROR;
	h->nlmsg_seq = seq;
	h->nlmsg_flags = (echo ? 0 : NLM_F_CAPPED) | (tlvs ? NLM_F_ACK_TLVS : 0);
	k_add(h);
}

static void k_ack(__u32 seq)
{
	k_error(seq, 0, NULL, NULL, -1, -1, -1);
}

/* A probe as mg_put_probe() sends it. */
static void k_probe(struct nl_msg *m, __u16 id, const char *name, __u8 type,
		    const char *sym, __u32 flags, __u64 hits, bool filters)
{
	struct nlattr *p, *st, *fs, *f;

	p = nla_nest_start(m, MAGNET_A_PROBE);
	nla_put_u16(m, MAGNET_PROBE_A_ID, id);
	nla_put_string(m, MAGNET_PROBE_A_NAME, name);
	nla_put_u8(m, MAGNET_PROBE_A_TYPE, type);
	nla_put_string(m, MAGNET_PROBE_A_SYMBOL, sym);
	nla_put_u32(m, MAGNET_PROBE_A_OFFSET, 0);
	nla_put_u8(m, MAGNET_PROBE_A_NARGS, 2);
	nla_put_u16(m, MAGNET_PROBE_A_CAPTURE_LEN, type == MAGNET_PROBE_KRETPROBE ? 64 : 0);
	nla_put_u8(m, MAGNET_PROBE_A_CAPTURE_ARG, type == MAGNET_PROBE_KRETPROBE ? 1 : 0);
	nla_put_string(m, MAGNET_PROBE_A_HANDLER, "generic");
	nla_put_u32(m, MAGNET_PROBE_A_FLAGS, flags);
	nla_put_u32(m, MAGNET_PROBE_A_SAMPLE_EVERY, filters ? 100 : 0);
	nla_put_u64(m, MAGNET_PROBE_A_SAMPLE_INTERVAL_NS, filters ? 1000000 : 0);
	fs = nla_nest_start(m, MAGNET_PROBE_A_FILTERS);
	if (filters) {
		__u64 cpus[2] = { 0x2f, 0 };

		f = nla_nest_start(m, MAGNET_A_FILTER);
		nla_put_u32(m, MAGNET_FILTER_A_ID, 1);
		nla_put_u8(m, MAGNET_FILTER_A_KIND, MAGNET_FILTER_TGID);
		nla_put_u8(m, MAGNET_FILTER_A_ACTION, MAGNET_FILTER_INCLUDE);
		nla_put_u64(m, MAGNET_FILTER_A_VALUE, 1234);
		nla_nest_end(m, f);
		f = nla_nest_start(m, MAGNET_A_FILTER);
		nla_put_u32(m, MAGNET_FILTER_A_ID, 2);
		nla_put_u8(m, MAGNET_FILTER_A_KIND, MAGNET_FILTER_CPU);
		nla_put_u8(m, MAGNET_FILTER_A_ACTION, MAGNET_FILTER_EXCLUDE);
		nla_put(m, MAGNET_FILTER_A_CPUS, sizeof(cpus), cpus);
		nla_nest_end(m, f);
		f = nla_nest_start(m, MAGNET_A_FILTER);
		nla_put_u32(m, MAGNET_FILTER_A_ID, 3);
		nla_put_u8(m, MAGNET_FILTER_A_KIND, MAGNET_FILTER_ABSTRACT_ID);
		nla_put_u8(m, MAGNET_FILTER_A_ACTION, MAGNET_FILTER_INCLUDE);
		nla_put_u64(m, MAGNET_FILTER_A_VALUE, 0xffff888000001000ULL);
		nla_nest_end(m, f);
	}
	nla_nest_end(m, fs);
	st = nla_nest_start(m, MAGNET_PROBE_A_STATS);
	nla_put_u64(m, MAGNET_PSTAT_A_HITS, hits);
	nla_put_u64(m, MAGNET_PSTAT_A_FILTERED, 1);
	nla_put_u64(m, MAGNET_PSTAT_A_SAMPLED, 2);
	nla_put_u64(m, MAGNET_PSTAT_A_RECORDED, hits - 4);
	nla_put_u64(m, MAGNET_PSTAT_A_LOST, 1);
	nla_put_u64(m, MAGNET_PSTAT_A_MISSED, 5);
	nla_put_u64(m, MAGNET_PSTAT_A_ALARMS, 6);
	nla_put_u64(m, MAGNET_PSTAT_A_ALARMS_DROPPED, 7);
	nla_nest_end(m, st);
	nla_nest_end(m, p);
}

/* One dump message of probe id (generation gen). */
static void k_dump_probe(__u32 seq, int flags, __u32 gen, __u16 id)
{
	struct nl_msg *m = k_msg(seq, NLM_F_MULTI | flags, MAGNET_CMD_PROBE_GET);

	nla_put_u32(m, MAGNET_A_GENERATION, gen);
	if (id == 16)
		k_probe(m, 16, "vfs_read", MAGNET_PROBE_KPROBE, "vfs_read", 0, 10, false);
	else
		k_probe(m, id, "rd", MAGNET_PROBE_KRETPROBE, "vfs_read",
			MAGNET_PROBE_F_NOTIFY, 100, true);
	k_add_free(m);
}

/* Run line against the fake kernel; its exit status. */
static int fake_run(const char *line)
{
	int argc = split(line), ret;

	cap_begin();
	ret = ctl_parse(argc, argv_buf, &R);
	if (!ret) {
		pr_start(R.mode);
		ret = R.cmd->run(knl, &R);
		pr_end();
	}
	cap_end();
	return ret;
}

/* The next request the tool sent: its header, attributes into top/pa/... */
static struct nlmsghdr *k_req_hdr;
static unsigned char k_req_buf[65536];

static __u8 k_request(void)
{
	ssize_t n = recv(kfd, k_req_buf, sizeof(k_req_buf), MSG_DONTWAIT);
	struct genlmsghdr *g;

	ck_assert_int_gt(n, 0);
	k_req_hdr = (struct nlmsghdr *)k_req_buf;
	ck_assert_int_eq(k_req_hdr->nlmsg_len, n);
	ck_assert_int_eq(k_req_hdr->nlmsg_type, FAM);
	ck_assert(k_req_hdr->nlmsg_flags & NLM_F_REQUEST);
	g = NLMSG_DATA(k_req_hdr);
	memset(pa, 0, sizeof(pa));
	ck_assert_int_eq(genlmsg_parse(k_req_hdr, 0, top, MAGNET_A_MAX, NULL), 0);
	if (top[MAGNET_A_PROBE])
		nla_parse_nested(pa, MAGNET_PROBE_A_MAX, top[MAGNET_A_PROBE], NULL);
	return g->cmd;
}

static void no_more_requests(void)
{
	char b[16];

	ck_assert_int_lt(recv(kfd, b, sizeof(b), MSG_DONTWAIT), 0);
}

/*
 * A probe set: its members in order, each named SET/FUNCTION with its
 * handler and, for skb members, the capture; all or none: a refusal
 * removes the members already added, and says which one failed.
 */
START_TEST(run_probe_set)
{
	static const char *const added[] = {
		"udp-journey/udp_sendmsg", "udp-journey/ip_send_skb",
	};
	char name[64];
	int i;

	fake_setup();	/* one datagram per reply, all queued first */
	k_ack(1);
	k_flush();
	k_ack(2);
	k_flush();
	k_error(3, -ENOENT, NULL, "no such function", -1, -1, -1);
	k_flush();
	k_ack(4);
	k_flush();
	k_ack(5);
	k_flush();
	ck_assert_int_eq(fake_run("probe add set udp-j capture 200"), CTL_EXIT_FAIL);
	ck_assert_ptr_nonnull(strstr(err_buf, "udp-journey: ip_finish_output2"));
	ck_assert_ptr_nonnull(strstr(err_buf, "no such function"));
	ck_assert_int_eq(k_request(), MAGNET_CMD_PROBE_ADD);
	expect_str(pa[MAGNET_PROBE_A_NAME], "udp-journey/udp_sendmsg");
	expect_str(pa[MAGNET_PROBE_A_SYMBOL], "udp_sendmsg");
	expect_str(pa[MAGNET_PROBE_A_HANDLER], "sock");
	ck_assert_ptr_null(pa[MAGNET_PROBE_A_CAPTURE_LEN]);
	ck_assert_int_eq(k_request(), MAGNET_CMD_PROBE_ADD);
	expect_str(pa[MAGNET_PROBE_A_SYMBOL], "ip_send_skb");
	expect_str(pa[MAGNET_PROBE_A_HANDLER], "skb");
	expect_uint(pa[MAGNET_PROBE_A_CAPTURE_LEN], 2, 200);
	ck_assert_ptr_null(pa[MAGNET_PROBE_A_CAPTURE_ARG]);
	ck_assert_int_eq(k_request(), MAGNET_CMD_PROBE_ADD);
	expect_str(pa[MAGNET_PROBE_A_SYMBOL], "ip_finish_output2");
	for (i = 0; i < 2; i++) {	/* undone, by name */
		ck_assert_int_eq(k_request(), MAGNET_CMD_PROBE_DEL);
		expect_str(pa[MAGNET_PROBE_A_NAME], added[i]);
	}
	no_more_requests();

	/* All of tcp-traffic, then "del set" removes each by name. */
	fake_setup();
	for (i = 1; i <= 8; i++) {
		k_ack(i);
		k_flush();
	}
	ck_assert_int_eq(fake_run("probe add set tcp-traffic"), 0);
	ck_assert_str_eq(out_buf, "tcp-traffic: 4 probes\n");
	ck_assert_int_eq(fake_run("probe del set tcp-traffic"), 0);
	for (i = 0; i < 8; i++) {
		ck_assert_int_eq(k_request(), i < 4 ? MAGNET_CMD_PROBE_ADD : MAGNET_CMD_PROBE_DEL);
		snprintf(name, sizeof(name), "tcp-traffic/%s",
			 (const char *[]){ "tcp_sendmsg", "tcp_recvmsg", "tcp_v4_connect",
					   "inet_csk_accept" }[i % 4]);
		expect_str(pa[MAGNET_PROBE_A_NAME], name);
	}
	no_more_requests();
}
END_TEST

START_TEST(run_probe_add)
{
	struct nl_msg *m;
	struct nlattr *p;

	fake_setup();
	m = k_msg(1, 0, MAGNET_CMD_PROBE_ADD);
	p = nla_nest_start(m, MAGNET_A_PROBE);
	nla_put_u16(m, MAGNET_PROBE_A_ID, 16);
	nla_put_string(m, MAGNET_PROBE_A_NAME, "vfs_read");
	nla_nest_end(m, p);
	k_add_free(m);
	k_ack(1);
	k_flush();
	ck_assert_int_eq(fake_run("probe add kprobe vfs_read args 3"), 0);
	ck_assert_str_eq(out_buf, "16 vfs_read\n");
	ck_assert_int_eq(err_len, 0);
	ck_assert_int_eq(k_request(), MAGNET_CMD_PROBE_ADD);
	ck_assert_int_eq(k_req_hdr->nlmsg_seq, 1);
	ck_assert(k_req_hdr->nlmsg_flags & NLM_F_ACK);
	expect_uint(pa[MAGNET_PROBE_A_NARGS], 1, 3);
	no_more_requests();

	/* The same reply as JSON and tab-separated. */
	m = k_msg(2, 0, MAGNET_CMD_PROBE_ADD);
	p = nla_nest_start(m, MAGNET_A_PROBE);
	nla_put_u16(m, MAGNET_PROBE_A_ID, 17);
	nla_put_string(m, MAGNET_PROBE_A_NAME, "a\"b");
	nla_nest_end(m, p);
	k_add_free(m);
	k_ack(2);
	k_flush();
	ck_assert_int_eq(fake_run("-j probe add kprobe vfs_read name a\"b"), 0);
	ck_assert_str_eq(out_buf, "{\"id\":17,\"name\":\"a\\\"b\"}\n");
	k_request();

	m = k_msg(3, 0, MAGNET_CMD_PROBE_ADD);
	p = nla_nest_start(m, MAGNET_A_PROBE);
	nla_put_u16(m, MAGNET_PROBE_A_ID, 18);
	nla_put_string(m, MAGNET_PROBE_A_NAME, "x");
	nla_nest_end(m, p);
	k_add_free(m);
	k_ack(3);
	k_flush();
	ck_assert_int_eq(fake_run("probe add kprobe vfs_read name x -m"), 0);
	ck_assert_str_eq(out_buf, "probe_added\t18\tx\n");
}
END_TEST

static const char list_text[] =
	"16: vfs_read kprobe vfs_read args 2 handler generic\n"
	"\thits 10 filtered 1 sampled 2 recorded 6 lost 1 missed 5 alarms 6 alarms_dropped 7\n"
	"17: rd kretprobe vfs_read args 2 capture 64@1 handler generic notify\n"
	"\tsample every 100 interval 1ms\n"
	"\thits 100 filtered 1 sampled 2 recorded 96 lost 1 missed 5 alarms 6 alarms_dropped 7\n"
	"\tfilter 1: include tgid 1234\n"
	"\tfilter 2: exclude cpu 0-3,5\n"
	"\tfilter 3: include abstract 0xffff888000001000\n";

static const char list_json[] =
	"[{\"id\":16,\"name\":\"vfs_read\",\"type\":\"kprobe\",\"symbol\":\"vfs_read\","
	"\"offset\":0,\"nargs\":2,\"capture_len\":0,\"capture_arg\":0,\"handler\":\"generic\","
	"\"notify\":false,\"disabled\":false,\"sample_every\":0,\"sample_interval_ns\":0,"
	"\"stats\":{\"hits\":10,\"filtered\":1,\"sampled\":2,\"recorded\":6,\"lost\":1,"
	"\"missed\":5,\"alarms\":6,\"alarms_dropped\":7},\"filters\":[]},"
	"{\"id\":17,\"name\":\"rd\",\"type\":\"kretprobe\",\"symbol\":\"vfs_read\","
	"\"offset\":0,\"nargs\":2,\"capture_len\":64,\"capture_arg\":1,\"handler\":\"generic\","
	"\"notify\":true,\"disabled\":false,\"sample_every\":100,\"sample_interval_ns\":1000000,"
	"\"stats\":{\"hits\":100,\"filtered\":1,\"sampled\":2,\"recorded\":96,\"lost\":1,"
	"\"missed\":5,\"alarms\":6,\"alarms_dropped\":7},\"filters\":["
	"{\"probe\":17,\"id\":1,\"action\":\"include\",\"kind\":\"tgid\",\"value\":\"1234\"},"
	"{\"probe\":17,\"id\":2,\"action\":\"exclude\",\"kind\":\"cpu\",\"value\":\"0-3,5\"},"
	"{\"probe\":17,\"id\":3,\"action\":\"include\",\"kind\":\"abstract\",\"value\":\"0xffff888000001000\"}"
	"]}]\n";

static const char list_machine[] =
	"probe\t16\tvfs_read\tkprobe\tvfs_read\t0\t2\t0\t0\tgeneric\t0\t0\t0\t0\t10\t1\t2\t6\t1\t5\t6\t7\n"
	"probe\t17\trd\tkretprobe\tvfs_read\t0\t2\t64\t1\tgeneric\t1\t0\t100\t1000000\t100\t1\t2\t96\t1\t5\t6\t7\n"
	"filter\t17\t1\tinclude\ttgid\t1234\n"
	"filter\t17\t2\texclude\tcpu\t0-3,5\n"
	"filter\t17\t3\tinclude\tabstract\t0xffff888000001000\n";

/* A dump of 17 then 16, the first attempt interrupted. */
static void queue_list(__u32 seq, bool interrupted)
{
	if (interrupted) {
		k_dump_probe(seq, 0, 1, 17);
		k_dump_probe(seq, NLM_F_DUMP_INTR, 2, 16);
		k_done(seq, 0);
		k_flush();
		seq++;
	}
	k_dump_probe(seq, 0, 2, 17);
	k_dump_probe(seq, 0, 2, 16);
	k_done(seq, 0);
	k_flush();
}

START_TEST(run_probe_list)
{
	fake_setup();
	queue_list(1, true);
	ck_assert_int_eq(fake_run("probe list"), 0);
	ck_assert_int_eq(err_len, 0);
	ck_assert_str_eq(out_buf, list_text);		/* once, sorted by id */
	/* Two dump requests: the first was interrupted. */
	ck_assert_int_eq(k_request(), MAGNET_CMD_PROBE_GET);
	ck_assert(k_req_hdr->nlmsg_flags & NLM_F_DUMP);
	ck_assert_int_eq(k_req_hdr->nlmsg_seq, 1);
	ck_assert_ptr_null(top[MAGNET_A_PROBE]);
	ck_assert_int_eq(k_request(), MAGNET_CMD_PROBE_GET);
	ck_assert_int_eq(k_req_hdr->nlmsg_seq, 2);
	no_more_requests();

	queue_list(3, false);
	ck_assert_int_eq(fake_run("probe list -j"), 0);
	ck_assert_str_eq(out_buf, list_json);

	queue_list(4, false);
	ck_assert_int_eq(fake_run("-m probe list"), 0);
	ck_assert_str_eq(out_buf, list_machine);
}
END_TEST

START_TEST(run_dump_generation)
{
	/* The generation changes between messages: that is an interruption too. */
	fake_setup();
	k_dump_probe(1, 0, 1, 16);
	k_dump_probe(1, 0, 2, 17);
	k_done(1, 0);
	k_flush();
	queue_list(2, false);
	ck_assert_int_eq(fake_run("probe list"), 0);
	ck_assert_str_eq(out_buf, list_text);
}
END_TEST

START_TEST(run_dump_gives_up)
{
	int i;

	fake_setup();
	for (i = 1; i <= 5; i++) {
		k_dump_probe(i, NLM_F_DUMP_INTR, 1, 16);
		k_done(i, 0);
		k_flush();
	}
	ck_assert_int_eq(fake_run("probe list"), CTL_EXIT_FAIL);
	ck_assert_str_eq(err_buf, "magnet-ctl: probe list: the dump was interrupted 5 times by changes; giving up\n");
	ck_assert_str_eq(out_buf, "");
}
END_TEST

START_TEST(run_show_and_filters)
{
	struct nl_msg *m;

	fake_setup();
	m = k_msg(1, 0, MAGNET_CMD_PROBE_GET);
	k_probe(m, 17, "rd", MAGNET_PROBE_KRETPROBE, "vfs_read", MAGNET_PROBE_F_NOTIFY, 100, true);
	k_add_free(m);
	k_ack(1);
	k_flush();
	ck_assert_int_eq(fake_run("filter list rd"), 0);
	ck_assert_str_eq(out_buf, "1: include tgid 1234\n2: exclude cpu 0-3,5\n"
				  "3: include abstract 0xffff888000001000\n");
	ck_assert_int_eq(k_request(), MAGNET_CMD_PROBE_GET);
	expect_str(pa[MAGNET_PROBE_A_NAME], "rd");
	ck_assert(!(k_req_hdr->nlmsg_flags & NLM_F_DUMP));

	m = k_msg(2, 0, MAGNET_CMD_PROBE_GET);
	k_probe(m, 16, "vfs_read", MAGNET_PROBE_KPROBE, "vfs_read", 0, 10, false);
	k_add_free(m);
	k_ack(2);
	k_flush();
	ck_assert_int_eq(fake_run("probe show 16 -j"), 0);
	ck_assert(!strncmp(out_buf, "[{\"id\":16,", 10));
	ck_assert(strstr(out_buf, "\"filters\":[]}]\n"));
}
END_TEST

/* A probe, then an error: the failed lookup leaves nothing to free. */
START_TEST(run_show_error_after_probe)
{
	struct ctl_probe p;
	struct nl_msg *m;
	int argc;

	fake_setup();
	m = k_msg(1, 0, MAGNET_CMD_PROBE_GET);
	k_probe(m, 17, "rd", MAGNET_PROBE_KRETPROBE, "vfs_read", 0, 100, true);
	k_add_free(m);
	k_error(1, -EIO, NULL, "gone", -1, -1, -1);
	k_flush();
	ck_assert_int_eq(fake_run("probe show rd"), CTL_EXIT_FAIL);
	ck_assert_str_eq(err_buf, "magnet-ctl: probe show: gone (Input/output error)\n");

	m = k_msg(2, 0, MAGNET_CMD_PROBE_GET);
	k_probe(m, 17, "rd", MAGNET_PROBE_KRETPROBE, "vfs_read", 0, 100, true);
	k_add_free(m);
	k_error(2, -EIO, NULL, NULL, -1, -1, -1);
	k_flush();
	argc = split("probe show rd");
	cap_begin();
	ck_assert_int_eq(ctl_parse(argc, argv_buf, &R), 0);
	ck_assert_int_eq(ctl_probe_get_one(knl, &R, &p, "probe show"),
			 CTL_EXIT_FAIL);
	cap_end();
	ck_assert_ptr_null(p.filters);
	ck_assert_uint_eq(p.nfilters, 0);
}
END_TEST

START_TEST(run_probe_enable)
{
	struct nl_msg *m;

	fake_setup();
	/* GET: notify and disabled; then SET with notify only. */
	m = k_msg(1, 0, MAGNET_CMD_PROBE_GET);
	k_probe(m, 17, "rd", MAGNET_PROBE_KRETPROBE, "vfs_read",
		MAGNET_PROBE_F_NOTIFY | MAGNET_PROBE_F_DISABLED, 100, false);
	k_add_free(m);
	k_ack(1);
	k_flush();
	k_ack(2);
	k_flush();
	ck_assert_int_eq(fake_run("probe enable 17"), 0);
	ck_assert_str_eq(out_buf, "");
	ck_assert_int_eq(err_len, 0);
	ck_assert_int_eq(k_request(), MAGNET_CMD_PROBE_GET);
	ck_assert_int_eq(k_request(), MAGNET_CMD_PROBE_SET);
	expect_uint(pa[MAGNET_PROBE_A_ID], 2, 17);
	expect_uint(pa[MAGNET_PROBE_A_FLAGS], 4, MAGNET_PROBE_F_NOTIFY);
	ck_assert_ptr_null(pa[MAGNET_PROBE_A_NAME]);

	m = k_msg(3, 0, MAGNET_CMD_PROBE_GET);
	k_probe(m, 17, "rd", MAGNET_PROBE_KRETPROBE, "vfs_read",
		MAGNET_PROBE_F_DISABLED, 100, false);
	k_add_free(m);
	k_ack(3);
	k_flush();
	k_ack(4);
	k_flush();
	ck_assert_int_eq(fake_run("probe notify rd on"), 0);
	k_request();
	ck_assert_int_eq(k_request(), MAGNET_CMD_PROBE_SET);
	expect_uint(pa[MAGNET_PROBE_A_FLAGS], 4,
		    MAGNET_PROBE_F_NOTIFY | MAGNET_PROBE_F_DISABLED);
	expect_str(pa[MAGNET_PROBE_A_NAME], "rd");
}
END_TEST

/* Offset of attribute type t inside the MAGNET_A_PROBE nest of msg. */
static int probe_attr_offset(struct nl_msg *msg, int t)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct nlattr *tb[MAGNET_A_MAX + 1], *a;
	int rem;

	ck_assert_int_eq(genlmsg_parse(nlh, 0, tb, MAGNET_A_MAX, NULL), 0);
	if (t < 0)
		return (unsigned char *)tb[MAGNET_A_PROBE] - (unsigned char *)nlh;
	nla_for_each_nested(a, tb[MAGNET_A_PROBE], rem)
		if (nla_type(a) == t)
			return (unsigned char *)a - (unsigned char *)nlh;
	ck_abort_msg("no attribute %d", t);
	return -1;
}

START_TEST(run_ext_ack)
{
	fake_setup();
	/* The kernel names the offending attribute by its offset. */
	parse_ok("probe add kprobe vfs_read args 3 name x");
	build(MAGNET_CMD_PROBE_ADD, false);
	k_error(1, -EINVAL, NULL, "bad nargs",
		probe_attr_offset(req_msg, MAGNET_PROBE_A_NARGS), -1, -1);
	k_flush();
	ck_assert_int_eq(fake_run("probe add kprobe vfs_read args 3 name x"), CTL_EXIT_FAIL);
	ck_assert_str_eq(err_buf, "magnet-ctl: probe add: bad nargs [attribute MAGNET_PROBE_A_NARGS (args)] (Invalid argument)\n");
	ck_assert_str_eq(out_buf, "");

	/* Not capped: the request is echoed before the TLVs. */
	k_error(2, -ENOENT, req_msg, "no such symbol", -1, -1, -1);
	k_flush();
	ck_assert_int_eq(fake_run("probe add kprobe vfs_read args 3 name x"), CTL_EXIT_FAIL);
	ck_assert_str_eq(err_buf, "magnet-ctl: probe add: no such symbol (No such file or directory)\n");

	/* A missing attribute, inside the probe nest. */
	k_error(3, -EINVAL, req_msg, "missing attribute", -1, MAGNET_PROBE_A_SYMBOL,
		probe_attr_offset(req_msg, -1));
	k_flush();
	ck_assert_int_eq(fake_run("probe add kprobe vfs_read args 3 name x"), CTL_EXIT_FAIL);
	ck_assert_str_eq(err_buf, "magnet-ctl: probe add: missing attribute [missing attribute MAGNET_PROBE_A_SYMBOL (SYMBOL)] (Invalid argument)\n");

	/* No message: strerror alone. */
	k_error(4, -EBUSY, NULL, NULL, -1, -1, -1);
	k_flush();
	ck_assert_int_eq(fake_run("buffer set size 4M"), CTL_EXIT_FAIL);
	ck_assert_str_eq(err_buf, "magnet-ctl: buffer set: Device or resource busy\n");

	/* EPERM without a message: GENL_ADMIN_PERM, no CAP_NET_ADMIN. */
	k_error(5, -EPERM, NULL, NULL, -1, -1, -1);
	k_flush();
	ck_assert_int_eq(fake_run("probe del 16"), CTL_EXIT_FAIL);
	ck_assert_str_eq(err_buf, "magnet-ctl: probe del: permission denied: magnet-ctl needs CAP_SYS_ADMIN and CAP_NET_ADMIN (run as root)\n");

	/* With both capabilities, an EPERM is the kernel's own refusal. */
	if (geteuid() == 0) {
		k_error(6, -EPERM, NULL, "a kernel module's event: only that module removes it",
			-1, -1, -1);
		k_flush();
		ck_assert_int_eq(fake_run("probe del 16"), CTL_EXIT_FAIL);
		ck_assert_str_eq(err_buf, "magnet-ctl: probe del: a kernel module's event: only that module removes it (Operation not permitted)\n");
	} else {
		k_ack(6);		/* keeps the sequence numbers in step */
		k_flush();
		ck_assert_int_eq(fake_run("probe del 16"), 0);
	}

	/* An ACK with a message is a warning; the command succeeds. */
	k_error(7, 0, NULL, "deprecated", -1, -1, -1);
	k_flush();
	ck_assert_int_eq(fake_run("probe del 16"), 0);
	ck_assert_str_eq(err_buf, "magnet-ctl: probe del: warning: deprecated\n");

	/* A dump that fails: the error comes in NLMSG_DONE. */
	k_done(8, -ENOMEM);
	k_flush();
	ck_assert_int_eq(fake_run("stats"), CTL_EXIT_FAIL);
	ck_assert_str_eq(err_buf, "magnet-ctl: stats: Cannot allocate memory\n");
	ck_assert_str_eq(out_buf, "");
}
END_TEST

/* One job of one CPU, as mg_put_job() sends it. */
static void k_job(__u32 seq, __u32 cpu, __u64 cgroup, __u64 written, __u64 fair, __u64 ring)
{
	struct nl_msg *m = k_msg(seq, NLM_F_MULTI, MAGNET_CMD_JOBS_GET);
	struct nlattr *n = nla_nest_start(m, MAGNET_A_JOB);

	nla_put_u32(m, MAGNET_JOB_A_CPU, cpu);
	nla_put_u64(m, MAGNET_JOB_A_CGROUP, cgroup);
	nla_put_u64(m, MAGNET_JOB_A_WRITTEN, written);
	nla_put_u64(m, MAGNET_JOB_A_LOST_FAIR, fair);
	nla_put_u64(m, MAGNET_JOB_A_PENDING, fair);
	nla_put_u64(m, MAGNET_JOB_A_LOST_RING, ring);
	nla_nest_end(m, n);
	k_add_free(m);
}

START_TEST(run_buffer_and_stats)
{
	struct nl_msg *m;
	struct nlattr *n;
	int cpu;

	fake_setup();
	m = k_msg(1, 0, MAGNET_CMD_BUFFER_GET);
	n = nla_nest_start(m, MAGNET_A_BUFFER);
	nla_put_u64(m, MAGNET_BUFFER_A_SIZE, 1 << 20);
	nla_put_u8(m, MAGNET_BUFFER_A_MODE, 1);
	nla_put_u32(m, MAGNET_BUFFER_A_CPUS, 2);
	nla_put_u8(m, MAGNET_BUFFER_A_FAIR_FILL, 50);
	nla_nest_end(m, n);
	k_add_free(m);
	k_ack(1);
	k_flush();
	/* The jobs, one message per CPU each: summed per job, most lost first. */
	k_job(2, 0, 0, 1, 0, 0);
	k_job(2, 0, 4000000000ULL, 10, 3, 0);
	k_job(2, 1, 4000000000ULL, 5, 4, 2);
	k_job(2, 1, 4000000001ULL, 500, 0, 0);
	k_done(2, 0);
	k_flush();
	ck_assert_int_eq(fake_run("buffer"), 0);
	ck_assert_str_eq(out_buf,
			 "size 1M mode overwrite cpus 2 fair 50%\n"
			 "job                                   written    lost_fair    pending    lost_ring\n"
			 "cgroup:4000000000                          15            7          7            2\n"
			 "cgroup:4000000001                         500            0          0            0\n"
			 "(shared)                                    1            0          0            0\n");
	ck_assert_int_eq(k_request(), MAGNET_CMD_BUFFER_GET);
	ck_assert_ptr_null(top[MAGNET_A_BUFFER]);
	ck_assert_int_eq(k_request(), MAGNET_CMD_JOBS_GET);
	ck_assert(k_req_hdr->nlmsg_flags & NLM_F_DUMP);

	for (cpu = 1; cpu >= 0; cpu--) {
		m = k_msg(3, NLM_F_MULTI, MAGNET_CMD_STATS_GET);
		n = nla_nest_start(m, MAGNET_A_CPU_STATS);
		nla_put_u32(m, MAGNET_CSTAT_A_CPU, cpu);
		nla_put_u64(m, MAGNET_CSTAT_A_WRITTEN, 10 + cpu);
		nla_put_u64(m, MAGNET_CSTAT_A_BYTES, 1000 + cpu);
		nla_put_u64(m, MAGNET_CSTAT_A_LOST_FULL, 1);
		nla_put_u64(m, MAGNET_CSTAT_A_LOST_TOO_BIG, 2);
		nla_put_u64(m, MAGNET_CSTAT_A_LOST_NESTING, 3);
		nla_put_u64(m, MAGNET_CSTAT_A_OVERWRITTEN, 4);
		nla_put_u64(m, MAGNET_CSTAT_A_DISCARDED, 5 + cpu);
		nla_put_u64(m, MAGNET_CSTAT_A_LOST_FAIR, 7 * cpu);
		nla_nest_end(m, n);
		k_add_free(m);
	}
	k_done(3, 0);
	k_flush();
	queue_list(4, false);
	ck_assert_int_eq(fake_run("stats -m"), 0);
	ck_assert_str_eq(out_buf,
			 "cpu\t0\t10\t1000\t1\t2\t3\t4\t5\t0\n"
			 "cpu\t1\t11\t1001\t1\t2\t3\t4\t6\t7\n"
			 "pstat\t16\tvfs_read\t10\t1\t2\t6\t1\t5\t6\t7\n"
			 "pstat\t17\trd\t100\t1\t2\t96\t1\t5\t6\t7\n");
	ck_assert_int_eq(k_request(), MAGNET_CMD_STATS_GET);
	ck_assert(k_req_hdr->nlmsg_flags & NLM_F_DUMP);
	ck_assert_int_eq(k_request(), MAGNET_CMD_PROBE_GET);
	ck_assert(k_req_hdr->nlmsg_flags & NLM_F_DUMP);
}
END_TEST

static void k_alarm(__u16 id, __u64 ts)
{
	struct nl_msg *m = k_msg(0, 0, MAGNET_CMD_ALARM);
	struct nlattr *a = nla_nest_start(m, MAGNET_A_ALARM);

	nla_put_u16(m, MAGNET_ALARM_A_PROBE_ID, id);
	nla_put_u32(m, MAGNET_ALARM_A_CPU, 1);
	nla_put_u32(m, MAGNET_ALARM_A_PID, 4243);
	nla_put_u32(m, MAGNET_ALARM_A_TGID, 4242);
	nla_put_u64(m, MAGNET_ALARM_A_TIMESTAMP, ts);
	nla_put_u64(m, MAGNET_ALARM_A_ABSTRACT_ID, 0xffff888000001000ULL);
	nla_nest_end(m, a);
	k_add_free(m);
}

static void caller_handler(int sig)
{
}

START_TEST(run_monitor)
{
	struct sigaction sa = { .sa_handler = caller_handler }, intr, now;

	/* Run in-process, monitor must hand the caller's handlers back. */
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGTERM, &sa, NULL), 0);
	ck_assert_int_eq(sigaction(SIGINT, NULL, &intr), 0);
	fake_setup();
	/* The probe table; an alarm of a probe added since (the table is read
	 * again); one of a known probe; one beyond COUNT. */
	k_dump_probe(1, 0, 1, 16);
	k_done(1, 0);
	k_flush();
	k_alarm(17, 12000000345ULL);
	k_flush();
	queue_list(2, false);
	k_alarm(16, 12000001000ULL);
	k_alarm(16, 12000002000ULL);
	k_flush();
	ck_assert_int_eq(fake_run("monitor -c 2"), 0);
	ck_assert_str_eq(out_buf,
			 "12.000000345 17 rd cpu 1 pid 4243/4242 abstract 0xffff888000001000\n"
			 "12.000001000 16 vfs_read cpu 1 pid 4243/4242 abstract 0xffff888000001000\n");
	ck_assert_int_eq(err_len, 0);

	/* JSON lines, machine lines; an unknown id stays unknown. */
	fake_setup();
	k_dump_probe(1, 0, 1, 16);
	k_done(1, 0);
	k_flush();
	k_alarm(16, 5);
	k_alarm(99, 6);
	k_flush();
	k_done(2, 0);		/* the re-read finds no probe 99 */
	k_flush();
	ck_assert_int_eq(fake_run("-j monitor -c 2"), 0);
	ck_assert_str_eq(out_buf,
			 "{\"ts\":5,\"id\":16,\"name\":\"vfs_read\",\"cpu\":1,\"pid\":4243,\"tgid\":4242,\"abstract\":\"0xffff888000001000\"}\n"
			 "{\"ts\":6,\"id\":99,\"name\":\"unknown\",\"cpu\":1,\"pid\":4243,\"tgid\":4242,\"abstract\":\"0xffff888000001000\"}\n");

	fake_setup();
	k_dump_probe(1, 0, 1, 16);
	k_done(1, 0);
	k_flush();
	k_alarm(16, 7);
	k_flush();
	ck_assert_int_eq(fake_run("monitor -m -c 1"), 0);
	ck_assert_str_eq(out_buf, "alarm\t7\t16\tvfs_read\t1\t4243\t4242\t0xffff888000001000\n");

	ck_assert_int_eq(sigaction(SIGTERM, NULL, &now), 0);
	ck_assert_ptr_eq(now.sa_handler, caller_handler);
	ck_assert_int_eq(sigaction(SIGINT, NULL, &now), 0);
	ck_assert_ptr_eq(now.sa_handler, intr.sa_handler);
}
END_TEST

START_TEST(print_escaping)
{
	struct ctl_probe p;
	char buf[64];

	memset(&p, 0, sizeof(p));
	p.id = 20;
	strcpy(p.name, "we\"ird\\na me\x01\xc3\xa9\xff");
	p.type = MAGNET_PROBE_CUSTOM;
	strcpy(p.handler, "raw");

	cap_begin();
	pr_start(PR_JSON);
	ctl_print_probe(&p);
	cap_end();
	ck_assert(strstr(out_buf, "\"name\":\"we\\\"ird\\\\na me\\u0001\xc3\xa9\\u00ff\""));
	ck_assert(strstr(out_buf, "\"type\":\"custom\",\"symbol\":\"\""));
	ck_assert(strstr(out_buf, "\"handler\":\"raw\""));

	cap_begin();
	pr_start(PR_MACHINE);
	ctl_print_probe(&p);
	cap_end();
	/* Text and -m: UTF-8 as it is, a byte that is not UTF-8 escaped. */
	ck_assert_str_eq(out_buf, "probe\t20\twe\"ird\\\\na\\x20me\\x01\xc3\xa9\\xff\tcustom\t\t0\t0\t0\t0"
				  "\traw\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\n");

	cap_begin();
	pr_start(PR_TEXT);
	ctl_print_probe(&p);
	cap_end();
	ck_assert_str_eq(out_buf, "20: we\"ird\\\\na\\x20me\\x01\xc3\xa9\\xff custom args 0 handler raw\n"
				  "\thits 0 filtered 0 sampled 0 recorded 0 lost 0 missed 0 alarms 0 alarms_dropped 0\n");

	ck_assert_str_eq(pr_escape(buf, sizeof(buf), "a\tb\n"), "a\\x09b\\x0a");
	/* Truncates rather than overflows. */
	ck_assert_uint_lt(strlen(pr_escape(buf, 8, "\x01\x01\x01\x01")), 8);

	/* Empty containers, nested, stay valid JSON. */
	cap_begin();
	pr_start(PR_JSON);
	pr_object_open(NULL);
	pr_array_open("a");
	pr_array_close();
	pr_array_open("b");
	pr_record_open("x");
	pr_u64("n", NULL, 1);
	pr_hex("h", NULL, 255);
	pr_bool("t", NULL, true);
	pr_record_close();
	pr_array_close();
	pr_object_close();
	cap_end();
	ck_assert_str_eq(out_buf, "{\"a\":[],\"b\":[{\"n\":1,\"h\":\"0xff\",\"t\":true}]}\n");
}
END_TEST

/* ---- ctl_exec: magnet-ctl in-process ---- */

static char *x_out, *x_err;
static size_t x_out_len, x_err_len;

/*
 * line's words through ctl_exec() into x_out and x_err. The globals are
 * NULL, as in a daemon that never set them: ctl_exec must write to the
 * streams it is given, and put the globals back. (Had it exited, Check
 * would report this test's early exit.)
 */
static int exec_line(const char *line)
{
	int argc = split(line), ret;
	FILE *out, *err;

	free(x_out);
	free(x_err);
	x_out = x_err = NULL;
	out = open_memstream(&x_out, &x_out_len);
	err = open_memstream(&x_err, &x_err_len);
	ck_assert_ptr_nonnull(out);
	ck_assert_ptr_nonnull(err);
	ck_assert_ptr_null(ctl_outf);
	ck_assert_ptr_null(ctl_errf);
	ret = ctl_exec(argc - 1, argv_buf + 1, out, err);
	ck_assert_ptr_null(ctl_outf);
	ck_assert_ptr_null(ctl_errf);
	fclose(out);
	fclose(err);
	return ret;
}

/* Every malformed form: status 1, returned, and the program's message. */
START_TEST(exec_malformed)
{
	const char *line = bad_lines[_i].line;
	int ret = exec_line(line);

	ck_assert_msg(ret == CTL_EXIT_USAGE, "'%s': ctl_exec returned %d, want 1",
		      line, ret);
	ck_assert_msg(!x_out_len, "'%s': printed to out: %s", line, x_out);
	usage_error(line, bad_lines[_i].want);
	ck_assert_str_eq(x_err, err_buf);
}
END_TEST

/*
 * The program's bytes and status, whatever the outcome: help, version, no
 * module here (or a real one), usage errors.
 */
START_TEST(exec_same_as_program)
{
	static const char *const lines[] = {
		"help", "-h", "help probe", "sample help", "stats help", "-V",
		"version", "probe list", "-j stats", "buffer show -m", "",
		"-x", "probe add kprobe vfs_read args 7 -j",
	};
	unsigned int i;
	int argc, ret, xret;
	FILE *err;

	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		xret = exec_line(lines[i]);
		argc = split(lines[i]);
		cap_begin();
		ret = magnet_ctl_main(argc, argv_buf);
		cap_end();
		ck_assert_msg(xret == ret, "'%s': ctl_exec %d, program %d",
			      lines[i], xret, ret);
		ck_assert_str_eq(x_out, out_buf);
		ck_assert_str_eq(x_err, err_buf);
	}
	/* No words, not even an argv: a usage error, not a crash. */
	free(x_err);
	x_err = NULL;
	err = open_memstream(&x_err, &x_err_len);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(ctl_exec(0, NULL, stdout, err), CTL_EXIT_USAGE);
	fclose(err);
	ck_assert(!strncmp(x_err, "magnet-ctl: missing OBJECT\nusage: ", 34));
}
END_TEST

static int fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* A whole command through ctl_exec, against the fake kernel. */
START_TEST(exec_runs_commands)
{
	fake_setup();
	queue_list(1, false);
	fake_open = true;
	ck_assert_int_eq(exec_line("probe list"), 0);
	ck_assert_str_eq(x_out, list_text);
	ck_assert_int_eq(x_err_len, 0);
	ck_assert_int_eq(k_request(), MAGNET_CMD_PROBE_GET);
	no_more_requests();
	ck_assert_int_eq(fake_closed, 1);

	fake_setup();
	queue_list(1, false);
	ck_assert_int_eq(exec_line("-j probe list"), 0);
	ck_assert_str_eq(x_out, list_json);

	/* The kernel's refusal: status 2, its message, the socket closed. */
	fake_setup();
	k_error(1, -EEXIST, NULL, "probe 'vfs_read' exists", -1, -1, -1);
	k_flush();
	ck_assert_int_eq(exec_line("probe add kprobe vfs_read"), CTL_EXIT_FAIL);
	ck_assert_str_eq(x_err, "magnet-ctl: probe add: probe 'vfs_read' exists (File exists)\n");
	ck_assert_int_eq(x_out_len, 0);
	ck_assert_int_eq(fake_opened, 3);
	ck_assert_int_eq(fake_closed, 3);
	fake_open = false;
}
END_TEST

/*
 * A daemon calls ctl_exec over and over: no descriptor (the netlink
 * socket) and no heap may be left behind, whether the command ran, was a
 * usage error, or found no module.
 */
START_TEST(exec_leaks_nothing)
{
	static const char *const lines[] = {
		"probe list", "-j stats", "help", "-V",
		"probe add kprobe vfs_read args 7", "filter add 16 cpu 3-1",
		"bogus", "buffer set size 3M",
	};
	FILE *null = fopen("/dev/null", "w");
	size_t heap;
	unsigned int i, k, failed = 0;
	int fds;

	ck_assert_ptr_nonnull(null);
	setvbuf(null, NULL, _IONBF, 0);
	/*
	 * Warm up first: stdio and libnl allocate what they keep for good,
	 * and malloc's per-size caches (tcache, 7 blocks a size) fill up over
	 * the first rounds; a leak goes on growing.
	 */
	for (k = 0; k < 70; k++) {
		if (k == 10) {
			fds = fd_count();
			heap = mallinfo2().uordblks;
		}
		/* The real ctl_nl_open(): no module here, or a real one. */
		fake_open = false;
		for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
			ctl_exec(split(lines[i]) - 1, argv_buf + 1, null, null);
		/* A command that ran, on the fake kernel's socket. */
		fake_setup();
		queue_list(1, false);
		fake_open = true;
		/* Check's assertions allocate: counted, checked after. */
		failed += ctl_exec(split("probe list") - 1, argv_buf + 1,
				   null, null) != 0;
		fake_open = false;
		close(kfd);
		close(tfd);
	}
	ck_assert_int_eq(failed, 0);
	ck_assert_int_eq(fake_closed, fake_opened);
	ck_assert_int_eq(fd_count(), fds);
	/* 540 calls: a leak of even one small block a call would be KiBs. */
	ck_assert_msg(mallinfo2().uordblks <= heap + 256,
		      "heap grew from %zu to %zu bytes", heap,
		      mallinfo2().uordblks);
	fclose(null);
}
END_TEST

static Suite *ctl_suite(void)
{
	Suite *s = suite_create("ctl");
	TCase *tc;

	tc = tcase_create("values");
	tcase_add_test(tc, numbers);
	tcase_add_test(tc, sizes);
	tcase_add_test(tc, durations);
	tcase_add_test(tc, cpu_lists);
	tcase_add_test(tc, targets_and_captures);
	tcase_add_test(tc, formats);
	tcase_add_test(tc, word_matching);
	suite_add_tcase(s, tc);

	tc = tcase_create("forms");
	tcase_add_test(tc, probe_add_forms);
	tcase_add_test(tc, probe_set_forms);
	tcase_add_test(tc, probe_other_forms);
	tcase_add_test(tc, filter_forms);
	tcase_add_test(tc, sample_buffer_stats_monitor_forms);
	tcase_add_test(tc, help_forms);
	suite_add_tcase(s, tc);

	tc = tcase_create("malformed");
	tcase_add_loop_test(tc, malformed, 0, sizeof(bad_lines) / sizeof(bad_lines[0]));
	tcase_add_test(tc, usage_lines);
	tcase_add_test(tc, no_kernel);
	suite_add_tcase(s, tc);

	tc = tcase_create("fake kernel");
	tcase_add_test(tc, run_probe_add);
	tcase_add_test(tc, run_probe_set);
	tcase_add_test(tc, run_probe_list);
	tcase_add_test(tc, run_dump_generation);
	tcase_add_test(tc, run_dump_gives_up);
	tcase_add_test(tc, run_show_and_filters);
	tcase_add_test(tc, run_show_error_after_probe);
	tcase_add_test(tc, run_probe_enable);
	tcase_add_test(tc, run_ext_ack);
	tcase_add_test(tc, run_buffer_and_stats);
	tcase_add_test(tc, run_monitor);
	tcase_add_test(tc, print_escaping);
	suite_add_tcase(s, tc);

	tc = tcase_create("in-process");
	tcase_add_loop_test(tc, exec_malformed, 0, sizeof(bad_lines) / sizeof(bad_lines[0]));
	tcase_add_test(tc, exec_same_as_program);
	tcase_add_test(tc, exec_runs_commands);
	tcase_add_test(tc, exec_leaks_nothing);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(ctl_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
