// SPDX-License-Identifier: GPL-2.0
/*
 * tools/client: mgclient's pure parts (addresses, framing, %XX, the HELLO,
 * PROBES, STATS, AGG and TOTALS parsers) on valid and malformed input;
 * mgjobs' grouping of jobs across nodes and its flow matcher on made-up
 * replies of two nodes; its connection over loopback against canned
 * servers (trickled bytes, cuts, overlong lines, a refusal); and the real
 * magnet-cat, magnet-top and magnet-jobs binaries against fake magnetds
 * that speak docs/protocol.md from a script, their output and exit status
 * checked (magnet-top's terminal mode on a pty, magnet-jobs -j by jq).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <munge.h>

#include "escape.h"
#include "mgclient.h"
#include "mgjobs.h"
#include "munged.h"
#include "print.h"
#include "record.h"
#include "testutil.h"

static char why[MGC_ERR_MAX];

/* ---- addresses ---- */

START_TEST(split_addr)
{
	static const struct {
		const char *spec, *host, *port;
	} ok[] = {
		{ NULL, "127.0.0.1", "8650" },
		{ "", "127.0.0.1", "8650" },
		{ "10.0.0.1:99", "10.0.0.1", "99" },
		{ "node7", "node7", "8650" },
		{ "node7:65535", "node7", "65535" },
		{ ":9000", "127.0.0.1", "9000" },
		{ "[::1]:8650", "::1", "8650" },
		{ "[::1]", "::1", "8650" },
		{ "[fe80::1%eth0]:1", "fe80::1%eth0", "1" },
		{ "::1", "::1", "8650" },
		{ "2001:db8::7", "2001:db8::7", "8650" },
	};
	static const char *const bad[] = {
		"host:", "host:0", "host:65536", "host:x", "host:-1", "host: 1",
		"[::1", "[]:1", "[::1]x", "[::1]:", "h:99999999999999999999999",
	};
	char host[256], port[8];
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ck_assert_msg(!mgc_split_addr(ok[i].spec, host, sizeof(host), port,
					      sizeof(port), why, sizeof(why)),
			      "'%s': %s", ok[i].spec, why);
		ck_assert_str_eq(host, ok[i].host);
		ck_assert_str_eq(port, ok[i].port);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		ck_assert_msg(mgc_split_addr(bad[i], host, sizeof(host), port,
					     sizeof(port), why, sizeof(why)) == -EINVAL,
			      "'%s' accepted", bad[i]);
		ck_assert_msg(why[0], "'%s': no reason", bad[i]);
	}
	/* A host longer than the buffer is refused, not cut. */
	ck_assert_int_eq(mgc_split_addr("abcdefgh:1", host, 8, port,
					sizeof(port), why, sizeof(why)), -EINVAL);
}
END_TEST

/* ---- framing ---- */

static ssize_t frame_str(const char *s, struct mgc_msg *m)
{
	return mgc_frame(s, strlen(s), m, why, sizeof(why));
}

START_TEST(frame_kinds)
{
	static const struct {
		const char *in;
		enum mgc_msg_kind kind;
		size_t len;		/* bytes the message spans */
		__u64 n;
		const char *body;
	} v[] = {
		{ "OK magnet 2 node=a\nrest", MGC_MSG_OK, 19, 0, "" },
		{ "OK\n", MGC_MSG_OK, 3, 0, "" },
		{ "OK bye\n", MGC_MSG_OK, 7, 0, "" },
		{ "OK 2 probes\na b\nc\nD 1\n", MGC_MSG_OK, 18, 2, "a b\nc\n" },
		{ "OK 0 probes\nx\n", MGC_MSG_OK, 12, 0, "" },
		{ "ERR unknown command 'X'\n", MGC_MSG_ERR, 24, 0, "" },
		{ "ERR\n", MGC_MSG_ERR, 4, 0, "" },
		{ "B 8\n12345678B 0\n", MGC_MSG_FRAME, 12, 8, "12345678" },
		{ "B 0\n", MGC_MSG_FRAME, 4, 0, "" },
		{ "D 5\n", MGC_MSG_DROP, 4, 5, "" },
		/* an AGG report's entry lines are not framed again: "B 1 ..." */
		{ "A comm 1 ts=1\nB 1 2 3.0 B\nD 9\n", MGC_MSG_AGG, 26, 1, "B 1 2 3.0 B\n" },
		{ "{\"ts\":1}\n", MGC_MSG_LINE, 9, 0, "" },
		{ "Bogus\n", MGC_MSG_LINE, 6, 0, "" },
		{ "OKAY\n", MGC_MSG_LINE, 5, 0, "" },
		{ "\n", MGC_MSG_LINE, 1, 0, "" },
	};
	struct mgc_msg m;
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		ssize_t r = frame_str(v[i].in, &m);

		ck_assert_msg(r == (ssize_t)v[i].len, "'%s': %zd (%s)", v[i].in, r, why);
		ck_assert_int_eq(m.kind, v[i].kind);
		ck_assert_uint_eq(m.n, v[i].n);
		ck_assert_uint_eq(m.all_len, v[i].len);
		ck_assert_ptr_eq(m.all, v[i].in);
		ck_assert_uint_eq(m.body_len, strlen(v[i].body));
		ck_assert(!memcmp(m.body, v[i].body, m.body_len));
		ck_assert(memchr(v[i].in, '\n', v[i].len) == v[i].in + m.line_len);
	}
}
END_TEST

START_TEST(frame_partial_and_bad)
{
	static const char *const partial[] = {
		"", "OK", "OK 2 probes\na\n", "OK 1 probes\n", "B 8\n1234567",
		"A tgid 2 ts=1\nx\n", "ERR no newline",
	};
	static const struct {
		const char *in;
		int err;
	} bad[] = {
		{ "B\n", -EPROTO }, { "B x\n", -EPROTO }, { "B 8 9\n", -EPROTO },
		{ "B -8\n", -EPROTO }, { "B 0x10\n", -EPROTO },
		{ "D\n", -EPROTO }, { "D 1 2\n", -EPROTO }, { "D -1\n", -EPROTO },
		{ "A\n", -EPROTO }, { "A tgid\n", -EPROTO }, { "A tgid x\n", -EPROTO },
		{ "B 99999999999\n", -EMSGSIZE },
		{ "A tgid 99999999999 ts=1\n", -EMSGSIZE },
		{ "OK 99999999999 probes\n", -EMSGSIZE },
	};
	static char big[MGC_LINE_MAX + 16];
	struct mgc_msg m;
	size_t i;

	for (i = 0; i < sizeof(partial) / sizeof(partial[0]); i++)
		ck_assert_msg(frame_str(partial[i], &m) == 0, "'%s'", partial[i]);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		ck_assert_msg(frame_str(bad[i].in, &m) == bad[i].err, "'%s'", bad[i].in);
		ck_assert(why[0]);
	}
	/* Exactly the line limit is fine; one byte more is not, newline or not. */
	memset(big, 'x', sizeof(big));
	big[MGC_LINE_MAX] = '\n';
	ck_assert_int_eq(mgc_frame(big, MGC_LINE_MAX + 1, &m, why, sizeof(why)),
			 MGC_LINE_MAX + 1);
	big[MGC_LINE_MAX] = 'x';
	big[MGC_LINE_MAX + 1] = '\n';
	ck_assert_int_eq(mgc_frame(big, MGC_LINE_MAX + 2, &m, why, sizeof(why)),
			 -EMSGSIZE);
	ck_assert_int_eq(mgc_frame(big, MGC_LINE_MAX + 1, &m, why, sizeof(why)),
			 -EMSGSIZE);
	ck_assert_int_eq(mgc_frame(big, MGC_LINE_MAX, &m, why, sizeof(why)), 0);
	/* A table line is bounded the same way. */
	memset(big, 'x', sizeof(big));
	memcpy(big, "OK 1 probes\n", 12);
	big[MGC_LINE_MAX + 12] = '\n';
	ck_assert_int_eq(mgc_frame(big, MGC_LINE_MAX + 13, &m, why, sizeof(why)),
			 MGC_LINE_MAX + 13);
	big[MGC_LINE_MAX + 12] = 'x';
	big[MGC_LINE_MAX + 13] = '\n';
	ck_assert_int_eq(mgc_frame(big, MGC_LINE_MAX + 14, &m, why, sizeof(why)),
			 -EMSGSIZE);
	ck_assert_ptr_nonnull(strstr(why, "longer than"));
}
END_TEST

/* Cut a stream anywhere: only whole messages come out, never more. */
START_TEST(frame_every_cut)
{
	static const char *const msgs[] = {
		"OK magnet 2 node=n cpus=1\n", "OK 2 probes\n16 k a\n17 k b\n",
		"B 16\n\n\n\n\nB 1\nD 2\nA B\n", "D 3\n",
		"A tgid 1 ts=1\n1 2 3 4.0 x\n", "{\"ts\":1}\n", "ERR x\n", "B 0\n",
	};
	char stream[512];
	size_t ends[16], nmsg = sizeof(msgs) / sizeof(msgs[0]), len = 0, cut, i;

	for (i = 0; i < nmsg; i++) {
		memcpy(stream + len, msgs[i], strlen(msgs[i]));
		len += strlen(msgs[i]);
		ends[i] = len;
	}
	for (cut = 0; cut <= len; cut++) {
		size_t off = 0, got = 0, want = 0;
		struct mgc_msg m;
		ssize_t r;

		while ((r = mgc_frame(stream + off, cut - off, &m, why, sizeof(why))) > 0) {
			ck_assert_uint_eq(off + r, ends[got]);
			off += r;
			got++;
		}
		ck_assert_msg(r == 0, "cut %zu: %zd %s", cut, r, why);
		while (want < nmsg && ends[want] <= cut)
			want++;
		ck_assert_uint_eq(got, want);
	}
}
END_TEST

/* ---- text helpers ---- */

START_TEST(unescape)
{
	static const struct {
		const char *in, *out;
	} ok[] = {
		{ "abc", "abc" }, { "a%20b", "a b" }, { "%25", "%" },
		{ "%2f%2F", "//" }, { "%e2%82%ac", "\xe2\x82\xac" },
		{ "100%25%0a", "100%\n" }, { "", "" },
	};
	static const char *const bad[] = {
		"%", "%2", "a%", "%zz", "%g1", "%1g", "%00", "x%0",
	};
	char out[64];
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ck_assert_int_eq(mgc_unescape(ok[i].in, strlen(ok[i].in), out,
					      sizeof(out)), strlen(ok[i].out));
		ck_assert_str_eq(out, ok[i].out);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(mgc_unescape(bad[i], strlen(bad[i]), out, sizeof(out)) ==
			      -EINVAL, "'%s' accepted", bad[i]);
	/* Not NUL-terminated input: only len bytes count. */
	ck_assert_int_eq(mgc_unescape("ab%41zz", 5, out, sizeof(out)), 3);
	ck_assert_str_eq(out, "abA");
	ck_assert_int_eq(mgc_unescape("abcd", 4, out, 4), -ENOSPC);
	ck_assert_int_eq(mgc_unescape("abc", 3, out, 4), 3);
}
END_TEST

START_TEST(escape)
{
	static const struct {
		const char *in, *out;
	} v[] = {
		{ "nginx", "nginx" }, { "a b", "a\\x20b" }, { "t\tx", "t\\x09x" },
		{ "back\\", "back\\\\" }, { "\x1b[2J", "\\x1b[2J" },
		{ "caf\xc3\xa9", "caf\xc3\xa9" },		/* UTF-8 stays */
		{ "\xc2\x9b" "1m", "\\xc2\\x9b1m" },		/* C1 CSI does not */
		{ "\xff\xfe", "\\xff\\xfe" }, { "\xc3", "\\xc3" },
		{ "\x7f", "\\x7f" },
	};
	char out[64];
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		ck_assert_str_eq(mgc_escape(out, sizeof(out), v[i].in), v[i].out);
	/* Cut to fit, whole escapes only. */
	ck_assert_str_eq(mgc_escape(out, 6, "ab\x01xyz"), "ab");
	ck_assert_str_eq(mgc_escape(out, 7, "ab\x01xyz"), "ab\\x01");
	ck_assert_str_eq(mgc_escape(out, 1, "abc"), "");
}
END_TEST

/* A server's line in a sentence: spaces kept, NULs too, "..." at a cut. */
START_TEST(quote)
{
	static const char line[] = "ERR bad \x1b[2J\0\x9b caf\xc3\xa9";
	char out[64];

	ck_assert_str_eq(mgc_quote(out, sizeof(out), line, sizeof(line) - 1, false),
			 "ERR bad \\x1b[2J\\x00\\x9b caf\xc3\xa9");
	ck_assert_str_eq(mgc_quote(out, sizeof(out), line, 7, true), "ERR bad...");
	/* Too long for buf: what fits, then the dots, within size. */
	ck_assert_str_eq(mgc_quote(out, 15, line, sizeof(line) - 1, false),
			 "ERR bad ...");
	ck_assert_str_eq(mgc_quote(out, 16, line, sizeof(line) - 1, false),
			 "ERR bad \\x1b...");
	ck_assert_str_eq(mgc_quote(out, 4, line, sizeof(line) - 1, false), "");
	ck_assert_str_eq(mgc_quote(out, 5, line, sizeof(line) - 1, false), "E...");
}
END_TEST

START_TEST(parse_u64)
{
	__u64 v;

	ck_assert_int_eq(mgc_parse_u64("18446744073709551615", 20, &v), 0);
	ck_assert_uint_eq(v, 18446744073709551615ULL);
	ck_assert_int_eq(mgc_parse_u64("18446744073709551616", 20, &v), -EINVAL);
	ck_assert_int_eq(mgc_parse_u64("007", 3, &v), 0);
	ck_assert_uint_eq(v, 7);
	ck_assert_int_eq(mgc_parse_u64("", 0, &v), -EINVAL);
	ck_assert_int_eq(mgc_parse_u64("+1", 2, &v), -EINVAL);
	ck_assert_int_eq(mgc_parse_u64("1 ", 2, &v), -EINVAL);
	ck_assert_int_eq(mgc_parse_u64("12x", 2, &v), 0);
	ck_assert_uint_eq(v, 12);
}
END_TEST

START_TEST(parse_ms)
{
	static const struct {
		const char *in;
		long long ms;
	} ok[] = {
		{ "1", 1000 }, { "0.5", 500 }, { "0.05", 50 }, { "1.25", 1250 },
		{ "0.001", 1 }, { "0", 0 }, { "86400", 86400000 },
		{ "1000000000", 1000000000000LL },
	};
	static const char *const bad[] = {
		"", ".5", "1.", "1.2345", "-1", "+1", "1e3", "0x10", "1s",
		"1000000001", "1 ", "1..2",
	};
	long long ms;
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ck_assert_msg(!mgc_parse_ms(ok[i].in, &ms), "'%s'", ok[i].in);
		ck_assert_int_eq(ms, ok[i].ms);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(mgc_parse_ms(bad[i], &ms) == -EINVAL, "'%s' accepted", bad[i]);
}
END_TEST

/* ---- HELLO ---- */

/* The fake magnetd sends records of this build's format. */
#define STR_(x) #x
#define STR(x) STR_(x)
#define FORMAT_NOW "format=" STR(MAGNET_FORMAT_VERSION)
#define HELLO_OK "OK magnet 2 node=node1 cpus=4 clock=mono order=le " FORMAT_NOW " module=up"

START_TEST(hello)
{
	static const char *const bad[] = {
		"OK magnet 2 cpus=4 clock=mono order=le format=1 module=up",
		"OK magnet 2 node= cpus=4 clock=mono order=le format=1 module=up",
		"OK magnet 2 node=n cpus=0 clock=mono order=le format=1 module=up",
		"OK magnet 2 node=n cpus=4x clock=mono order=le format=1 module=up",
		"OK magnet 2 node=n cpus=4 order=le format=1 module=up",
		"OK magnet 2 node=n cpus=4 clock=mono order=pdp format=1 module=up",
		"OK magnet 2 node=n cpus=4 clock=mono order=le format=-1 module=up",
		"OK magnet 2 node=n cpus=4 clock=mono order=le format=1 module=maybe",
		"OK magnet 2 node=n cpus=4 clock=mono order=le format=1",
		"OK magnet 2 node=n junk cpus=4 clock=mono order=le format=1 module=up",
		"OK magnet 2 node=n =x cpus=4 clock=mono order=le format=1 module=up",
		"OK magnet", "OK magnet x", "OK magnetd 1", "OK", "",
		"ERR too many clients",
	};
	struct mgc_hello h;
	size_t i;

	ck_assert_int_eq(mgc_parse_hello(HELLO_OK " future=yes", strlen(HELLO_OK) + 11,
					 &h, why, sizeof(why)), 0);
	ck_assert_uint_eq(h.version, 2);
	ck_assert_str_eq(h.node, "node1");
	ck_assert_uint_eq(h.cpus, 4);
	ck_assert_str_eq(h.clock, "mono");
	ck_assert(!h.big_endian);
	ck_assert_uint_eq(h.format, MAGNET_FORMAT_VERSION);
	ck_assert(h.module_up);
	ck_assert_str_eq(mgc_kvs_get(&h.kv, "future"), "yes");
	ck_assert_ptr_null(mgc_kvs_get(&h.kv, "nosuch"));
	mgc_hello_free(&h);

	ck_assert_int_eq(mgc_parse_hello("OK magnet 2 node=n cpus=2 clock=tsc order=be format=3 module=down",
					 66, &h, why, sizeof(why)), 0);
	ck_assert(h.big_endian && !h.module_up && h.format == 3);
	ck_assert_str_eq(h.clock, "tsc");
	mgc_hello_free(&h);

	/* Another version parses, for the caller to refuse by name. */
	ck_assert_int_eq(mgc_parse_hello("OK magnet 3 whatever", 20, &h, why,
					 sizeof(why)), 0);
	ck_assert_uint_eq(h.version, 3);
	mgc_hello_free(&h);

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		ck_assert_msg(mgc_parse_hello(bad[i], strlen(bad[i]), &h, why,
					      sizeof(why)) == -EPROTO,
			      "'%s' accepted", bad[i]);
		ck_assert(why[0]);
	}
}
END_TEST

/* ---- PROBES ---- */

static const char probes_reply[] =
	"OK 5 probes\n"
	"16 kprobe vfs_read nargs=3 hits=10 missed=0 symbol=vfs_read\n"
	"17 kretprobe vfs_read%25return nargs=1 hits=5 missed=1 later=1 symbol=vfs_read\n"
	"18 custom mymod:req%20done nargs=0 hits=0 missed=0 symbol=mymod:req%20done\n"
	"19 kprobe tcp_sendmsg%return nargs=0 hits=7 missed=0\n"
	"20 kprobe tx nargs=0 hits=1 missed=0 symbol=tcp_sendmsg+4\n";

START_TEST(probes)
{
	static const char *const bad[] = {
		"OK 2 probes\n16 kprobe a nargs=0 hits=0 missed=0\n",
		"OK 1 probes\n16 kprobe a nargs=0 hits=0 missed=0\n17 kprobe b nargs=0 hits=0 missed=0\n",
		"OK 1 probes\nx kprobe a nargs=0 hits=0 missed=0\n",
		"OK 1 probes\n70000 kprobe a nargs=0 hits=0 missed=0\n",
		"OK 1 probes\n16 kprobe a nargs=7 hits=0 missed=0\n",
		"OK 1 probes\n16 kprobe a nargs=1 missed=0\n",
		"OK 1 probes\n16 kprobe a nargs=1 hits=1x missed=0\n",
		"OK 1 probes\n16 kprobe a nargs=1 hits missed=0\n",
		"OK 1 probes\n16 kprobe\n",
		"OK 1 probes\n\n",
		"OK probes\n", "OK 1 cpus\n16 kprobe a nargs=0 hits=0 missed=0\n",
		"ERR x\n", "",
		"OK 2 probes\n16 kprobe a nargs=0 hits=0 missed=0\n16 kretprobe b nargs=0 hits=0 missed=0\n",
		"OK 65537 probes\n",
	};
	struct mg_probe_table t;
	size_t i, len;
	char *big;

	ck_assert_int_eq(mgc_parse_probes(probes_reply, strlen(probes_reply), &t,
					  why, sizeof(why)), 0);
	ck_assert_uint_eq(t.n, 5);
	ck_assert_uint_eq(t.v[0].id, 16);
	ck_assert_str_eq(t.v[0].type, "kprobe");
	ck_assert_str_eq(t.v[0].name, "vfs_read");
	ck_assert_str_eq(t.v[0].target, "vfs_read");
	ck_assert_uint_eq(t.v[0].nargs, 3);
	ck_assert_uint_eq(t.v[0].hits, 10);
	/* A kretprobe: its own name, its kprobe's symbol. */
	ck_assert_str_eq(t.v[1].name, "vfs_read%return");
	ck_assert_str_eq(t.v[1].target, "vfs_read");
	ck_assert_uint_eq(t.v[1].missed, 1);
	ck_assert_str_eq(t.v[2].type, "custom");
	ck_assert_str_eq(t.v[2].name, "mymod:req done");
	ck_assert_str_eq(t.v[2].target, "mymod:req done");
	/* '%' left as it is (not %25): taken literally; no symbol=: the name */
	ck_assert_str_eq(t.v[3].name, "tcp_sendmsg%return");
	ck_assert_str_eq(t.v[3].target, "tcp_sendmsg%return");
	ck_assert_str_eq(t.v[4].name, "tx");
	ck_assert_str_eq(t.v[4].target, "tcp_sendmsg+4");
	ck_assert_str_eq(mg_event_name(&t, 18), "mymod:req done");
	ck_assert_str_eq(mg_event_name(&t, 20), "tx");
	mg_probes_free(&t);

	/* The last line may lack its '\n' (a caller's own text). */
	ck_assert_int_eq(mgc_parse_probes("OK 1 probes\n16 k a nargs=0 hits=0 missed=0",
					  43, &t, why, sizeof(why)), 0);
	ck_assert_uint_eq(t.n, 1);
	mg_probes_free(&t);
	ck_assert_int_eq(mgc_parse_probes("OK 0 probes\n", 12, &t, why, sizeof(why)), 0);
	ck_assert_uint_eq(t.n, 0);
	mg_probes_free(&t);

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		ck_assert_msg(mgc_parse_probes(bad[i], strlen(bad[i]), &t, why,
					       sizeof(why)) == -EPROTO,
			      "'%s' accepted", bad[i]);
		ck_assert(why[0]);
		ck_assert_uint_eq(t.n, 0);
	}
	ck_assert_int_eq(mgc_parse_probes(bad[0], strlen(bad[0]), &t, why, sizeof(why)),
			 -EPROTO);
	ck_assert_str_eq(why, "PROBES: 2 lines announced, fewer follow");
	ck_assert_int_eq(mgc_parse_probes(bad[1], strlen(bad[1]), &t, why, sizeof(why)),
			 -EPROTO);
	ck_assert_str_eq(why, "PROBES: 1 lines announced, more follow");
	i = sizeof(bad) / sizeof(bad[0]) - 2;
	ck_assert_int_eq(mgc_parse_probes(bad[i], strlen(bad[i]), &t, why, sizeof(why)),
			 -EPROTO);
	ck_assert_str_eq(why, "PROBES line 2: id 16 named twice");
	i++;
	ck_assert_int_eq(mgc_parse_probes(bad[i], strlen(bad[i]), &t, why, sizeof(why)),
			 -EPROTO);
	ck_assert_str_eq(why, "PROBES: 65537 lines (more than the 65536 event ids)");

	/* Every id, from the top: each found, by its line. */
	big = malloc(64 * MG_PROBES_MAX + 32);
	len = sprintf(big, "OK %u probes\n", MG_PROBES_MAX);
	for (i = 0; i < MG_PROBES_MAX; i++)
		len += sprintf(big + len, "%zu kprobe p%zu nargs=0 hits=0 missed=0\n",
			       MAGNET_EVENT_MAX - i, MAGNET_EVENT_MAX - i);
	ck_assert_int_eq(mgc_parse_probes(big, len, &t, why, sizeof(why)), 0);
	for (i = 0; i < MG_PROBES_MAX; i++) {
		char name[16];

		snprintf(name, sizeof(name), "p%zu", i);
		ck_assert_str_eq(mg_probes_find(&t, i)->target, name);
	}
	mg_probes_free(&t);
	free(big);
}
END_TEST

/* ---- STATS ---- */

#define STATS_OK_WORDS "uptime=3725 module=up reloads=1 clients=4 subscribers=1 " \
	"aggregators=3 read=1000 read_bytes=64000 read_lost=13 queue_dropped=2 " \
	"sent=900 client_dropped=5 cut_off=0 refused=1 trace_files=0 " \
	"trace_bytes=0 trace_dropped=0 trace_errors=0"
#define CPU_LINE(c, r) "cpu=" #c " written=" #r " bytes=64 lost_full=1 lost_too_big=0 " \
	"lost_nesting=0 overwritten=0 read=" #r " read_lost=1\n"

START_TEST(stats)
{
	static const char good[] = "OK 2 cpus " STATS_OK_WORDS " newkey=x\n"
		CPU_LINE(0, 600) CPU_LINE(1, 400);
	static const char *const bad[] = {
		"OK 2 cpus " STATS_OK_WORDS "\n" CPU_LINE(0, 1),
		"OK 1 cpus " STATS_OK_WORDS "\n" CPU_LINE(0, 1) CPU_LINE(1, 1),
		"OK 0 cpus uptime=1 module=up\n",
		/* the first of a key counts */
		"OK 0 cpus module=sideways " STATS_OK_WORDS "\n",
		"OK 0 cpus read=x " STATS_OK_WORDS "\n",
		"OK 1 cpus " STATS_OK_WORDS "\ncpu=0 written=1\n",
		"OK 1 cpus " STATS_OK_WORDS "\ncpu=99999999999 written=1 bytes=64 lost_full=1 lost_too_big=0 lost_nesting=0 overwritten=0 read=1 read_lost=1\n",
		"OK 1 cpus " STATS_OK_WORDS "\n0 1 2 3\n",
		"OK x cpus\n", "OK 1 probes\n",
	};
	struct mgc_stats s;
	size_t i;

	ck_assert_int_eq(mgc_parse_stats(good, strlen(good), &s, why, sizeof(why)), 0);
	ck_assert(s.module_up);
	ck_assert_uint_eq(s.uptime, 3725);
	ck_assert_uint_eq(s.clients, 4);
	ck_assert_uint_eq(s.read_lost, 13);
	ck_assert_uint_eq(s.queue_dropped, 2);
	ck_assert_uint_eq(s.client_dropped, 5);
	ck_assert_uint_eq(s.refused, 1);
	ck_assert_uint_eq(s.ncpus, 2);
	ck_assert_uint_eq(s.cpu[1].cpu, 1);
	ck_assert_uint_eq(s.cpu[1].read, 400);
	ck_assert_uint_eq(s.cpu[0].lost_full, 1);
	ck_assert_str_eq(mgc_kvs_get(&s.kv, "newkey"), "x");
	mgc_stats_free(&s);

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		ck_assert_msg(mgc_parse_stats(bad[i], strlen(bad[i]), &s, why,
					      sizeof(why)) == -EPROTO,
			      "'%s' accepted", bad[i]);
		ck_assert(why[0]);
	}
	/* The first missing key is named. */
	ck_assert_int_eq(mgc_parse_stats(bad[2], strlen(bad[2]), &s, why, sizeof(why)),
			 -EPROTO);
	ck_assert_str_eq(why, "STATS: no reloads=");
}
END_TEST

/* ---- AGG ---- */

#define AGG_HEAD(key, n, ev) "A " key " " #n " ts=1700000000000000000 " \
	"interval=1000000000 events=" #ev " bytes=320640 keys=" #n " lost=0 " \
	"evicted=0 evicted_events=0 unkeyed=0 dropped=0\n"

START_TEST(agg)
{
	static const char tgid[] = AGG_HEAD("tgid", 2, 5010)
		"E 100 5000 320000 5000.0 alpha\n"
		"E 200 10 640 10.5 be%20ta%25\n";
	static const char extra[] = AGG_HEAD("probe", 1, 1) "E 16 1 64 1.0 vfs_read extra\n";
	static const char comm[] = AGG_HEAD("comm", 3, 3)
		"E my%25comm 1 96 3.0 my%25comm\n"
		"E OK 1 32 1.0 -\n"
		"E D%201 1 32 1.0 -\n";
	static const char *const bad[] = {
		AGG_HEAD("tgid", 2, 1) "E 100 1 64 1.0 a\n",
		AGG_HEAD("tgid", 1, 1) "E 100 1 64 1.0 a\nE 200 1 64 1.0 b\n",
		/* Version 1's entry line, without its tag. */
		AGG_HEAD("tgid", 1, 1) "100 1 64 1.0 a\n",
		AGG_HEAD("comm", 1, 1) "OK 1 64 1.0 -\n",
		AGG_HEAD("tgid", 1, 1) "E 100 1 64\n",
		AGG_HEAD("tgid", 1, 1) "E abc 1 64 1.0 a\n",
		AGG_HEAD("tgid", 1, 1) "E 100 1x 64 1.0 a\n",
		AGG_HEAD("tgid", 1, 1) "E 100 1 -64 1.0 a\n",
		AGG_HEAD("tgid", 1, 1) "E 100 1 64 1e3 a\n",
		AGG_HEAD("tgid", 1, 1) "E 100 1 64 -1.0 a\n",
		AGG_HEAD("tgid", 1, 1) "E 100 1 64 1. a\n",
		AGG_HEAD("tgid", 1, 1) "E 100 1 64 nan a\n",
		AGG_HEAD("tgid", 1, 1) "E 100 1 64 1.0 a%zz\n",
		AGG_HEAD("comm", 1, 1) "E a%0 1 64 1.0 a\n",
		AGG_HEAD("tgid", 1, 1) "E 100 1 64 1.0 a%00\n",
		"A tgid 0 ts=1 interval=1 events=0 bytes=0 keys=0 lost=0 evicted=0 evicted_events=0 unkeyed=0\n",
		"A tgid 0 ts=x interval=1 events=0 bytes=0 keys=0 lost=0 evicted=0 evicted_events=0 unkeyed=0 dropped=0\n",
		"A TGID 0 ts=1 interval=1 events=0 bytes=0 keys=0 lost=0 evicted=0 evicted_events=0 unkeyed=0 dropped=0\n",
		"A tgid\n", "A\n", "B 1\n", "",
	};
	struct mgc_agg a;
	size_t i;

	ck_assert_int_eq(mgc_parse_agg(tgid, strlen(tgid), &a, why, sizeof(why)), 0);
	ck_assert_str_eq(a.key, "tgid");
	ck_assert(a.numeric);
	ck_assert_uint_eq(a.ts, 1700000000000000000ULL);
	ck_assert_uint_eq(a.interval, 1000000000);
	ck_assert_uint_eq(a.events, 5010);
	ck_assert_uint_eq(a.keys, 2);
	ck_assert_uint_eq(a.n, 2);
	ck_assert_str_eq(a.v[0].value, "100");
	ck_assert_uint_eq(a.v[0].id, 100);
	ck_assert_uint_eq(a.v[0].events, 5000);
	ck_assert_uint_eq(a.v[0].bytes, 320000);
	ck_assert_double_eq(a.v[0].rate, 5000.0);
	ck_assert_str_eq(a.v[0].label, "alpha");
	ck_assert_double_eq_tol(a.v[1].rate, 10.5, 1e-9);
	ck_assert_str_eq(a.v[1].label, "be ta%");
	mgc_agg_free(&a);

	ck_assert_int_eq(mgc_parse_agg(comm, strlen(comm), &a, why, sizeof(why)), 0);
	ck_assert(!a.numeric);
	ck_assert_str_eq(a.v[0].value, "my%comm");
	ck_assert_str_eq(a.v[0].label, "my%comm");
	ck_assert_str_eq(a.v[1].value, "OK");
	ck_assert_str_eq(a.v[2].value, "D 1");
	mgc_agg_free(&a);

	/* An empty report, and words a later daemon may add, are fine. */
	ck_assert_int_eq(mgc_parse_agg(AGG_HEAD("probe", 0, 0), strlen(AGG_HEAD("probe", 0, 0)),
				       &a, why, sizeof(why)), 0);
	ck_assert_uint_eq(a.n, 0);
	mgc_agg_free(&a);
	ck_assert_int_eq(mgc_parse_agg(extra, strlen(extra), &a, why, sizeof(why)), 0);
	ck_assert_str_eq(a.v[0].label, "vfs_read");
	mgc_agg_free(&a);

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		ck_assert_msg(mgc_parse_agg(bad[i], strlen(bad[i]), &a, why,
					    sizeof(why)) == -EPROTO,
			      "'%s' accepted", bad[i]);
		ck_assert(why[0]);
		ck_assert_uint_eq(a.n, 0);
	}
	ck_assert_int_eq(mgc_parse_agg(bad[0], strlen(bad[0]), &a, why, sizeof(why)),
			 -EPROTO);
	ck_assert_str_eq(why, "AGG: 2 lines announced, fewer follow");
}
END_TEST

/* ---- AGG net ---- */

#define NET_HEAD(n) "A net " #n " ts=1700000000000000000 interval=500000000 " \
	"packets=42 bytes=70000 jobs=3 peers=4 lost=1 evicted_jobs=2 " \
	"evicted_job_bytes=300 evicted_peers=5 evicted_peer_bytes=600 " \
	"unkeyed=7 dropped=8 skipped=9\n"

START_TEST(agg_net)
{
	static const char good[] = NET_HEAD(5)
		"J 4242 tcp 10 64000 20 3000 /system.slice/a%20b.service\n"
		"J 0 udp 1 100 0 0 -\n"
		"P 4242 tcp 10.0.0.2:443 10 64000 18 2900 10.0.0.1:51000\n"
		"P 4242 tcp [fe80::1]:8080 0 0 2 100\n"	/* a server before the local end */
		"P 0 ipproto47 192.168.1.1:0 1 100 0 0 10.0.0.1:0 extra words\n";
	static const char peers_only[] = NET_HEAD(1) "P 1 udp 1.2.3.4:53 1 2 3 4\n";
	static const char *const bad[] = {
		NET_HEAD(2) "J 1 tcp 1 2 3 4 a\n",			/* fewer */
		NET_HEAD(1) "J 1 tcp 1 2 3 4 a\nJ 2 tcp 1 2 3 4 b\n",	/* more */
		NET_HEAD(2) "P 1 tcp 1.2.3.4:5 1 2 3 4\nJ 1 tcp 1 2 3 4 a\n",
		NET_HEAD(1) "X 1 tcp 1 2 3 4 a\n",
		NET_HEAD(1) "j 1 tcp 1 2 3 4 a\n",
		NET_HEAD(1) "\n",
		NET_HEAD(1) "J 1 tcp 1 2 3 4\n",
		NET_HEAD(1) "P 1 tcp 1.2.3.4:5 1 2 3\n",
		NET_HEAD(1) "J x tcp 1 2 3 4 a\n",
		NET_HEAD(1) "J 4294967296 tcp 1 2 3 4 a\n",
		NET_HEAD(1) "J -1 tcp 1 2 3 4 a\n",
		NET_HEAD(1) "J 1 tcp 1 2x 3 4 a\n",
		NET_HEAD(1) "J 1 tcp 1 2 3 18446744073709551616 a\n",
		NET_HEAD(1) "P 1 tcp 1.2.3.4:5 1 2 3 -4\n",
		NET_HEAD(1) "J 1 tcp 1 2 3 4 a%zz\n",
		NET_HEAD(1) "J 1 tcp 1 2 3 4 a%00\n",
		NET_HEAD(1) "J 1 t%p 1 2 3 4 a\n",
		NET_HEAD(1) "P 1 tcp 1.2.3.4%:5 1 2 3 4\n",
		NET_HEAD(1) "P 1 tcp 1.2.3.4:5 1 2 3 4 1.2.3.5%:6\n",
		"A net 0 ts=1 interval=1 packets=0 bytes=0 jobs=0 peers=0 lost=0 evicted_jobs=0 evicted_job_bytes=0 evicted_peers=0 evicted_peer_bytes=0 unkeyed=0 dropped=0\n",
		"A net 0 ts=1 interval=1 packets=x bytes=0 jobs=0 peers=0 lost=0 evicted_jobs=0 evicted_job_bytes=0 evicted_peers=0 evicted_peer_bytes=0 unkeyed=0 dropped=0 skipped=0\n",
		"A net 2000000 ts=1\n",
		AGG_HEAD("tgid", 1, 1) "100 1 64 1.0 a\n",
		"A net\n", "A net x\n", "",
	};
	static const char *const bad_why[] = {
		"AGG net: 2 lines announced, fewer follow",
		"AGG net: 1 lines announced, more follow",
		"AGG net line 2: a J line after the P lines: 'J 1 tcp 1 2 3 4 a'",
		"AGG net line 1: expected a J or P line, not 'X 1 tcp 1 2 3 4 a'",
		"AGG net line 1: expected a J or P line, not 'j 1 tcp 1 2 3 4 a'",
		"AGG net line 1: empty",
		"AGG net line 1: expected 'J <job> <proto> <tx_packets> <tx_bytes> <rx_packets> <rx_bytes> <label>', not 'J 1 tcp 1 2 3 4'",
		"AGG net line 1: expected 'P <job> <proto> <peer> <tx_packets> <tx_bytes> <rx_packets> <rx_bytes> [<local>]', not 'P 1 tcp 1.2.3.4:5 1 2 3'",
		"AGG net line 1: bad job (a 32-bit number) in 'J x tcp 1 2 3 4 a'",
		"AGG net line 1: bad job (a 32-bit number) in 'J 4294967296 tcp 1 2 3 4 a'",
		"AGG net line 1: bad job (a 32-bit number) in 'J -1 tcp 1 2 3 4 a'",
		"AGG net line 1: bad packets or bytes in 'J 1 tcp 1 2x 3 4 a'",
		"AGG net line 1: bad packets or bytes in 'J 1 tcp 1 2 3 18446744073709551616 a'",
		"AGG net line 1: bad packets or bytes in 'P 1 tcp 1.2.3.4:5 1 2 3 -4'",
		"AGG net line 1: bad %XX escape in the label of 'J 1 tcp 1 2 3 4 a%zz'",
		"AGG net line 1: bad %XX escape in the label of 'J 1 tcp 1 2 3 4 a%00'",
		"AGG net line 1: bad %XX escape in the proto of 'J 1 t%p 1 2 3 4 a'",
		"AGG net line 1: bad %XX escape in the peer of 'P 1 tcp 1.2.3.4%:5 1 2 3 4'",
		"AGG net line 1: bad %XX escape in the local end of 'P 1 tcp 1.2.3.4:5 1 2 3 4 1.2.3.5%:6'",
		"AGG net: no skipped=",
		"AGG net: packets=x is not a number",
		"AGG net: 2000000 lines (more than 1048576)",
		"expected 'A net <n> ...', not 'A tgid 1 ts=1700000000000000000 interval...'",
		"expected 'A net <n> ...', not 'A net'",
		"expected 'A net <n> ...', not 'A net x'",
		"empty AGG net report",
	};
	struct mgc_net a;
	struct mgc_agg g;
	size_t i;

	ck_assert_int_eq(mgc_parse_net(good, strlen(good), &a, why, sizeof(why)), 0);
	ck_assert_uint_eq(a.ts, 1700000000000000000ULL);
	ck_assert_uint_eq(a.interval, 500000000);
	ck_assert_uint_eq(a.packets, 42);
	ck_assert_uint_eq(a.bytes, 70000);
	ck_assert_uint_eq(a.jobs, 3);
	ck_assert_uint_eq(a.peers, 4);
	ck_assert_uint_eq(a.lost, 1);
	ck_assert_uint_eq(a.evicted_jobs, 2);
	ck_assert_uint_eq(a.evicted_job_bytes, 300);
	ck_assert_uint_eq(a.evicted_peers, 5);
	ck_assert_uint_eq(a.evicted_peer_bytes, 600);
	ck_assert_uint_eq(a.unkeyed, 7);
	ck_assert_uint_eq(a.dropped, 8);
	ck_assert_uint_eq(a.skipped, 9);
	ck_assert_uint_eq(a.njobs, 2);
	ck_assert_uint_eq(a.npeers, 3);
	ck_assert_uint_eq(a.job[0].job, 4242);
	ck_assert_str_eq(a.job[0].proto, "tcp");
	ck_assert_uint_eq(a.job[0].tx_packets, 10);
	ck_assert_uint_eq(a.job[0].tx_bytes, 64000);
	ck_assert_uint_eq(a.job[0].rx_packets, 20);
	ck_assert_uint_eq(a.job[0].rx_bytes, 3000);
	ck_assert_str_eq(a.job[0].label, "/system.slice/a b.service");
	ck_assert_uint_eq(a.job[1].job, 0);
	ck_assert_str_eq(a.job[1].proto, "udp");
	ck_assert_str_eq(a.job[1].label, "-");
	ck_assert_uint_eq(a.peer[0].job, 4242);
	ck_assert_str_eq(a.peer[0].peer, "10.0.0.2:443");
	ck_assert_uint_eq(a.peer[0].tx_packets, 10);
	ck_assert_uint_eq(a.peer[0].tx_bytes, 64000);
	ck_assert_uint_eq(a.peer[0].rx_packets, 18);
	ck_assert_uint_eq(a.peer[0].rx_bytes, 2900);
	ck_assert_str_eq(a.peer[0].local, "10.0.0.1:51000");
	ck_assert_str_eq(a.peer[1].peer, "[fe80::1]:8080");
	ck_assert_uint_eq(a.peer[1].rx_bytes, 100);
	ck_assert_ptr_null(a.peer[1].local);
	ck_assert_str_eq(a.peer[2].proto, "ipproto47");
	ck_assert_str_eq(a.peer[2].peer, "192.168.1.1:0");
	ck_assert_uint_eq(a.peer[2].tx_bytes, 100);
	ck_assert_str_eq(a.peer[2].local, "10.0.0.1:0");
	mgc_net_free(&a);

	/* P lines alone, and an empty report (no skb probes) */
	ck_assert_int_eq(mgc_parse_net(peers_only, strlen(peers_only), &a, why,
				       sizeof(why)), 0);
	ck_assert_uint_eq(a.njobs, 0);
	ck_assert_uint_eq(a.npeers, 1);
	ck_assert_str_eq(a.peer[0].peer, "1.2.3.4:53");
	mgc_net_free(&a);
	ck_assert_int_eq(mgc_parse_net(NET_HEAD(0), strlen(NET_HEAD(0)), &a, why,
				       sizeof(why)), 0);
	ck_assert_uint_eq(a.njobs + a.npeers, 0);
	mgc_net_free(&a);

	ck_assert_uint_eq(sizeof(bad) / sizeof(bad[0]), sizeof(bad_why) / sizeof(bad_why[0]));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		ck_assert_msg(mgc_parse_net(bad[i], strlen(bad[i]), &a, why,
					    sizeof(why)) == -EPROTO,
			      "'%s' accepted", bad[i]);
		ck_assert_str_eq(why, bad_why[i]);
		ck_assert_uint_eq(a.njobs + a.npeers, 0);
		ck_assert_ptr_null(a.job);
	}

	/* The AGG parser does not take a net report for entries. */
	ck_assert_int_eq(mgc_parse_agg(good, strlen(good), &g, why, sizeof(why)), -EPROTO);
	ck_assert_str_eq(why, "AGG: a net report has J and P lines, not entries (mgc_parse_net)");

	/* Framed whole: the n lines of both kinds are the body. */
	{
		struct mgc_msg m;
		char buf[1024];

		snprintf(buf, sizeof(buf), "%sD 3\n", good);
		ck_assert_int_eq(mgc_frame(buf, strlen(buf), &m, why, sizeof(why)),
				 (ssize_t)strlen(good));
		ck_assert_int_eq(m.kind, MGC_MSG_AGG);
		ck_assert_uint_eq(m.n, 5);
		ck_assert_uint_eq(m.all_len, strlen(good));
	}
}
END_TEST

/* ---- TOTALS and jobs across nodes ---- */

/*
 * Two nodes, 10.0.0.1 and 10.0.0.2, sharing two Slurm jobs: 42 (step 0
 * on both, and its batch step on node1) sends TCP from node1 to node2;
 * 43 sends UDP from node1 to node2, TCP over node1's loopback to 42's
 * batch step, and DNS to a host that is no queried node.
 */
#define JOBS_TOTALS_1 \
	"OK 16 totals node=node1 ts=1 uptime=5 module=up cpus=2 records=100 bytes=1000 kernel_lost=0 daemon_dropped=0 probes=5 jobs=4 net_packets=127 net_bytes=106167 net_unkeyed=0\n" \
	"probe 16 kprobe ip_output events=10 sock_bytes=0 sock=0 loaded=1 symbol=ip_output\n" \
	"job 4001 /system.slice/slurmstepd.scope/job_42/step_0 events=10 sock_bytes=0 exported=1 intr=0 lost_fair=0 slurm_job_id=42 slurm_step=0 uid=1000\n" \
	"net 4001 tcp tx_packets=70 tx_bytes=100000 rx_packets=40 rx_bytes=1007\n" \
	"peer 4001 10.0.0.2 tx_packets=70 tx_bytes=100000 rx_packets=40 rx_bytes=1007\n" \
	"peer 4001 other tx_packets=0 tx_bytes=0 rx_packets=0 rx_bytes=0 evictions=0\n" \
	"job 4002 /system.slice/slurmstepd.scope/job_43/step_0 events=8 sock_bytes=0 exported=1 intr=0 lost_fair=0 slurm_job_id=43 slurm_step=0 uid=1001\n" \
	"net 4002 tcp tx_packets=3 tx_bytes=30 rx_packets=3 rx_bytes=30\n" \
	"net 4002 udp tx_packets=6 tx_bytes=5050 rx_packets=1 rx_bytes=50\n" \
	"peer 4002 10.0.0.2 tx_packets=5 tx_bytes=5000 rx_packets=0 rx_bytes=0\n" \
	"peer 4002 192.168.9.9 tx_packets=1 tx_bytes=50 rx_packets=1 rx_bytes=50\n" \
	"peer 4002 127.0.0.1 tx_packets=3 tx_bytes=30 rx_packets=3 rx_bytes=30\n" \
	"peer 4002 other tx_packets=0 tx_bytes=0 rx_packets=0 rx_bytes=0 evictions=0\n" \
	"job 4003 /system.slice/slurmstepd.scope/job_42/step_batch events=3 sock_bytes=0 exported=1 intr=0 lost_fair=0 slurm_job_id=42 slurm_step=batch uid=1000\n" \
	"net 4003 tcp tx_packets=3 tx_bytes=30 rx_packets=3 rx_bytes=30\n" \
	"peer 4003 127.0.0.1 tx_packets=3 tx_bytes=30 rx_packets=3 rx_bytes=30\n" \
	"job 0 other events=0 sock_bytes=0 exported=1 intr=0 lost_fair=0\n"
#define JOBS_TOTALS_2 \
	"OK 9 totals node=node2 ts=1 uptime=5 module=up cpus=2 records=100 bytes=1000 kernel_lost=0 daemon_dropped=0 probes=5 jobs=3 net_packets=115 net_bytes=106007 net_unkeyed=0\n" \
	"job 5001 /system.slice/slurmstepd.scope/job_42/step_0 events=10 sock_bytes=0 exported=1 intr=0 lost_fair=0 slurm_job_id=42 slurm_step=0 uid=1000\n" \
	"net 5001 tcp tx_packets=40 tx_bytes=1007 rx_packets=70 rx_bytes=100000\n" \
	"peer 5001 10.0.0.1 tx_packets=40 tx_bytes=1007 rx_packets=70 rx_bytes=100000\n" \
	"peer 5001 other tx_packets=0 tx_bytes=0 rx_packets=0 rx_bytes=0 evictions=0\n" \
	"job 5002 /system.slice/slurmstepd.scope/job_43/step_0 events=1 sock_bytes=0 exported=1 intr=0 lost_fair=0 slurm_job_id=43 slurm_step=0 uid=1001\n" \
	"net 5002 udp tx_packets=0 tx_bytes=0 rx_packets=5 rx_bytes=5000\n" \
	"peer 5002 10.0.0.1 tx_packets=0 tx_bytes=0 rx_packets=5 rx_bytes=5000\n" \
	"peer 5002 other tx_packets=0 tx_bytes=0 rx_packets=0 rx_bytes=0 evictions=0\n" \
	"job 0 other events=0 sock_bytes=0 exported=1 intr=0 lost_fair=0\n"
#define JOBS_NET_1 "A net 7 ts=1 interval=1000000000 packets=20 bytes=20 jobs=3 peers=5 " \
	"lost=0 evicted_jobs=0 evicted_job_bytes=0 evicted_peers=0 evicted_peer_bytes=0 " \
	"unkeyed=0 dropped=0 skipped=0\n" \
	"J 4001 tcp 7 10000 4 100 /system.slice/slurmstepd.scope/job_42/step_0\n" \
	"J 4002 udp 1 1000 0 0 /system.slice/slurmstepd.scope/job_43/step_0\n" \
	"P 4001 tcp 10.0.0.2:5001 7 10000 4 100 10.0.0.1:40000\n" \
	"P 4002 udp 10.0.0.2:6000 1 1000 0 0 10.0.0.1:40001\n" \
	"P 4002 tcp 127.0.0.1:7000 1 10 1 10 127.0.0.1:40002\n" \
	"P 4003 tcp 127.0.0.1:40002 1 10 1 10 127.0.0.1:7000\n" \
	"P 4002 udp 192.168.9.9:53 1 50 1 50 10.0.0.1:40003\n"
#define JOBS_NET_2 "A net 2 ts=1 interval=1000000000 packets=12 bytes=11100 jobs=2 peers=2 " \
	"lost=0 evicted_jobs=0 evicted_job_bytes=0 evicted_peers=0 evicted_peer_bytes=0 " \
	"unkeyed=0 dropped=0 skipped=0\n" \
	"P 5001 tcp 10.0.0.1:40000 4 100 7 10000 10.0.0.2:5001\n" \
	"P 5002 udp 10.0.0.1:40001 0 0 1 1000 10.0.0.2:6000\n"

START_TEST(totals)
{
	static const char *const bad[] = {
		"OK 1 totals node=n ts=1 uptime=1 records=1 bytes=1 kernel_lost=0 daemon_dropped=0\nnet 1 tcp tx_packets=1 tx_bytes=1 rx_packets=1 rx_bytes=1\n",
		"OK 2 totals node=n ts=1 uptime=1 records=1 bytes=1 kernel_lost=0 daemon_dropped=0\njob 1 /a events=1 sock_bytes=0 exported=1\npeer 2 1.2.3.4 tx_packets=1 tx_bytes=1 rx_packets=1 rx_bytes=1\n",
		"OK 2 totals node=n ts=1 uptime=1 records=1 bytes=1 kernel_lost=0 daemon_dropped=0\njob 1 /a events=1 sock_bytes=0 exported=1\nnet 1 tcp tx_packets=1 tx_bytes=1 rx_packets=x rx_bytes=1\n",
		"OK 2 totals node=n ts=1 uptime=1 records=1 bytes=1 kernel_lost=0 daemon_dropped=0\njob 1 /a events=1 sock_bytes=0 exported=1\npeer 1 other tx_packets=1 tx_bytes=1 rx_packets=1 rx_bytes=1\n",
		"OK 1 totals node=n ts=1 uptime=1 records=1 bytes=1 kernel_lost=0 daemon_dropped=0\njob 1 /a events=1 exported=1\n",
		"OK 1 totals node=n ts=1 uptime=1 records=1 bytes=1 kernel_lost=0 daemon_dropped=0\njob 1 /a%zz events=1 sock_bytes=0 exported=1\n",
		"OK 1 totals node=n ts=1 uptime=1 records=1 bytes=1 kernel_lost=0 daemon_dropped=0\njob 1 /a events=1 sock_bytes=0 exported=2\n",
		"OK 2 totals node=n ts=1 uptime=1 records=1 bytes=1 kernel_lost=0 daemon_dropped=0\njob 1 /a events=1 sock_bytes=0 exported=1\n",
		"OK 0 totals ts=1 uptime=1 records=1 bytes=1 kernel_lost=0 daemon_dropped=0\n",
		"OK 0 totals node=n ts=1 uptime=1 records=1 bytes=1 kernel_lost=0\n",
		"OK 0 probes\n",
	};
	static const char *const bad_why[] = {
		"TOTALS line 1: not after its job's line: 'net 1 tcp tx_packets=1 tx_bytes=1 rx_pac...'",
		"TOTALS line 2: not after its job's line: 'peer 2 1.2.3.4 tx_packets=1 tx_bytes=1 r...'",
		"TOTALS line 2: TOTALS net: rx_packets=x is not a number in 'net 1 tcp tx_packets=1 tx_bytes=1 rx_pac...'",
		"TOTALS line 2: TOTALS peer: no evictions= on other's in 'peer 1 other tx_packets=1 tx_bytes=1 rx_...'",
		"TOTALS line 1: TOTALS job: no sock_bytes= in 'job 1 /a events=1 exported=1'",
		"TOTALS line 1: bad %XX escape in 'job 1 /a%zz events=1 sock_bytes=0 export...'",
		"TOTALS line 1: TOTALS job: no exported=0 or 1 in 'job 1 /a events=1 sock_bytes=0 exported=...'",
		"TOTALS: 2 lines announced, fewer follow",
		"TOTALS: no node=",
		"TOTALS: no daemon_dropped=",
		"expected 'OK <n> totals', not 'OK 0 probes'",
	};
	static const char old[] =
		"OK 2 totals node=n1 ts=1 uptime=1 module=up cpus=1 records=9 bytes=9 kernel_lost=0 daemon_dropped=0 probes=0 jobs=1\n"
		"job 7 /a%20b events=9 sock_bytes=4 exported=0 intr=0 lost_fair=0\n"
		"future 1 2\n";
	struct mgc_totals t;
	size_t i;

	ck_assert_int_eq(mgc_parse_totals(JOBS_TOTALS_1, strlen(JOBS_TOTALS_1), &t, why,
					  sizeof(why)), 0);
	ck_assert_str_eq(t.node, "node1");
	ck_assert_uint_eq(t.net_packets, 127);
	ck_assert_uint_eq(t.njobs, 4);
	ck_assert_uint_eq(t.job[0].cgroup, 4001);
	ck_assert(t.job[0].slurm.is && t.job[0].slurm.job == 42);
	ck_assert_str_eq(t.job[0].slurm.step, "0");
	ck_assert_uint_eq(t.job[0].nnet, 1);
	ck_assert_str_eq(t.job[0].net[0].proto, "tcp");
	ck_assert_uint_eq(t.job[0].net[0].c.tx_bytes, 100000);
	ck_assert_uint_eq(t.job[0].npeers, 2);
	ck_assert_str_eq(t.job[0].peer[0].peer, "10.0.0.2");
	ck_assert_uint_eq(t.job[0].peer[0].c.rx_bytes, 1007);
	ck_assert(t.job[0].peer[1].other);
	ck_assert_uint_eq(t.job[1].nnet, 2);
	ck_assert_str_eq(t.job[1].net[1].proto, "udp");
	ck_assert_uint_eq(t.job[1].npeers, 4);
	ck_assert_str_eq(t.job[1].peer[2].peer, "127.0.0.1");
	ck_assert_uint_eq(t.job[2].nnet, 1);
	ck_assert_uint_eq(t.job[2].npeers, 1);
	ck_assert_str_eq(t.job[2].slurm.step, "batch");
	ck_assert_uint_eq(t.job[3].cgroup, 0);
	ck_assert_str_eq(t.job[3].path, "other");
	ck_assert_uint_eq(t.job[3].nnet + t.job[3].npeers, 0);
	mgc_totals_free(&t);

	/* A magnetd before the traffic lines: jobs, no net, counters 0. */
	ck_assert_int_eq(mgc_parse_totals(old, strlen(old), &t, why, sizeof(why)), 0);
	ck_assert_uint_eq(t.njobs, 1);
	ck_assert_str_eq(t.job[0].path, "/a b");
	ck_assert(!t.job[0].exported && !t.job[0].slurm.is);
	ck_assert_uint_eq(t.net_packets + t.job[0].nnet, 0);
	mgc_totals_free(&t);

	ck_assert_uint_eq(sizeof(bad) / sizeof(bad[0]), sizeof(bad_why) / sizeof(bad_why[0]));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		ck_assert_msg(mgc_parse_totals(bad[i], strlen(bad[i]), &t, why, sizeof(why)) == -EPROTO,
			      "'%s' accepted", bad[i]);
		ck_assert_str_eq(why, bad_why[i]);
		ck_assert_ptr_null(t.job);
	}
}
END_TEST

static const struct mgj_group *group_named(const struct mgj_group *g, size_t n,
					   const char *key)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(g[i].key, key))
			return &g[i];
	return NULL;
}

static const struct mgj_peer *peer_named(const struct mgj_row *r, const char *addr)
{
	size_t i;

	for (i = 0; i < r->npeers; i++)
		if (!strcmp(r->peers[i].addr, addr))
			return &r->peers[i];
	return NULL;
}

/*
 * The matcher on the two nodes' replies: each job's steps on a node are
 * one row; a peer host is the node whose flows end there (loopback: the
 * node itself); a flow's peer job is the one the other end's node
 * reports with the ends swapped, so two jobs sharing the nodes are never
 * each other's peers; a host no node reports, and a node without flows
 * (an older magnetd without local ends), give none.
 */
START_TEST(jobs_match)
{
	struct mgc_totals t1, t2;
	struct mgc_net n1, n2, n2_old;
	struct mgj_node nodes[2] = { { .name = "node1", .totals = &t1, .flows = &n1 },
				     { .name = "node2", .totals = &t2, .flows = &n2 } };
	const struct mgc_net_peer *o;
	const struct mgj_group *g;
	const struct mgj_peer *p;
	struct mgj_group *gs;
	size_t ng;
	char a[MGJ_ADDR_MAX], old_net[sizeof(JOBS_NET_2)], *q;

	ck_assert_int_eq(mgc_parse_totals(JOBS_TOTALS_1, strlen(JOBS_TOTALS_1), &t1, why, sizeof(why)), 0);
	ck_assert_int_eq(mgc_parse_totals(JOBS_TOTALS_2, strlen(JOBS_TOTALS_2), &t2, why, sizeof(why)), 0);
	ck_assert_int_eq(mgc_parse_net(JOBS_NET_1, strlen(JOBS_NET_1), &n1, why, sizeof(why)), 0);
	ck_assert_int_eq(mgc_parse_net(JOBS_NET_2, strlen(JOBS_NET_2), &n2, why, sizeof(why)), 0);

	ck_assert_str_eq(mgj_addr_of("10.0.0.2:5001", a, sizeof(a)), "10.0.0.2");
	ck_assert_str_eq(mgj_addr_of("[fe80::1]:80", a, sizeof(a)), "fe80::1");
	ck_assert_str_eq(mgj_addr_of("10.0.0.2", a, sizeof(a)), "10.0.0.2");
	ck_assert_int_eq(mgj_addr_node(nodes, 2, 0, "10.0.0.2"), 1);
	ck_assert_int_eq(mgj_addr_node(nodes, 2, 1, "10.0.0.1"), 0);
	ck_assert_int_eq(mgj_addr_node(nodes, 2, 1, "127.0.0.1"), 1);
	ck_assert_int_eq(mgj_addr_node(nodes, 2, 0, "192.168.9.9"), -1);
	ck_assert_int_eq(mgj_match(nodes, 2, 0, &n1.peer[0], &o), 1);
	ck_assert_uint_eq(o->job, 5001);
	ck_assert_int_eq(mgj_match(nodes, 2, 0, &n1.peer[2], &o), 0);	/* loopback */
	ck_assert_uint_eq(o->job, 4003);
	ck_assert_int_eq(mgj_match(nodes, 2, 0, &n1.peer[4], &o), -1);

	ck_assert_int_eq(mgj_build(nodes, 2, &gs, &ng), 0);
	ck_assert_uint_eq(ng, 2);
	ck_assert_str_eq(gs[0].key, "slurm=42");	/* most bytes first */
	g = group_named(gs, ng, "slurm=42");
	ck_assert(g->slurm && g->slurm_job == 42);
	ck_assert_uint_eq(g->nrows, 2);
	ck_assert_uint_eq(g->rows[0].node, 0);
	/* step 0 and batch on node1: one row */
	ck_assert_uint_eq(g->rows[0].c.tx_bytes, 100030);
	ck_assert_uint_eq(g->rows[0].nprotos, 1);
	ck_assert_uint_eq(g->c.rx_bytes, 1007 + 30 + 100000);
	p = peer_named(&g->rows[0], "10.0.0.2");
	ck_assert(p && p->node == 1 && p->njobs == 1);
	ck_assert_uint_eq(p->jobs[0].node, 1);
	ck_assert_str_eq(p->jobs[0].job, "slurm=42");
	p = peer_named(&g->rows[0], "127.0.0.1");
	ck_assert(p && p->node == 0 && p->njobs == 1);
	ck_assert_str_eq(p->jobs[0].job, "slurm=43");
	ck_assert_str_eq(g->rows[0].peers[g->rows[0].npeers - 1].addr, "other");
	p = peer_named(&g->rows[1], "10.0.0.1");
	ck_assert(p && p->node == 0 && p->njobs == 1);
	ck_assert_str_eq(p->jobs[0].job, "slurm=42");
	ck_assert_uint_eq(p->jobs[0].node, 0);

	g = group_named(gs, ng, "slurm=43");
	ck_assert_uint_eq(g->nrows, 2);
	ck_assert_uint_eq(g->rows[0].nprotos, 2);
	p = peer_named(&g->rows[0], "10.0.0.2");
	ck_assert(p && p->njobs == 1);
	ck_assert_str_eq(p->jobs[0].job, "slurm=43");	/* not 42: shared nodes */
	p = peer_named(&g->rows[0], "192.168.9.9");
	ck_assert(p && p->node == -1 && p->njobs == 0);
	p = peer_named(&g->rows[1], "10.0.0.1");
	ck_assert(p && p->njobs == 1);
	ck_assert_str_eq(p->jobs[0].job, "slurm=43");
	mgj_free(gs, ng);

	/* node2 an older magnetd: no local ends, so no match either way. */
	strcpy(old_net, JOBS_NET_2);
	while ((q = strstr(old_net, " 10.0.0.2:")))
		memset(q, ' ', strcspn(q + 1, "\n") + 1);
	ck_assert_int_eq(mgc_parse_net(old_net, strlen(old_net), &n2_old, why, sizeof(why)), 0);
	nodes[1].flows = &n2_old;
	ck_assert_int_eq(mgj_build(nodes, 2, &gs, &ng), 0);
	g = group_named(gs, ng, "slurm=42");
	ck_assert_uint_eq(peer_named(&g->rows[0], "10.0.0.2")->njobs, 0);
	ck_assert_int_eq(peer_named(&g->rows[0], "10.0.0.2")->node, -1);
	ck_assert_uint_eq(peer_named(&g->rows[1], "10.0.0.1")->njobs, 0);
	mgj_free(gs, ng);
	/* Without flows at all, the counts are TOTALS' all the same. */
	nodes[0].flows = nodes[1].flows = NULL;
	ck_assert_int_eq(mgj_build(nodes, 2, &gs, &ng), 0);
	ck_assert_uint_eq(group_named(gs, ng, "slurm=42")->c.tx_bytes, 100000 + 30 + 1007);
	mgj_free(gs, ng);

	mgc_totals_free(&t1);
	mgc_totals_free(&t2);
	mgc_net_free(&n1);
	mgc_net_free(&n2);
	mgc_net_free(&n2_old);
}
END_TEST

START_TEST(json_lost)
{
	static const char lost[] = "{\"ts\":5,\"cpu\":1,\"pid\":0,\"tgid\":0,\"id\":1,"
		"\"event\":\"lost\",\"full\":3,\"too_big\":1,\"nesting\":0,\"overwritten\":2}";
	static const char rec[] = "{\"ts\":5,\"cpu\":1,\"pid\":9,\"tgid\":9,\"id\":16,"
		"\"event\":\"vfs_read\",\"type\":\"kprobe\",\"abstract\":\"0x1\",\"args\":[]}";
	/* a probe whose name imitates the tag: escaped, so not a match */
	static const char fake[] = "{\"ts\":5,\"cpu\":1,\"pid\":9,\"tgid\":9,\"id\":16,"
		"\"event\":\"x\\\",\\\"id\\\":1,\\\"event\\\":\\\"lost\\\",\",\"full\":9}";
	__u64 n = 0;

	ck_assert(mgc_json_lost(lost, strlen(lost), &n));
	ck_assert_uint_eq(n, 6);
	ck_assert(!mgc_json_lost(rec, strlen(rec), &n));
	ck_assert(!mgc_json_lost(fake, strlen(fake), &n));
}
END_TEST

/* ---- canned servers ---- */

/* A listening socket on 127.0.0.1, an ephemeral port; "127.0.0.1:PORT". */
static int listen_loopback(char *addr, size_t len)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	ck_assert_int_ge(fd, 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ck_assert_int_eq(listen(fd, 16), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sin, &sl), 0);
	snprintf(addr, len, "127.0.0.1:%u", ntohs(sin.sin_port));
	return fd;
}

static void send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n <= 0)
			return;		/* the client left: fine for a server */
		p += n;
		len -= n;
	}
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, ms % 1000 * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* One connection: send bytes (one by one if trickle), then close. */
struct canned {
	int lfd;
	const char *bytes;
	size_t len;
	bool trickle;
	pthread_t thr;
};

static void *canned_main(void *arg)
{
	struct canned *c = arg;
	int fd = accept(c->lfd, NULL, NULL);
	size_t i;

	if (fd < 0)
		return NULL;
	if (c->trickle) {
		for (i = 0; i < c->len; i++)
			send_all(fd, c->bytes + i, 1);
	} else {
		send_all(fd, c->bytes, c->len);
	}
	shutdown(fd, SHUT_WR);
	/* Wait for the client's close, so nothing it sent resets the line. */
	{
		char sink[256];

		while (recv(fd, sink, sizeof(sink), 0) > 0)
			;
	}
	close(fd);
	return NULL;
}

static void canned_start(struct canned *c, char *addr, size_t alen,
			 const char *bytes, size_t len, bool trickle)
{
	c->lfd = listen_loopback(addr, alen);
	c->bytes = bytes;
	c->len = len;
	c->trickle = trickle;
	ck_assert_int_eq(pthread_create(&c->thr, NULL, canned_main, c), 0);
}

static void canned_stop(struct canned *c)
{
	pthread_join(c->thr, NULL);
	close(c->lfd);
}

START_TEST(conn_refused)
{
	char addr[64];
	struct mgc_conn c;
	int fd = listen_loopback(addr, sizeof(addr));

	close(fd);		/* nothing listens there now */
	ck_assert_int_eq(mgc_connect(&c, addr, 2000), -ECONNREFUSED);
	ck_assert_msg(strstr(c.err, "cannot connect to ") && strstr(c.err, addr) &&
		      strstr(c.err, ": Connection refused (is magnetd running?)"),
		      "%s", c.err);
	mgc_close(&c);
	ck_assert_int_eq(mgc_connect(&c, "[::1", 2000), -EINVAL);
	ck_assert_ptr_nonnull(strstr(c.err, "bad address '[::1'"));
	mgc_close(&c);
}
END_TEST

START_TEST(conn_trickle)
{
	static const char script[] =
		"OK magnet 2 node=n cpus=1 clock=mono order=le " FORMAT_NOW " module=up\n"
		"B 5\nabcdeD 7\nOK 1 probes\n16 kprobe f nargs=0 hits=0 missed=0\n"
		"A tgid 0 ts=1 interval=1 events=0 bytes=0 keys=0 lost=0 evicted=0 "
		"evicted_events=0 unkeyed=0 dropped=0\n";
	static const enum mgc_msg_kind kinds[] = {
		MGC_MSG_OK, MGC_MSG_FRAME, MGC_MSG_DROP, MGC_MSG_OK, MGC_MSG_AGG,
	};
	struct canned cs;
	struct mgc_conn c;
	struct mgc_msg m;
	char addr[64];
	size_t i;

	canned_start(&cs, addr, sizeof(addr), script, strlen(script), true);
	ck_assert_int_eq(mgc_connect(&c, addr, 2000), 0);
	ck_assert_str_eq(c.server, addr);
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		ck_assert_int_eq(mgc_recv(&c, &m, 5000), 1);
		ck_assert_int_eq(m.kind, kinds[i]);
		if (m.kind == MGC_MSG_FRAME) {
			ck_assert_uint_eq(m.body_len, 5);
			ck_assert(!memcmp(m.body, "abcde", 5));
			ck_assert_uint_eq((uintptr_t)m.body % 8, 0);
		}
		if (m.kind == MGC_MSG_DROP)
			ck_assert_uint_eq(m.n, 7);
	}
	/* Closed between messages: 0, and says so. */
	ck_assert_int_eq(mgc_recv(&c, &m, 5000), 0);
	ck_assert_ptr_nonnull(strstr(c.err, "closed the connection"));
	mgc_close(&c);
	canned_stop(&cs);
}
END_TEST

static void put_bytes(int fd, const char *p, size_t len)
{
	ck_assert_int_eq(write(fd, p, len), (ssize_t)len);
}

static void next_frame(struct mgc_conn *c, const char *body, size_t len, bool in_place)
{
	struct mgc_msg m;

	ck_assert_int_gt(mgc_fill(c), 0);
	ck_assert_int_eq(mgc_next(c, &m), 1);
	ck_assert_int_eq(m.kind, MGC_MSG_FRAME);
	ck_assert_uint_eq(m.body_len, len);
	ck_assert_uint_eq((uintptr_t)m.body % 8, 0);
	ck_assert(!memcmp(m.body, body, len));
	ck_assert_int_eq(m.body >= c->buf && m.body < c->buf + c->cap, in_place);
}

/*
 * Frame bodies come 8-byte aligned wherever they fall in the stream. One
 * whose header came before the rest of it is read in place: the buffer is
 * compacted so that its body lands aligned (no copy of the records); one
 * that came whole at an odd offset is copied.
 */
START_TEST(conn_frame_alignment)
{
	static char body[200000];
	struct mgc_conn c = { .fd = -1 };
	struct mgc_msg m;
	int sv[2];
	size_t i;

	for (i = 0; i < sizeof(body); i++)
		body[i] = (char)(i * 7 + i / 251);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	c.fd = sv[0];
	snprintf(c.server, sizeof(c.server), "test");
	/* A reply, then a frame's header and 3 of its bytes: nothing whole. */
	put_bytes(sv[1], "OK x\nB 16\nabc", 13);
	ck_assert_int_eq(mgc_fill(&c), 13);
	ck_assert_int_eq(mgc_next(&c, &m), 1);
	ck_assert_int_eq(m.kind, MGC_MSG_OK);
	ck_assert_int_eq(mgc_next(&c, &m), 0);
	put_bytes(sv[1], "defghijklmnop", 13);
	next_frame(&c, "abcdefghijklmnop", 16, true);
	/* Two whole frames at once, at odd offsets: copied. */
	put_bytes(sv[1], "B 16\nabcdefghijklmnopB 8000\n", 28);
	put_bytes(sv[1], body, 8000);
	next_frame(&c, "abcdefghijklmnop", 16, false);
	ck_assert_int_eq(mgc_next(&c, &m), 1);
	ck_assert_uint_eq((uintptr_t)m.body % 8, 0);
	ck_assert(!memcmp(m.body, body, 8000));
	ck_assert(!(m.body >= c.buf && m.body < c.buf + c.cap));
	/* A large frame in pieces, its header alone first. */
	put_bytes(sv[1], "B 200000\n", 9);
	ck_assert_int_eq(mgc_fill(&c), 9);
	ck_assert_int_eq(mgc_next(&c, &m), 0);
	for (i = 0; i + 50000 < sizeof(body); i += 50000) {
		put_bytes(sv[1], body + i, 50000);
		ck_assert_int_gt(mgc_fill(&c), 0);
		ck_assert_int_eq(mgc_next(&c, &m), 0);
	}
	put_bytes(sv[1], body + i, sizeof(body) - i);
	next_frame(&c, body, sizeof(body), true);
	close(sv[1]);
	mgc_close(&c);
}
END_TEST

START_TEST(conn_cut_and_overlong)
{
	static char big[MGC_LINE_MAX + 100];
	struct canned cs;
	struct mgc_conn c;
	struct mgc_msg m;
	char addr[64];

	/* Closed inside a frame. */
	canned_start(&cs, addr, sizeof(addr), "D 1\nB 96\n0123456789", 19, false);
	ck_assert_int_eq(mgc_connect(&c, addr, 2000), 0);
	ck_assert_int_eq(mgc_recv(&c, &m, 5000), 1);
	ck_assert_int_eq(mgc_recv(&c, &m, 5000), -EPROTO);
	ck_assert_ptr_nonnull(strstr(c.err, "closed the connection in the middle of a message"));
	mgc_close(&c);
	canned_stop(&cs);

	/* A line past the limit, before it even ends. */
	memset(big, 'y', sizeof(big));
	canned_start(&cs, addr, sizeof(addr), big, sizeof(big), false);
	ck_assert_int_eq(mgc_connect(&c, addr, 2000), 0);
	ck_assert_int_eq(mgc_recv(&c, &m, 5000), -EMSGSIZE);
	ck_assert_msg(strstr(c.err, "protocol error from ") &&
		      strstr(c.err, "line longer than 65536 bytes"), "%s", c.err);
	mgc_close(&c);
	canned_stop(&cs);
}
END_TEST

START_TEST(conn_timeout_and_refusal)
{
	struct canned cs;
	struct mgc_conn c;
	struct mgc_msg m;
	char addr[64];
	int lfd;

	/* A server that accepts (the backlog does) and never answers. */
	lfd = listen_loopback(addr, sizeof(addr));
	ck_assert_int_eq(mgc_connect(&c, addr, 2000), 0);
	ck_assert_int_eq(mgc_command(&c, "HELLO", &m, 100), -ETIMEDOUT);
	ck_assert_ptr_nonnull(strstr(c.err, "no reply from"));
	ck_assert_int_eq(mgc_command(&c, "HELLO\nQUIT", &m, 100), -EINVAL);
	mgc_close(&c);
	close(lfd);

	/* Refused with a reason, then closed: the reason is the reply. */
	canned_start(&cs, addr, sizeof(addr), "ERR too many clients\n", 21, false);
	ck_assert_int_eq(mgc_connect(&c, addr, 2000), 0);
	ck_assert_int_eq(mgc_command(&c, "HELLO", &m, 5000), 1);
	ck_assert_int_eq(m.kind, MGC_MSG_ERR);
	ck_assert_uint_eq(m.line_len, 20);
	mgc_close(&c);
	canned_stop(&cs);

	/* Data where a reply should be. */
	canned_start(&cs, addr, sizeof(addr), "D 1\nOK\n", 7, false);
	ck_assert_int_eq(mgc_connect(&c, addr, 2000), 0);
	ck_assert_int_eq(mgc_command(&c, "HELLO", &m, 5000), -EPROTO);
	ck_assert_ptr_nonnull(strstr(c.err, "'D 1' before the reply to HELLO"));
	mgc_close(&c);
	canned_stop(&cs);
}
END_TEST

/* ---- the fake magnetd ---- */

#define FAKE_CONNS	16
#define FAKE_REPORTS	4

struct fake {
	int lfd;
	char addr[64];
	pthread_t acceptor;
	volatile int stop;
	pthread_mutex_t lock;
	char log[16384];		/* every command line received */
	pthread_t conns[FAKE_CONNS];
	int fds[FAKE_CONNS];
	int nconns;
	int stats_calls, probes_calls;
	/* the script */
	bool refuse;			/* "ERR too many clients" and close */
	const char *hello;
	const char *probes;
	const char *probes_refresh;	/* the reply to a later PROBES, if set */
	const char *subscribe;		/* the reply to SUBSCRIBE, if set */
	const void *data;		/* sent after "OK subscribed" */
	size_t data_len;
	bool close_after_data;
	const char *agg_reply[4];	/* tgid, cgroup, probe, net: if set */
	const char *reports[4][FAKE_REPORTS];
	int pace_ms;			/* before each report */
	bool close_after_reports;
	const char *auth;		/* the reply to AUTH, if set */
	const char *totals;		/* the reply to TOTALS, if set */
};

static const char *const agg_keys[4] = { "tgid", "cgroup", "probe", "net" };

static void fake_log(struct fake *f, const char *line)
{
	pthread_mutex_lock(&f->lock);
	if (strlen(f->log) + strlen(line) + 2 < sizeof(f->log)) {
		strcat(f->log, line);
		strcat(f->log, "\n");
	}
	pthread_mutex_unlock(&f->lock);
}

static void say(int fd, const char *s)
{
	send_all(fd, s, strlen(s));
}

/* A STATS reply whose counters grow by call: deltas show. */
static void say_stats(struct fake *f, int fd)
{
	char buf[1024];
	int n;

	pthread_mutex_lock(&f->lock);
	n = ++f->stats_calls;
	pthread_mutex_unlock(&f->lock);
	snprintf(buf, sizeof(buf),
		 "OK 1 cpus uptime=%d module=up reloads=0 clients=4 subscribers=0 "
		 "aggregators=3 read=%d read_bytes=0 read_lost=%d queue_dropped=%d "
		 "sent=0 client_dropped=0 cut_off=0 refused=0 trace_files=0 "
		 "trace_bytes=0 trace_dropped=0 trace_errors=0\n"
		 "cpu=0 written=1 bytes=64 lost_full=0 lost_too_big=0 "
		 "lost_nesting=0 overwritten=0 read=1 read_lost=0\n",
		 3600 + 62 * n, 1000 * n, 10 + 3 * (n - 1), n - 1);
	say(fd, buf);
}

static int stats_calls(struct fake *f)
{
	int n;

	pthread_mutex_lock(&f->lock);
	n = f->stats_calls;
	pthread_mutex_unlock(&f->lock);
	return n;
}

/* Returns false when the connection is to close. */
static bool fake_command(struct fake *f, int fd, const char *line)
{
	char buf[256];
	int k;

	fake_log(f, line);
	if (!strcmp(line, "HELLO")) {
		say(fd, f->hello);
	} else if (!strcmp(line, "PROBES")) {
		bool later;

		pthread_mutex_lock(&f->lock);
		later = f->probes_calls++ > 0;
		pthread_mutex_unlock(&f->lock);
		say(fd, later && f->probes_refresh ? f->probes_refresh : f->probes);
	} else if (!strcmp(line, "STATS")) {
		say_stats(f, fd);
	} else if (!strncmp(line, "SUBSCRIBE", 9)) {
		if (f->subscribe) {
			say(fd, f->subscribe);
			return true;
		}
		snprintf(buf, sizeof(buf), "OK subscribed format=%s\n",
			 strstr(line, " FORMAT json") ? "json" : "binary");
		say(fd, buf);
		send_all(fd, f->data, f->data_len);
		return !f->close_after_data;
	} else if (!strncmp(line, "AGG ", 4)) {
		for (k = 0; k < 4; k++)
			if (!strncmp(line + 4, agg_keys[k], strlen(agg_keys[k])) &&
			    line[4 + strlen(agg_keys[k])] == ' ')
				break;
		if (k == 4) {
			say(fd, "ERR unknown AGG key\n");
			return true;
		}
		if (f->agg_reply[k]) {
			say(fd, f->agg_reply[k]);
			return true;
		}
		snprintf(buf, sizeof(buf), "OK agg key=%s every=50000000\n", agg_keys[k]);
		say(fd, buf);
		for (int i = 0; i < FAKE_REPORTS && f->reports[k][i]; i++) {
			/*
			 * Report i + 1 once screen i is drawn: magnet-top asks
			 * STATS right before each, so screens and reports
			 * pair up however slow the machine is.
			 */
			while (i && !f->stop && stats_calls(f) < i)
				sleep_ms(2);
			if (f->stop)
				break;
			sleep_ms(f->pace_ms);
			say(fd, f->reports[k][i]);
		}
		return !f->close_after_reports;
	} else if (!strncmp(line, "AUTH ", 5)) {
		say(fd, f->auth ? f->auth : "OK AUTH uid=0 access=all\n");
	} else if (!strcmp(line, "TOTALS") && f->totals) {
		say(fd, f->totals);
	} else if (!strcmp(line, "UNSUBSCRIBE")) {
		say(fd, "OK\n");
	} else if (!strcmp(line, "QUIT")) {
		say(fd, "OK bye\n");
		return false;
	} else {
		say(fd, "ERR unknown command\n");
	}
	return true;
}

struct fake_conn {
	struct fake *f;
	int fd;
};

static void *fake_conn_main(void *arg)
{
	struct fake_conn *fc = arg;
	struct fake *f = fc->f;
	char buf[8192];
	size_t len = 0;
	int fd = fc->fd;

	free(fc);
	if (f->refuse) {
		say(fd, "ERR too many clients\n");
		shutdown(fd, SHUT_RDWR);
		return NULL;
	}
	for (;;) {
		ssize_t n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);
		char *nl;

		if (n <= 0)
			break;
		len += n;
		while ((nl = memchr(buf, '\n', len))) {
			*nl = '\0';
			if (!fake_command(f, fd, buf)) {
				shutdown(fd, SHUT_RDWR);
				return NULL;
			}
			len -= nl + 1 - buf;
			memmove(buf, nl + 1, len);
		}
	}
	shutdown(fd, SHUT_RDWR);
	return NULL;
}

static void *fake_accept_main(void *arg)
{
	struct fake *f = arg;

	while (!f->stop) {
		struct pollfd pfd = { .fd = f->lfd, .events = POLLIN };
		struct fake_conn *fc;
		int fd;

		if (poll(&pfd, 1, 50) <= 0)
			continue;
		fd = accept(f->lfd, NULL, NULL);
		if (fd < 0)
			continue;
		if (f->nconns == FAKE_CONNS) {
			close(fd);
			continue;
		}
		fc = malloc(sizeof(*fc));
		fc->f = f;
		fc->fd = fd;
		f->fds[f->nconns] = fd;
		pthread_create(&f->conns[f->nconns++], NULL, fake_conn_main, fc);
	}
	return NULL;
}

static const char default_probes[] =
	"OK 2 probes\n"
	"16 kprobe vfs_read nargs=3 hits=1234 missed=0\n"
	"17 kretprobe tcp_sendmsg nargs=1 hits=99 missed=0\n";

static void fake_init(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->lock, NULL);
	f->hello = HELLO_OK "\n";
	f->probes = default_probes;
}

static void fake_start(struct fake *f)
{
	f->lfd = listen_loopback(f->addr, sizeof(f->addr));
	ck_assert_int_eq(pthread_create(&f->acceptor, NULL, fake_accept_main, f), 0);
}

static void fake_stop(struct fake *f)
{
	int i;

	f->stop = 1;
	pthread_join(f->acceptor, NULL);
	for (i = 0; i < f->nconns; i++) {
		shutdown(f->fds[i], SHUT_RDWR);
		pthread_join(f->conns[i], NULL);
		close(f->fds[i]);
	}
	close(f->lfd);
}

/* ---- running the tools ---- */

struct run {
	int status;		/* exit status, or 128 + signal */
	char *out, *err;
	size_t out_len, err_len;
};

static void tool_path(char *buf, size_t len, const char *name)
{
	const char *b = getenv("MAGNET_BUILD");
	char self[PATH_MAX];
	ssize_t n;

	if (b) {
		snprintf(buf, len, "%s/tools/%s", b, name);
		return;
	}
	/* build/tests/unit/test_client -> build/tools/NAME */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	ck_assert_int_gt(n, 0);
	self[n] = '\0';
	snprintf(buf, len, "%s/../../tools/%s", dirname(self), name);
}

static char *slurp(const char *path, size_t *len)
{
	char *s = tu_read_file(path, len);

	s[*len] = '\0';
	unlink(path);
	return s;
}

static void reap(struct run *r, pid_t pid, int timeout_ms)
{
	int st, waited = 0;

	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (waited >= timeout_ms) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			ck_abort_msg("tool did not exit within %d ms", timeout_ms);
		}
		sleep_ms(5);
		waited += 5;
	}
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/*
 * Run build/tools/NAME with args (NULL-terminated), stdin /dev/null,
 * stdout and stderr captured; sig (if not 0) is sent after sig_ms.
 */
static void run_sig(struct run *r, const char *name, const char *const *args,
		    int sig, int sig_ms)
{
	char path[PATH_MAX], outp[64], errp[64];
	const char *argv[32];
	int ofd = tu_tmpfile(outp), efd = tu_tmpfile(errp), i;
	pid_t pid;

	tool_path(path, sizeof(path), name);
	argv[0] = path;
	for (i = 0; args[i]; i++)
		argv[i + 1] = args[i];
	argv[i + 1] = NULL;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		int nfd = open("/dev/null", O_RDONLY);

		setenv("TZ", "UTC", 1);
		dup2(nfd, 0);
		dup2(ofd, 1);
		dup2(efd, 2);
		execv(path, (char *const *)argv);
		_exit(127);
	}
	close(ofd);
	close(efd);
	if (sig) {
		sleep_ms(sig_ms);
		kill(pid, sig);
	}
	reap(r, pid, 10000);
	r->out = slurp(outp, &r->out_len);
	r->err = slurp(errp, &r->err_len);
}

static void run(struct run *r, const char *name, const char *const *args)
{
	run_sig(r, name, args, 0, 0);
}

/* Run build/tools/NAME on a fake magnetd, started and then stopped for it. */
static void run_fake(struct run *r, struct fake *f, const char *name,
		     const char **args, int addr_at)
{
	fake_start(f);
	args[addr_at] = f->addr;
	run(r, name, args);
	fake_stop(f);
}

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

#define assert_status(r, want)						\
	ck_assert_msg((r)->status == (want), "exit %d, want %d; stderr: %s", \
		      (r)->status, (want), (r)->err)
#define assert_has(s, sub)						\
	ck_assert_msg(strstr((s), (sub)), "'%s' not in:\n%s", (sub), (s))
#define assert_before(s, a, b)						\
	ck_assert_msg(strstr((s), (a)) && strstr((s), (b)) &&		\
		      strstr((s), (a)) < strstr((s), (b)),		\
		      "'%s' not before '%s' in:\n%s", (a), (b), (s))

/* ---- magnet-cat ---- */

static __u64 recbuf[1024];

/* Records for the scripts: kprobe, kretprobe, LOST; size returned. */
static size_t enc_kprobe(void *buf, __u16 id, __u64 ts, __u32 pid)
{
	struct mg_record_hdr h = { .event_id = id, .cpu = 1, .abstract_id = 0x42,
				   .timestamp = ts, .pid = pid, .tgid = pid };
	__u64 args[2] = { 3, 0x7ffd1000 };
	ssize_t n = mg_record_encode_kprobe(buf, 4096, &h, args, 2);

	ck_assert_int_gt(n, 0);
	return n;
}

static size_t enc_kret(void *buf, __u16 id, __u64 ts)
{
	struct mg_record_hdr h = { .event_id = id, .cpu = 0, .timestamp = ts,
				   .pid = 7, .tgid = 7 };
	ssize_t n = mg_record_encode_kretprobe(buf, 4096, &h, -11, 900, NULL, 0);

	ck_assert_int_gt(n, 0);
	return n;
}

static size_t enc_lost(void *buf, __u64 ts, __u64 full, __u64 big)
{
	struct mg_record_hdr h = { .cpu = 1, .timestamp = ts };
	struct magnet_lost l = { .full = full, .too_big = big };
	ssize_t n = mg_record_encode_lost(buf, 4096, &h, &l);

	ck_assert_int_gt(n, 0);
	return n;
}

/* What mg_print_record makes of records, with a probe table. */
static char *expect_text(const void *recs, size_t len, const char *table)
{
	struct mg_probe_table t;
	struct mg_print_opts o;
	const struct magnet_record *r;
	size_t off = 0, slen;
	char *s;
	FILE *f = open_memstream(&s, &slen);

	ck_assert_int_eq(mgc_parse_probes(table, strlen(table), &t, why, sizeof(why)), 0);
	mg_print_opts_init(&o, NULL, &t);
	while (mg_record_next(recs, len, &off, &r) == 1)
		mg_print_record(f, &o, r);
	fclose(f);
	mg_probes_free(&t);
	return s;
}

/* "B <n>\n" and the bytes, appended to a script. */
static size_t add_frame(char *script, size_t at, const void *recs, size_t len)
{
	at += sprintf(script + at, "B %zu\n", len);
	memcpy(script + at, recs, len);
	return at + len;
}

static char script[16384];

START_TEST(cat_text)
{
	const char *args[] = { "-s", NULL, "probe", "==", "vfs_read", "||", "cpu", "==", "0", NULL };
	struct fake f;
	struct run r;
	size_t a, b, c, at;
	char *want;
	char *p = (char *)recbuf;

	/* frame 1: two records; D 5; frame 2: a LOST (3 + 4) and one more */
	a = enc_kprobe(p, 16, 1000000000020ULL, 102);
	a += enc_kret(p + a, 17, 1000000000030ULL);
	b = enc_lost(p + a, 1000000000040ULL, 3, 4);
	c = enc_kprobe(p + a + b, 16, 1000000000050ULL, 103);
	at = add_frame(script, 0, p, a);
	at += sprintf(script + at, "D 5\n");
	at = add_frame(script, at, p + a, b + c);

	fake_init(&f);
	f.data = script;
	f.data_len = at;
	f.close_after_data = true;
	run_fake(&r, &f, "magnet-cat", args, 1);

	assert_status(&r, 0);
	want = expect_text(p, a + b + c, default_probes);
	ck_assert_str_eq(r.out, want);
	free(want);
	/* and by hand, so a broken print path cannot agree with itself */
	assert_has(r.out, "1000.000000020 1 102/102 vfs_read(16) abstract=0x42 args=[0x3,0x7ffd1000] comm=? cgroup=0\n");
	assert_has(r.out, " tcp_sendmsg(17) ");
	assert_has(r.out, "1000.000000040 1 LOST full=3 too_big=4 ");
	assert_has(r.err, "magnet-cat: warning: magnetd dropped 5 records");
	assert_has(r.err, "magnet-cat: 3 records, 7 lost (kernel), 5 dropped (magnetd)\n");
	assert_has(f.log, "HELLO\nPROBES\nSUBSCRIBE probe == vfs_read || cpu == 0 FORMAT binary\n");
	run_free(&r);
}
END_TEST

START_TEST(cat_json)
{
	static const char lines[] =
		"{\"ts\":1,\"cpu\":0,\"pid\":9,\"tgid\":9,\"id\":16,\"event\":\"vfs_read\",\"type\":\"kprobe\",\"abstract\":\"0x1\",\"args\":[]}\n"
		"{\"ts\":2,\"cpu\":0,\"pid\":0,\"tgid\":0,\"id\":1,\"event\":\"lost\",\"full\":3,\"too_big\":1,\"nesting\":0,\"overwritten\":2}\n"
		"D 4\n"
		"{\"ts\":3,\"cpu\":1,\"pid\":9,\"tgid\":9,\"id\":16,\"event\":\"vfs_read\",\"type\":\"kprobe\",\"abstract\":\"0x1\",\"args\":[]}\n";
	const char *args[] = { "-j", "-s", NULL, NULL };
	struct fake f;
	struct run r;
	char *want, *d;

	fake_init(&f);
	f.data = lines;
	f.data_len = strlen(lines);
	f.close_after_data = true;
	run_fake(&r, &f, "magnet-cat", args, 2);

	assert_status(&r, 0);
	/* every JSON line as it came, the D line not among them */
	want = strdup(lines);
	d = strstr(want, "D 4\n");
	memmove(d, d + 4, strlen(d + 4) + 1);
	ck_assert_str_eq(r.out, want);
	free(want);
	assert_has(r.err, "2 records, 6 lost (kernel), 4 dropped (magnetd)");
	/* JSON needs no names: no PROBES asked */
	assert_has(f.log, "HELLO\nSUBSCRIBE FORMAT json\n");
	run_free(&r);
}
END_TEST

static size_t count_lines(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* -n stops mid-frame, -t on an idle stream, SIGINT: all exit 0. */
START_TEST(cat_stops)
{
	const char *args_n[] = { "-n", "2", "-s", NULL, NULL };
	const char *args_t[] = { "-t", "0.3", "-s", NULL, NULL };
	const char *args_i[] = { "-s", NULL, NULL };
	char *p = (char *)recbuf;
	struct fake f;
	struct run r;
	size_t a, at;
	long long t0;

	a = enc_kprobe(p, 16, 1000000000001ULL, 1);
	a += enc_kprobe(p + a, 16, 1000000000002ULL, 2);
	a += enc_kprobe(p + a, 16, 1000000000003ULL, 3);
	at = add_frame(script, 0, p, a);

	fake_init(&f);
	f.data = script;
	f.data_len = at;		/* and the connection stays open */
	fake_start(&f);

	args_n[3] = f.addr;
	run(&r, "magnet-cat", args_n);
	assert_status(&r, 0);
	assert_has(r.out, " 1/1 ");
	assert_has(r.out, " 2/2 ");
	ck_assert_ptr_null(strstr(r.out, " 3/3 "));
	assert_has(r.err, "magnet-cat: 2 records, 0 lost (kernel), 0 dropped (magnetd)");
	run_free(&r);

	args_t[3] = f.addr;
	t0 = time(NULL);
	run(&r, "magnet-cat", args_t);
	assert_status(&r, 0);
	ck_assert_int_le(time(NULL) - t0, 3);
	assert_has(r.err, "3 records, 0 lost");
	run_free(&r);

	args_i[1] = f.addr;
	run_sig(&r, "magnet-cat", args_i, SIGINT, 300);
	assert_status(&r, 0);
	assert_has(r.err, "3 records, 0 lost");
	ck_assert_uint_eq(count_lines(r.out), 3);
	run_free(&r);
	fake_stop(&f);
}
END_TEST

/* A record of a probe added after the start: PROBES is asked again. */
START_TEST(cat_new_probe_names)
{
	static const char later[] =
		"OK 3 probes\n"
		"16 kprobe vfs_read nargs=3 hits=1234 missed=0\n"
		"17 kretprobe tcp_sendmsg nargs=1 hits=99 missed=0\n"
		"18 kprobe vfs_write nargs=2 hits=1 missed=0\n";
	const char *args[] = { "-s", NULL, NULL };
	char *p = (char *)recbuf;
	struct fake f;
	struct run r;
	size_t a, b, at;

	a = enc_kprobe(p, 18, 1000000000001ULL, 5);
	b = enc_kprobe(p + a, 16, 1000000000002ULL, 6);
	at = add_frame(script, 0, p, a);
	at = add_frame(script, at, p + a, b);
	fake_init(&f);
	f.probes_refresh = later;
	f.data = script;
	f.data_len = at;
	fake_start(&f);
	args[1] = f.addr;
	run_sig(&r, "magnet-cat", args, SIGTERM, 400);
	fake_stop(&f);

	assert_status(&r, 0);
	assert_has(r.out, "1000.000000001 1 5/5 vfs_write(18) ");
	assert_has(r.out, "1000.000000002 1 6/6 vfs_read(16) ");
	ck_assert_ptr_null(strstr(r.out, "unknown"));
	/* in order: the held frame first */
	assert_before(r.out, "vfs_write", "vfs_read");
	assert_has(f.log, "FORMAT binary\nPROBES\n");
	run_free(&r);
}
END_TEST

START_TEST(cat_errors)
{
	const char *args[] = { "-s", NULL, "cpu", "2", NULL };
	const char *argsj[] = { "-j", "-s", NULL, NULL };
	char *p = (char *)recbuf;
	struct fake f;
	struct run r;

	/* ERR to SUBSCRIBE: verbatim, status 2 */
	fake_init(&f);
	f.subscribe = "ERR bad filter: expected a comparison operator at column 4\n";
	run_fake(&r, &f, "magnet-cat", args, 1);
	assert_status(&r, 2);
	assert_has(r.err, "ERR bad filter: expected a comparison operator at column 4\n");
	assert_has(f.log, "SUBSCRIBE cpu 2 FORMAT binary\n");
	run_free(&r);

	/* the daemon's refusal */
	fake_init(&f);
	f.refuse = true;
	run_fake(&r, &f, "magnet-cat", args, 1);
	assert_status(&r, 2);
	assert_has(r.err, "magnet-cat: ERR too many clients\n");
	run_free(&r);

	/* another protocol version */
	fake_init(&f);
	f.hello = "OK magnet 1 node=n\n";
	run_fake(&r, &f, "magnet-cat", args, 1);
	assert_status(&r, 2);
	assert_has(r.err, "speaks protocol version 1; this magnet-cat speaks 2");
	run_free(&r);

	/* big-endian records, which text and -b cannot decode; -j can */
	fake_init(&f);
	f.hello = "OK magnet 2 node=n cpus=1 clock=mono order=be " FORMAT_NOW " module=down\n";
	f.close_after_data = true;
	fake_start(&f);
	args[1] = f.addr;
	run(&r, "magnet-cat", args);
	assert_status(&r, 2);
	assert_has(r.err, "big-endian records; this host is little-endian");
	run_free(&r);
	argsj[2] = f.addr;
	run(&r, "magnet-cat", argsj);
	assert_status(&r, 0);
	assert_has(r.err, "note: magnet is not loaded on n;");
	run_free(&r);
	fake_stop(&f);

	/* a frame with a broken record */
	memset(p, 0, 64);
	((struct magnet_record *)p)->size = 12;
	fake_init(&f);
	f.data = script;
	f.data_len = add_frame(script, 0, p, 48);
	run_fake(&r, &f, "magnet-cat", args, 1);
	assert_status(&r, 2);
	assert_has(r.err, "bad record at byte 0 of a 48-byte frame");
	run_free(&r);

	/* closed inside a frame */
	fake_init(&f);
	f.data = "B 96\n0123456789";
	f.data_len = 15;
	f.close_after_data = true;
	run_fake(&r, &f, "magnet-cat", args, 1);
	assert_status(&r, 2);
	assert_has(r.err, "closed the connection in the middle of a message");
	run_free(&r);

	/* nothing listening */
	fake_init(&f);
	fake_start(&f);
	fake_stop(&f);
	args[1] = f.addr;
	run(&r, "magnet-cat", args);
	assert_status(&r, 2);
	assert_has(r.err, "magnet-cat: cannot connect to 127.0.0.1:");
	assert_has(r.err, ": Connection refused (is magnetd running?)\n");
	run_free(&r);
}
END_TEST

/* No byte of s (len) that a terminal obeys: only whole lines of text. */
#define assert_inert(s, len)						\
	do {								\
		const char *l_ = (s), *e_ = l_ + (len);			\
									\
		while (l_ < e_) {					\
			const char *nl_ = memchr(l_, '\n', e_ - l_);	\
			size_t ll_ = (nl_ ? nl_ : e_) - l_;		\
									\
			ck_assert_msg(mg_text_inert(l_, ll_) == ll_,	\
				      "raw byte 0x%02x in: %s",		\
				      (unsigned char)l_[mg_text_inert(l_, ll_)], \
				      l_);				\
			l_ += ll_ + 1;					\
		}							\
	} while (0)

/* What a hostile server says, and how it must look: escaped. */
#define EVIL		"\x1b]0;owned\x07\x1b[2J\x9b" "31m\xc2\x9b" "1m\x7f caf\xc3\xa9"
#define EVIL_SHOWN	"\\x1b]0;owned\\x07\\x1b[2J\\x9b31m\\xc2\\x9b1m\\x7f caf\xc3\xa9"

/*
 * A server's ERR lines and lines it should not send, whatever they hold,
 * reach the terminal escaped: controls, DEL, C1 and bytes that are not
 * UTF-8 as \xNN (an ERR may echo a name a user chose).
 */
START_TEST(cat_hostile_lines)
{
	const char *args[] = { "-s", NULL, NULL };
	const char *argsj[] = { "-j", "-s", NULL, NULL };
	struct fake f;
	struct run r;

	/* ERR to SUBSCRIBE */
	fake_init(&f);
	f.subscribe = "ERR bad filter: unknown probe '" EVIL "'\n";
	run_fake(&r, &f, "magnet-cat", args, 1);
	assert_status(&r, 2);
	assert_has(r.err, "magnet-cat: ERR bad filter: unknown probe '" EVIL_SHOWN "'\n");
	assert_inert(r.err, r.err_len);
	run_free(&r);

	/* replies to SUBSCRIBE that are not one */
	fake_init(&f);
	f.subscribe = "OK subscribed format=" EVIL "\n";
	run_fake(&r, &f, "magnet-cat", args, 1);
	assert_status(&r, 2);
	assert_has(r.err, ": 'OK subscribed format=" EVIL_SHOWN "' in reply to SUBSCRIBE\n");
	assert_inert(r.err, r.err_len);
	run_free(&r);
	fake_init(&f);
	f.subscribe = "OK subscribed format=\x1b[2J\n";
	run_fake(&r, &f, "magnet-cat", args, 1);
	assert_status(&r, 2);
	assert_has(r.err, "asked for format binary, got 'OK subscribed format=\\x1b[2J'\n");
	assert_inert(r.err, r.err_len);
	run_free(&r);

	/* ERR, then a line no client expects, while subscribed */
	fake_init(&f);
	f.data = "ERR " EVIL "\n";
	f.data_len = strlen(f.data);
	run_fake(&r, &f, "magnet-cat", args, 1);
	assert_status(&r, 2);
	assert_has(r.err, "magnet-cat: ERR " EVIL_SHOWN "\n");
	assert_inert(r.err, r.err_len);
	run_free(&r);

	fake_init(&f);
	f.data = EVIL "\n";
	f.data_len = strlen(f.data);
	run_fake(&r, &f, "magnet-cat", args, 1);
	assert_status(&r, 2);
	assert_has(r.err, "unexpected line '" EVIL_SHOWN "'\n");
	assert_inert(r.err, r.err_len);
	run_free(&r);

	fake_init(&f);
	f.data = "OK " EVIL "\n";
	f.data_len = strlen(f.data);
	run_fake(&r, &f, "magnet-cat", argsj, 2);
	assert_status(&r, 2);
	assert_has(r.err, "unexpected 'OK " EVIL_SHOWN "'\n");
	assert_inert(r.err, r.err_len);
	run_free(&r);
}
END_TEST

/*
 * -j passes the daemon's JSON lines through, so each is looked at whole:
 * JSON has no raw control in a string and the daemon none that is not
 * UTF-8, so such a line is a protocol error, never printed; a valid line
 * with escapes and UTF-8 goes out as it came.
 */
START_TEST(cat_hostile_json)
{
	static const char good[] =
		"{\"ts\":1,\"cpu\":0,\"pid\":9,\"tgid\":9,\"id\":16,\"event\":\"caf\xc3\xa9\\u001b[2J\\u009b\",\"type\":\"kprobe\",\"abstract\":\"0x1\",\"args\":[]}\n";
	static const char *const bad[] = {
		"{\"ts\":2,\"cpu\":0,\"pid\":9,\"tgid\":9,\"id\":16,\"event\":\"\x1b[2J\",\"type\":\"kprobe\"}\n",
		"{\"ts\":2,\"cpu\":0,\"pid\":9,\"tgid\":9,\"id\":16,\"event\":\"\x9b" "2J\",\"type\":\"kprobe\"}\n",
		"{\"ts\":2,\"cpu\":0,\"pid\":9,\"tgid\":9,\"id\":16,\"event\":\"\xc2\x9b" "2J\",\"type\":\"kprobe\"}\n",
		"{\"ts\":2,\"cpu\":0,\"pid\":9,\"tgid\":9,\"id\":16,\"event\":\"x\",\"type\":\"kprobe\"}\x7f\n",
		"{\"ts\":2,\"cpu\":0,\"pid\":9,\"tgid\":9,\"id\":16,\"event\":\"\xff\xfe\",\"type\":\"kprobe\"}\n",
		"{\"ts\":2,\"cpu\":0,\"pid\":9,\"tgid\":9,\"id\":16,\"event\":\"a\rb\",\"type\":\"kprobe\"}\n",
	};
	static const char *const why[] = {
		"byte 0x1b at column 51", "byte 0x9b at column 51",
		"byte 0xc2 at column 51", "byte 0x7f at column 70",
		"byte 0xff at column 51", "byte 0x0d at column 52",
	};
	const char *args[] = { "-j", "-s", NULL, NULL };
	char data[1024];
	struct fake f;
	struct run r;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(data, sizeof(data), "%s%s", good, bad[i]);
		fake_init(&f);
		f.data = data;
		f.data_len = strlen(data);
		f.close_after_data = true;
		run_fake(&r, &f, "magnet-cat", args, 2);
		assert_status(&r, 2);
		ck_assert_str_eq(r.out, good);
		assert_has(r.err, "magnet-cat: protocol error from 127.0.0.1:");
		assert_has(r.err, why[i]);
		assert_inert(r.out, r.out_len);
		assert_inert(r.err, r.err_len);
		run_free(&r);
	}
}
END_TEST

START_TEST(cat_raw)
{
	const char *args[] = { "-b", "-s", NULL, NULL };
	char *p = (char *)recbuf;
	struct fake f;
	struct run r;
	size_t a, b, at;

	a = enc_kprobe(p, 16, 1000000000001ULL, 5);
	b = enc_lost(p + a, 1000000000002ULL, 1, 0);
	b += enc_kret(p + a + b, 17, 1000000000003ULL);
	at = add_frame(script, 0, p, a);
	at = add_frame(script, at, p + a, b);
	fake_init(&f);
	f.data = script;
	f.data_len = at;
	f.close_after_data = true;
	run_fake(&r, &f, "magnet-cat", args, 2);
	assert_status(&r, 0);
	ck_assert_uint_eq(r.out_len, a + b);
	ck_assert_mem_eq(r.out, p, a + b);
	assert_has(r.err, "2 records, 1 lost (kernel)");
	run_free(&r);
}
END_TEST

/*
 * -b writes binary, which a terminal would obey: to one it is refused
 * before any connection (no option forces it; a pipe does).
 */
START_TEST(cat_raw_terminal)
{
	char path[PATH_MAX], errp[64], addr_arg[64];
	struct fake f;
	struct run r;
	int master, efd;
	pid_t pid;

	fake_init(&f);
	fake_start(&f);
	snprintf(addr_arg, sizeof(addr_arg), "%s", f.addr);
	tool_path(path, sizeof(path), "magnet-cat");
	master = posix_openpt(O_RDWR | O_NOCTTY);
	ck_assert_int_ge(master, 0);
	ck_assert_int_eq(grantpt(master), 0);
	ck_assert_int_eq(unlockpt(master), 0);
	efd = tu_tmpfile(errp);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		int s = open(ptsname(master), O_RDWR | O_NOCTTY);

		dup2(s, 1);
		dup2(efd, 2);
		execl(path, path, "-b", "-s", addr_arg, (char *)NULL);
		_exit(127);
	}
	close(efd);
	reap(&r, pid, 10000);
	r.err = slurp(errp, &r.err_len);
	r.out = NULL;
	close(master);
	fake_stop(&f);
	assert_status(&r, 1);
	assert_has(r.err, "magnet-cat: -b writes binary records: redirect stdout to a file or a pipe\n");
	ck_assert_str_eq(f.log, "");
	run_free(&r);
}
END_TEST

START_TEST(cat_usage)
{
	static const char *const bad[][4] = {
		{ "-j", "-b", NULL }, { "-n", "0", NULL }, { "-n", "x", NULL },
		{ "-t", "0", NULL }, { "-t", "1.2345", NULL }, { "-t", "-1", NULL },
		{ "-x", NULL }, { "cpu\001", NULL },
	};
	struct run r;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		run(&r, "magnet-cat", bad[i]);
		assert_status(&r, 1);
		assert_has(r.err, "usage: magnet-cat ");
		ck_assert_uint_eq(r.out_len, 0);
		run_free(&r);
	}
}
END_TEST

/* ---- magnet-top ---- */

#define REP(key, n, ev) "A " key " " #n " ts=1700000000000000000 " \
	"interval=1000000000 events=" #ev " bytes=0 keys=" #n " lost=0 " \
	"evicted=0 evicted_events=0 unkeyed=0 dropped=0\n"

/*
 * Two net reports: the first in 1 s, an IPv6 peer and job 0; the second
 * in 0.5 s, with evictions, unkeyed records and a '%' in a path.
 */
#define NET_REPORT_1 "A net 4 ts=1700000000000000000 interval=1000000000 " \
	"packets=31 bytes=70100 jobs=2 peers=2 lost=0 evicted_jobs=0 " \
	"evicted_job_bytes=0 evicted_peers=0 evicted_peer_bytes=0 unkeyed=0 " \
	"dropped=0 skipped=0\n" \
	"J 4242 tcp 10 64000 20 6000 /system.slice/a%20b.service\n" \
	"J 0 udp 0 0 1 100 -\n" \
	"P 4242 tcp 10.0.0.2:443 10 64000 20 6000 10.0.0.1:51000\n" \
	"P 0 udp [fe80::1]:53 0 0 1 100\n"
#define NET_REPORT_2 "A net 3 ts=1700000001000000000 interval=500000000 " \
	"packets=50 bytes=1500000 jobs=1 peers=1 lost=2 evicted_jobs=3 " \
	"evicted_job_bytes=500000 evicted_peers=4 evicted_peer_bytes=700000 " \
	"unkeyed=5 dropped=6 skipped=1\n" \
	"J 4343 tcp 40 1000000 0 0 /job%2542\n" \
	"P 4343 tcp 10.1.2.3:5201 20 500000 0 0 10.0.0.1:40000\n" \
	"P 4343 tcp 10.1.2.3:5201 10 300000 0 0 10.0.0.1:40001\n"
/* No skb probes: an empty report. */
#define NET_REPORT_EMPTY "A net 0 ts=1700000000000000000 interval=1000000000 " \
	"packets=0 bytes=0 jobs=0 peers=0 lost=0 evicted_jobs=0 " \
	"evicted_job_bytes=0 evicted_peers=0 evicted_peer_bytes=0 unkeyed=0 " \
	"dropped=0 skipped=0\n"

static void top_script(struct fake *f)
{
	fake_init(f);
	f->reports[0][0] = REP("tgid", 2, 5010)
		"E 100 5000 0 5000.0 alpha\nE 200 10 0 10.0 beta\n";
	f->reports[0][1] = REP("tgid", 2, 7020)
		"E 300 7000 0 7000.0 gamma\nE 100 20 0 20.0 alpha\n";
	f->reports[1][0] = REP("cgroup", 1, 5010)
		"E 4242 5010 0 5010.0 /system.slice/a%20b.service\n";
	f->reports[1][1] = REP("cgroup", 1, 7020)
		"E 4343 7020 0 7020.0 /job42\n";
	f->reports[2][0] = REP("probe", 1, 5010) "E 17 5010 0 5010.0 tcp_sendmsg\n";
	f->reports[2][1] = REP("probe", 2, 7020)
		"E 16 7000 0 7000.0 vfs_read\nE 17 20 0 20.0 tcp_sendmsg\n";
	f->reports[3][0] = NET_REPORT_1;
	f->reports[3][1] = NET_REPORT_2;
}

/* The text between the n-th (1-based) and the next "magnet-top - ". */
static char *block(const char *out, int n)
{
	const char *p = out, *end;

	while (n--) {
		p = strstr(p, "magnet-top - ");
		ck_assert_ptr_nonnull(p);
		if (n)
			p++;
	}
	end = strstr(p + 1, "magnet-top - ");
	return strndup(p, end ? (size_t)(end - p) : strlen(p));
}


START_TEST(top_batch)
{
	const char *args[] = { "-b", "-n", "2", "-d", "0.05", "-s", NULL, NULL };
	struct fake f;
	struct run r;
	char *b1, *b2;

	top_script(&f);
	run_fake(&r, &f, "magnet-top", args, 6);
	assert_status(&r, 0);
	ck_assert_uint_eq(r.err_len, 0);

	b1 = block(r.out, 1);
	b2 = block(r.out, 2);
	ck_assert_ptr_null(strstr(b2 + 1, "magnet-top - "));
	assert_has(b1, "magnet-top - 22:13:20 up 1:01:02, node node1, 4 cpus, clock mono, module up\n");
	assert_has(b1, "records 5010.0/s, kernel lost 10, daemon drops 0, clients 4\n");
	assert_has(b1, "TOP PROCESSES: 5010 events in 1.00 s, 2 keys\n");
	assert_has(b1, "       100       5000     5000.0  alpha\n");
	assert_before(b1, "alpha", "beta");
	assert_before(b1, "TOP PROCESSES", "TOP JOBS");
	assert_before(b1, "TOP JOBS", "PROBES");
	assert_has(b1, "      4242       5010     5010.0  /system.slice/a\\x20b.service\n");
	/* probes: the busiest of the interval first, hits from PROBES */
	assert_has(b1, "    17 kretprobe            99       5010     5010.0  tcp_sendmsg\n");
	assert_before(b1, "tcp_sendmsg\n", "vfs_read\n");
	ck_assert_ptr_null(strstr(b1, "gamma"));

	assert_has(b2, "kernel lost 13 (+3), daemon drops 1 (+1)");
	assert_before(b2, "gamma", "alpha");
	ck_assert_ptr_null(strstr(b2, "beta"));
	assert_has(b2, "/job42\n");
	assert_before(b2, "vfs_read\n", "tcp_sendmsg\n");
	ck_assert_ptr_null(strstr(r.out, "stale"));

	assert_has(f.log, "AGG tgid EVERY 50ms\n");
	assert_has(f.log, "AGG cgroup EVERY 50ms\n");
	assert_has(f.log, "AGG probe EVERY 50ms\n");
	assert_has(f.log, "AGG net EVERY 50ms\n");
	assert_has(f.log, "HELLO\nSTATS\nPROBES\n");
	free(b1);
	free(b2);
	run_free(&r);
}
END_TEST

START_TEST(top_machine)
{
	const char *args[] = { "-m", "-n", "1", "-d", "0.05", "-s", NULL, NULL };
	struct fake f;
	struct run r;

	top_script(&f);
	run_fake(&r, &f, "magnet-top", args, 6);
	assert_status(&r, 0);
	ck_assert_str_eq(r.out,
		"header\titeration\t1\n"
		"header\tts\t1700000000000000000\n"
		"header\tnode\tnode1\n"
		"header\tcpus\t4\n"
		"header\tclock\tmono\n"
		"header\tuptime\t3662\n"
		"header\tmodule\tup\n"
		"header\trecords_per_s\t5010.0\n"
		"header\tkernel_lost\t10\n"
		"header\tdaemon_dropped\t0\n"
		"header\tkernel_lost_delta\t-\n"
		"header\tdaemon_dropped_delta\t-\n"
		"header\tclients\t4\n"
		"header\tnet\ton\n"
		"report\ttgid\t1\t1700000000000000000\t1000000000\t5010\t0\t2\t0\t0\t0\t0\t0\n"
		"report\tcgroup\t1\t1700000000000000000\t1000000000\t5010\t0\t1\t0\t0\t0\t0\t0\n"
		"report\tprobe\t1\t1700000000000000000\t1000000000\t5010\t0\t1\t0\t0\t0\t0\t0\n"
		"report\tnet\t1\t1700000000000000000\t1000000000\t31\t70100\t2\t2\t0\t0\t0\t0\t0\t0\t0\t0\n"
		"process\t100\talpha\t5000\t5000.0\n"
		"process\t200\tbeta\t10\t10.0\n"
		"job\t4242\t/system.slice/a\\x20b.service\t5010\t5010.0\t-\t-\t-\n"
		"net_job\t4242\ttcp\t/system.slice/a\\x20b.service\t10\t64000\t20\t6000\t-\t-\t-\n"
		"net_job\t0\tudp\t-\t0\t0\t1\t100\t-\t-\t-\n"
		"net_peer\t4242\ttcp\t10.0.0.2:443\t10\t64000\t20\t6000\t10.0.0.1:51000\n"
		"net_peer\t0\tudp\t[fe80::1]:53\t0\t0\t1\t100\t-\n"
		"probe\t17\ttcp_sendmsg\tkretprobe\t99\t5010\t5010.0\n"
		"probe\t16\tvfs_read\tkprobe\t1234\t0\t0.0\n"
		"\n");
	run_free(&r);
}
END_TEST

/* The network view: the rows sent, as rates over each report's interval. */
START_TEST(top_net_batch)
{
	const char *args[] = { "-b", "-n", "2", "-d", "0.05", "-s", NULL, NULL };
	struct fake f;
	struct run r;
	char *b1, *b2;

	top_script(&f);
	run_fake(&r, &f, "magnet-top", args, 6);
	assert_status(&r, 0);
	ck_assert_uint_eq(r.err_len, 0);
	b1 = block(r.out, 1);
	b2 = block(r.out, 2);
	assert_before(b1, "TOP JOBS", "NETWORK BY JOB");
	assert_before(b1, "NETWORK BY JOB", "PEERS");
	assert_before(b1, "PEERS", "PROBES");
	assert_has(b1,
		"\nNETWORK BY JOB: 31 packets, 70100 bytes in 1.00 s, 2 jobs\n"
		"    CGROUP PROTO      TX B/s     RX B/s   TX PKT/s   RX PKT/s  PATH\n"
		"      4242 tcp         64.0k       6.0k       10.0       20.0  /system.slice/a\\x20b.service\n"
		"         0 udp             0        100        0.0        1.0  -\n"
		"\nPEERS: 2 peers\n"
		"    CGROUP PROTO      TX B/s     RX B/s  PEER                    PATH\n"
		"      4242 tcp         64.0k       6.0k  10.0.0.2:443            /system.slice/a\\x20b.service\n"
		"         0 udp             0        100  [fe80::1]:53            -\n"
		"\nPROBES");
	/* 0.5 s: the rates are twice the counts; evictions and unkeyed said; two flows to one peer, one row */
	assert_has(b2,
		"\nNETWORK BY JOB: 50 packets, 1500000 bytes in 0.50 s, 1 jobs, 5 unkeyed, 3 evicted (500000 bytes)\n"
		"    CGROUP PROTO      TX B/s     RX B/s   TX PKT/s   RX PKT/s  PATH\n"
		"      4343 tcp          2.0M          0       80.0        0.0  /job%42\n"
		"\nPEERS: 1 peers, 4 evicted (700000 bytes)\n"
		"    CGROUP PROTO      TX B/s     RX B/s  PEER                    PATH\n"
		"      4343 tcp          1.6M          0  10.1.2.3:5201           /job%42\n"
		"\nPROBES");
	ck_assert_ptr_null(strstr(b2, "10.0.0.2"));
	ck_assert_ptr_null(strstr(r.out, "no packets"));
	free(b1);
	free(b2);
	run_free(&r);
}
END_TEST

START_TEST(top_net_machine)
{
	const char *args[] = { "-m", "-n", "2", "-d", "0.05", "-s", NULL, NULL };
	struct fake f;
	struct run r;
	const char *b2;

	top_script(&f);
	run_fake(&r, &f, "magnet-top", args, 6);
	assert_status(&r, 0);
	/* the first block is top_machine's; the second, its net lines */
	b2 = strstr(r.out, "header\titeration\t2\n");
	ck_assert_ptr_nonnull(b2);
	assert_has(b2, "header\tclients\t4\nheader\tnet\ton\n");
	assert_has(b2, "report\tprobe\t1\t1700000000000000000\t1000000000\t7020\t0\t2\t0\t0\t0\t0\t0\n"
		       "report\tnet\t1\t1700000001000000000\t500000000\t50\t1500000\t1\t1\t2\t3\t500000\t4\t700000\t5\t6\t1\n"
		       "process\t");
	assert_has(b2, "job\t4343\t/job42\t7020\t7020.0\t-\t-\t-\n"
		       "net_job\t4343\ttcp\t/job%42\t40\t1000000\t0\t0\t-\t-\t-\n"
		       "net_peer\t4343\ttcp\t10.1.2.3:5201\t20\t500000\t0\t0\t10.0.0.1:40000\n"
		       "net_peer\t4343\ttcp\t10.1.2.3:5201\t10\t300000\t0\t0\t10.0.0.1:40001\n"
		       "probe\t16\t");
	/* 14 header, 4 report, 2 process, job, net_job, 2 net_peer, 2 probe, blank */
	ck_assert_uint_eq(count_lines(b2), 27);
	run_free(&r);
}
END_TEST

/*
 * Slurm jobs' series (docs/slurm.md): named by Slurm's job and step and
 * their user in the jobs, network and peer rows; their fields in -m.
 */
#define SLURM_PATH	"/system.slice/slurmstepd.scope/job_42/step_0"
static void top_slurm_script(struct fake *f)
{
	top_script(f);
	f->reports[1][0] = REP("cgroup", 3, 5010)
		"E 4242 5000 0 5000.0 " SLURM_PATH " slurm_job_id=42 slurm_step=0 uid=1000\n"
		"E 4244 9 0 9.0 " SLURM_PATH "/slurm slurm_job_id=42 slurm_step=0 slurm_stepd=1 slurm_node=n1\n"
		"E 77 1 0 1.0 /u/job_1 future=1\n";
	f->reports[3][0] = "A net 2 ts=1700000000000000000 interval=1000000000 "
		"packets=30 bytes=64000 jobs=1 peers=1 lost=0 evicted_jobs=0 "
		"evicted_job_bytes=0 evicted_peers=0 evicted_peer_bytes=0 unkeyed=0 "
		"dropped=0 skipped=0\n"
		"J 4242 tcp 10 64000 20 6000 " SLURM_PATH " slurm_job_id=42 slurm_step=0 uid=1000\n"
		"P 4242 tcp 10.0.0.2:443 10 64000 20 6000\n";
}

START_TEST(top_slurm)
{
	const char *args[] = { "-b", "-n", "1", "-d", "0.05", "-s", NULL, NULL };
	const char *margs[] = { "-m", "-n", "1", "-d", "0.05", "-s", NULL, NULL };
	struct fake f;
	struct run r;

	top_slurm_script(&f);
	run_fake(&r, &f, "magnet-top", args, 6);
	assert_status(&r, 0);
	assert_has(r.out, "      4242       5000     5000.0  slurm=42.0,uid=1000\n");
	assert_has(r.out, "      4244          9        9.0  slurm=42.0/slurmstepd,node=n1\n");
	assert_has(r.out, "        77          1        1.0  /u/job_1\n");
	assert_has(r.out, "      4242 tcp         64.0k       6.0k       10.0       20.0  slurm=42.0,uid=1000\n");
	assert_has(r.out, "      4242 tcp         64.0k       6.0k  10.0.0.2:443            slurm=42.0,uid=1000\n");
	run_free(&r);

	top_slurm_script(&f);
	run_fake(&r, &f, "magnet-top", margs, 6);
	assert_status(&r, 0);
	assert_has(r.out, "job\t4242\t" SLURM_PATH "\t5000\t5000.0\t42\t0\t1000\n");
	assert_has(r.out, "job\t4244\t" SLURM_PATH "/slurm\t9\t9.0\t42\t0/slurmstepd\t-\n");
	assert_has(r.out, "job\t77\t/u/job_1\t1\t1.0\t-\t-\t-\n");
	assert_has(r.out, "net_job\t4242\ttcp\t" SLURM_PATH "\t10\t64000\t20\t6000\t42\t0\t1000\n");
	run_free(&r);

	/* A malformed Slurm word: the report is refused, as any bad line. */
	top_script(&f);
	f.reports[1][0] = REP("cgroup", 1, 5010)
		"E 4242 5000 0 5000.0 " SLURM_PATH " slurm_job_id=x\n";
	run_fake(&r, &f, "magnet-top", args, 6);
	ck_assert_msg(strstr(r.err, "bad Slurm word"), "%s", r.err);
	run_free(&r);
}
END_TEST

/* magnetd without skb probes: empty tables, and a word why. */
START_TEST(top_net_empty)
{
	const char *args[] = { "-b", "-n", "1", "-d", "0.05", "-s", NULL, NULL };
	const char *margs[] = { "-m", "-n", "1", "-d", "0.05", "-s", NULL, NULL };
	struct fake f;
	struct run r;

	top_script(&f);
	f.reports[3][0] = NET_REPORT_EMPTY;
	f.reports[3][1] = NULL;
	run_fake(&r, &f, "magnet-top", args, 6);
	assert_status(&r, 0);
	assert_has(r.out,
		"\nNETWORK BY JOB: 0 packets, 0 bytes in 1.00 s, 0 jobs\n"
		"    CGROUP PROTO      TX B/s     RX B/s   TX PKT/s   RX PKT/s  PATH\n"
		"           no packets (no skb probes? magnet-ctl probe add set net-jobs)\n"
		"\nPEERS: 0 peers\n"
		"    CGROUP PROTO      TX B/s     RX B/s  PEER                    PATH\n"
		"\nPROBES");
	run_free(&r);

	top_script(&f);
	f.reports[3][0] = NET_REPORT_EMPTY;
	f.reports[3][1] = NULL;
	run_fake(&r, &f, "magnet-top", margs, 6);
	assert_status(&r, 0);
	assert_has(r.out, "report\tnet\t1\t1700000000000000000\t1000000000\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\n");
	ck_assert_ptr_null(strstr(r.out, "net_job"));
	ck_assert_ptr_null(strstr(r.out, "net_peer"));
	run_free(&r);
}
END_TEST

/* -N, and a magnetd that refuses AGG net: the other views as before. */
START_TEST(top_net_off)
{
	const char *args[] = { "-N", "-b", "-n", "1", "-d", "0.05", "-s", NULL, NULL };
	const char *margs[] = { "-m", "-n", "1", "-d", "0.05", "-s", NULL, NULL };
	const char *bargs[] = { "-b", "-n", "2", "-d", "0.05", "-s", NULL, NULL };
	struct fake f;
	struct run r;
	char *b2;

	top_script(&f);
	run_fake(&r, &f, "magnet-top", args, 7);
	assert_status(&r, 0);
	ck_assert_ptr_null(strstr(f.log, "AGG net"));
	assert_has(f.log, "AGG probe EVERY 50ms\n");
	ck_assert_ptr_null(strstr(r.out, "NETWORK"));
	ck_assert_ptr_null(strstr(r.out, "PEERS"));
	assert_has(r.out, "/system.slice/a\\x20b.service\n\nPROBES");
	ck_assert_ptr_null(strstr(r.out, "stale"));
	run_free(&r);

	margs[0] = "-Nm";
	top_script(&f);
	run_fake(&r, &f, "magnet-top", margs, 6);
	assert_status(&r, 0);
	assert_has(r.out, "header\tnet\toff\n");
	ck_assert_ptr_null(strstr(r.out, "\tnet\t1"));
	ck_assert_ptr_null(strstr(r.out, "net_"));
	run_free(&r);

	top_script(&f);
	f.agg_reply[3] = "ERR unknown AGG key 'net' (probe, pid, tgid, comm or cgroup)\n";
	run_fake(&r, &f, "magnet-top", bargs, 6);
	assert_status(&r, 0);
	ck_assert_uint_eq(r.err_len, 0);
	assert_has(f.log, "AGG net EVERY 50ms\n");
	b2 = block(r.out, 2);
	assert_has(b2, "/job42\n\nNETWORK BY JOB: not shown, magnetd refused AGG net: "
		   "ERR unknown AGG key 'net' (probe, pid, tgid, comm or cgroup)\n\nPROBES");
	free(b2);
	ck_assert_ptr_null(strstr(r.out, "PEERS"));
	ck_assert_ptr_null(strstr(r.out, "stale"));
	run_free(&r);

	margs[0] = "-m";
	top_script(&f);
	f.agg_reply[3] = "ERR unknown AGG key 'net'\n";
	run_fake(&r, &f, "magnet-top", margs, 6);
	assert_status(&r, 0);
	assert_has(r.out, "header\tnet\trefused\tERR unknown AGG key 'net'\n");
	ck_assert_ptr_null(strstr(r.out, "net_"));
	run_free(&r);
}
END_TEST

/* A table that never reports is shown once the wait runs out. */
START_TEST(top_stale)
{
	const char *args[] = { "-n", "1", "-d", "0.05", "-s", NULL, NULL };
	struct fake f;
	struct run r;

	top_script(&f);
	f.reports[1][0] = NULL;
	f.reports[1][1] = NULL;
	fake_start(&f);
	args[5] = f.addr;
	run(&r, "magnet-top", args);	/* stdout is a file: batch by itself */
	fake_stop(&f);
	assert_status(&r, 0);
	ck_assert_ptr_null(strstr(r.out, "\033"));
	assert_has(r.out, "TOP JOBS (no report yet)\n");
	assert_has(r.out, "alpha");
	run_free(&r);

	/* the net report alone missing: both its sections say so */
	top_script(&f);
	f.reports[3][0] = NULL;
	f.reports[3][1] = NULL;
	fake_start(&f);
	args[5] = f.addr;
	run(&r, "magnet-top", args);
	fake_stop(&f);
	assert_status(&r, 0);
	assert_has(r.out, "TOP JOBS: 5010 events in 1.00 s, 1 keys\n");
	assert_has(r.out, "\nNETWORK BY JOB (no report yet)\n");
	assert_has(r.out, "\nPEERS (no report yet)\n");
	ck_assert_ptr_null(strstr(r.out, "no packets"));
	run_free(&r);
}
END_TEST

START_TEST(top_errors)
{
	const char *args[] = { "-b", "-n", "5", "-d", "0.05", "-s", NULL, NULL };
	static const char *const bad[][4] = {
		{ "-d", "0", NULL }, { "-d", "0.001", NULL }, { "-d", "86401", NULL },
		{ "-n", "0", NULL }, { "extra", NULL }, { "-z", NULL },
	};
	struct fake f;
	struct run r;
	size_t i;

	/* the server goes away after its first reports */
	top_script(&f);
	f.close_after_reports = true;
	f.reports[0][1] = f.reports[1][1] = f.reports[2][1] = f.reports[3][1] = NULL;
	run_fake(&r, &f, "magnet-top", args, 6);
	assert_status(&r, 2);
	assert_has(r.err, "magnet-top: magnetd at 127.0.0.1:");
	assert_has(r.err, " closed the connection\n");
	run_free(&r);

	/* an AGG refused: verbatim */
	top_script(&f);
	f.agg_reply[1] = "ERR unknown AGG key 'cgroup' (probe, pid, tgid, comm or cgroup)\n";
	run_fake(&r, &f, "magnet-top", args, 6);
	assert_status(&r, 2);
	assert_has(r.err, "magnet-top: ERR unknown AGG key 'cgroup' (probe, pid, tgid, comm or cgroup)\n");
	run_free(&r);

	/* a malformed report */
	top_script(&f);
	f.reports[0][0] = REP("tgid", 1, 1) "E 100 1 0 fast alpha\n";
	run_fake(&r, &f, "magnet-top", args, 6);
	assert_status(&r, 2);
	assert_has(r.err, "protocol error from 127.0.0.1:");
	assert_has(r.err, "AGG entry 1: bad rate in 'E 100 1 0 fast alpha'");
	run_free(&r);

	/* a malformed net report */
	top_script(&f);
	f.reports[3][0] = NET_REPORT_EMPTY;
	f.reports[3][1] = "A net 1 ts=1 interval=1 packets=0 bytes=0 jobs=0 peers=0 "
		"lost=0 evicted_jobs=0 evicted_job_bytes=0 evicted_peers=0 "
		"evicted_peer_bytes=0 unkeyed=0 dropped=0 skipped=0\n"
		"J 7 tcp 1 2 3 4\n";
	run_fake(&r, &f, "magnet-top", args, 6);
	assert_status(&r, 2);
	assert_has(r.err, "protocol error from 127.0.0.1:");
	assert_has(r.err, "AGG net line 1: expected 'J <job> <proto> <tx_packets> <tx_bytes> <rx_packets> <rx_bytes> <label>', not 'J 7 tcp 1 2 3 4'\n");
	run_free(&r);

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		run(&r, "magnet-top", bad[i]);
		assert_status(&r, 1);
		assert_has(r.err, "usage: magnet-top ");
		run_free(&r);
	}
}
END_TEST

START_TEST(top_hostile_lines)
{
	const char *args[] = { "-b", "-n", "2", "-d", "0.05", "-s", NULL, NULL };
	const char *margs[] = { "-m", "-n", "1", "-d", "0.05", "-s", NULL, NULL };
	struct fake f;
	struct run r;

	/* an AGG refused */
	top_script(&f);
	f.agg_reply[1] = "ERR unknown AGG key '" EVIL "'\n";
	run_fake(&r, &f, "magnet-top", args, 6);
	assert_status(&r, 2);
	assert_has(r.err, "magnet-top: ERR unknown AGG key '" EVIL_SHOWN "'\n");
	assert_inert(r.err, r.err_len);
	run_free(&r);

	/* AGG net refused: said on every screen, and in -m */
	top_script(&f);
	f.agg_reply[3] = "ERR " EVIL "\n";
	run_fake(&r, &f, "magnet-top", args, 6);
	assert_status(&r, 0);
	assert_has(r.out, "magnetd refused AGG net: ERR " EVIL_SHOWN "\n");
	assert_inert(r.out, r.out_len);
	run_free(&r);
	top_script(&f);
	f.agg_reply[3] = "ERR " EVIL "\n";
	run_fake(&r, &f, "magnet-top", margs, 6);
	assert_status(&r, 0);
	assert_has(r.out, "header\tnet\trefused\tERR " EVIL_SHOWN "\n");
	run_free(&r);

	/* a reply to AGG that is not one */
	top_script(&f);
	f.agg_reply[0] = "OK " EVIL "\n";
	run_fake(&r, &f, "magnet-top", args, 6);
	assert_status(&r, 2);
	assert_has(r.err, "'OK " EVIL_SHOWN "' in reply to AGG tgid EVERY 50ms\n");
	assert_inert(r.err, r.err_len);
	run_free(&r);

	/* ERR, or a line of nothing known, instead of a report */
	top_script(&f);
	f.reports[2][1] = "ERR " EVIL "\n";
	run_fake(&r, &f, "magnet-top", args, 6);
	assert_status(&r, 2);
	assert_has(r.err, "magnet-top: ERR " EVIL_SHOWN "\n");
	assert_inert(r.out, r.out_len);
	assert_inert(r.err, r.err_len);
	run_free(&r);

	top_script(&f);
	f.reports[0][1] = EVIL "\n";
	run_fake(&r, &f, "magnet-top", args, 6);
	assert_status(&r, 2);
	assert_has(r.err, "unexpected '" EVIL_SHOWN "'\n");
	assert_inert(r.out, r.out_len);
	assert_inert(r.err, r.err_len);
	run_free(&r);
}
END_TEST

/* Append what the pty has (within timeout_ms) to out; keep its tail. */
static size_t pty_read(int fd, char *out, size_t size, size_t len, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	ssize_t n;

	while (poll(&pfd, 1, timeout_ms) > 0) {
		if (len > size / 2) {
			memmove(out, out + len - 4096, 4096);
			len = 4096;
		}
		n = read(fd, out + len, size - 1 - len);
		if (n <= 0)
			break;
		len += n;
		if (timeout_ms)
			break;
	}
	return len;
}

/* Interactive on a pty: a screen, q quits, the terminal is as it was. */
static void top_pty(int how)
{
	char path[PATH_MAX], addr_arg[64], out[65536];
	struct winsize ws = { .ws_row = 40, .ws_col = 100 };
	struct termios before, after;
	size_t len = 0;
	struct fake f;
	struct run r;
	long long t0;
	int master;
	pid_t pid;

	top_script(&f);
	fake_start(&f);
	snprintf(addr_arg, sizeof(addr_arg), "%s", f.addr);
	tool_path(path, sizeof(path), "magnet-top");
	master = posix_openpt(O_RDWR | O_NOCTTY);
	ck_assert_int_ge(master, 0);
	ck_assert_int_eq(grantpt(master), 0);
	ck_assert_int_eq(unlockpt(master), 0);
	ck_assert_int_eq(ioctl(master, TIOCSWINSZ, &ws), 0);
	ck_assert_int_eq(tcgetattr(master, &before), 0);
	ck_assert(before.c_lflag & ICANON);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		int s;

		setsid();
		s = open(ptsname(master), O_RDWR);
		dup2(s, 0);
		dup2(s, 1);
		dup2(s, 2);
		execl(path, path, "-d", "0.05", "-s", addr_arg, (char *)NULL);
		_exit(127);
	}
	/* Read the screen until the processes show, then quit. */
	t0 = now_ms();
	while (now_ms() - t0 < 8000) {
		struct pollfd pfd = { .fd = master, .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, 50) > 0) {
			n = read(master, out + len, sizeof(out) - 1 - len);
			if (n > 0)
				len += n;
			out[len] = '\0';
			if (strstr(out, "alpha"))
				break;
		}
	}
	out[len] = '\0';
	ck_assert_msg(strstr(out, "alpha"), "no screen: %s", out);
	assert_has(out, "\033[H\033[2J");
	assert_has(out, "\033[?25l");
	ck_assert_int_eq(tcgetattr(master, &after), 0);
	ck_assert(!(after.c_lflag & (ICANON | ECHO)));
	if (how == 'q')
		ck_assert_int_eq(write(master, "q", 1), 1);
	else
		kill(pid, how);
	/* Keep draining, or a full pty would block the tool. */
	len = 0;
	t0 = now_ms();
	while (waitpid(pid, &r.status, WNOHANG) == 0) {
		/* A hung-up pty polls ready at once: count real time. */
		ck_assert_msg(now_ms() - t0 < 5000, "magnet-top did not quit");
		len = pty_read(master, out, sizeof(out), len, 10);
		sleep_ms(1);
	}
	/* What it wrote last, after it exited: read until EIO. */
	len = pty_read(master, out, sizeof(out), len, 0);
	out[len] = '\0';
	assert_has(out, "\033[?25h");
	ck_assert_msg(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
		      "status 0x%x", r.status);
	ck_assert_int_eq(tcgetattr(master, &after), 0);
	ck_assert_int_eq(after.c_lflag & (ICANON | ECHO), before.c_lflag & (ICANON | ECHO));
	close(master);
	fake_stop(&f);
}

START_TEST(top_term_q)
{
	top_pty('q');
}
END_TEST

START_TEST(top_term_sigterm)
{
	top_pty(SIGTERM);
}
END_TEST

/* The fake's lines that start with AUTH MUNGE, counted; the first kept. */
static int auth_lines(const char *log, char *first, size_t len)
{
	const char *p = log, *nl;
	int n = 0;

	while ((p = strstr(p, "AUTH MUNGE "))) {
		if (p != log && p[-1] != '\n') {
			p++;
			continue;
		}
		nl = strchr(p, '\n');
		if (!n++)
			snprintf(first, len, "%.*s", (int)(nl - p), p);
		p = nl;
	}
	return n;
}

/* ---- magnet-jobs ---- */

/* Two fakes, node1 and node2 (JOBS_TOTALS_*, JOBS_NET_*), and a run on both. */
static void jobs_run(struct run *r, const char *mode, const char *extra_server)
{
	static struct fake f1, f2;
	char servers[256];
	const char *args[] = { "-d", "0.05", "-s", servers, mode, NULL };

	fake_init(&f1);
	fake_init(&f2);
	f1.totals = JOBS_TOTALS_1;
	f2.totals = JOBS_TOTALS_2;
	f1.reports[3][0] = JOBS_NET_1;
	f2.reports[3][0] = JOBS_NET_2;
	fake_start(&f1);
	fake_start(&f2);
	snprintf(servers, sizeof(servers), "%s,%s%s%s", f1.addr, f2.addr,
		 extra_server ? "," : "", extra_server ? extra_server : "");
	run(r, "magnet-jobs", args);
	fake_stop(&f1);
	fake_stop(&f2);
	/* What each was asked, in order: the flows, then the totals. */
	assert_has(f1.log, "AGG net EVERY 50ms\nUNSUBSCRIBE\nTOTALS\n");
	assert_has(f2.log, "AGG net EVERY 50ms\nUNSUBSCRIBE\nTOTALS\n");
}

/* -m: every line exact, the nodes' (with their servers) first. */
START_TEST(jobs_machine)
{
	struct run r;
	char *nodes_end;

	jobs_run(&r, "-m", NULL);
	assert_status(&r, 0);
	nodes_end = strstr(r.out, "\nnet\t");
	ck_assert_ptr_nonnull(nodes_end);
	ck_assert_msg(!strncmp(r.out, "node\tnode1\t127.0.0.1:", 21) &&
		      strstr(r.out, "\tflows\t-\nnode\tnode2\t127.0.0.1:") &&
		      strstr(r.out, "\tflows\t-\n") < nodes_end, "%s", r.out);
	ck_assert_str_eq(nodes_end + 1,
		"net\tslurm=42\tnode1\ttcp\t73\t100030\t43\t1037\n"
		"peer\tslurm=42\tnode1\t10.0.0.2\tnode2\t70\t100000\t40\t1007\tnode2:slurm=42\n"
		"peer\tslurm=42\tnode1\t127.0.0.1\tnode1\t3\t30\t3\t30\tnode1:slurm=43\n"
		"net\tslurm=42\tnode2\ttcp\t40\t1007\t70\t100000\n"
		"peer\tslurm=42\tnode2\t10.0.0.1\tnode1\t40\t1007\t70\t100000\tnode1:slurm=42\n"
		"net\tslurm=43\tnode1\ttcp\t3\t30\t3\t30\n"
		"net\tslurm=43\tnode1\tudp\t6\t5050\t1\t50\n"
		"peer\tslurm=43\tnode1\t10.0.0.2\tnode2\t5\t5000\t0\t0\tnode2:slurm=43\n"
		"peer\tslurm=43\tnode1\t192.168.9.9\t-\t1\t50\t1\t50\t-\n"
		"peer\tslurm=43\tnode1\t127.0.0.1\tnode1\t3\t30\t3\t30\tnode1:slurm=42\n"
		"net\tslurm=43\tnode2\tudp\t0\t0\t5\t5000\n"
		"peer\tslurm=43\tnode2\t10.0.0.1\tnode1\t0\t0\t5\t5000\tnode1:slurm=43\n");
	ck_assert_str_eq(r.err, "");
	run_free(&r);
}
END_TEST

/* Text: a block per job, its rows by node; JSON: the same, valid (jq). */
START_TEST(jobs_text_json)
{
	struct run r;
	char path[64], cmd[512];
	int fd, st;

	jobs_run(&r, "-d0.05", NULL);	/* text: the mode option a no-op */
	assert_status(&r, 0);
	assert_has(r.out, "2 nodes, flows of 0.050 s: node1 node2\n");
	assert_before(r.out, "\nJOB slurm=42 on 2 nodes\n", "\nJOB slurm=43 on 2 nodes\n");
	assert_has(r.out, "  node1            10.0.0.2 (node2)                70        100000        40          1007  node2:slurm=42\n");
	assert_has(r.out, "  node1            192.168.9.9                      1            50         1            50  -\n");
	run_free(&r);

	jobs_run(&r, "-j", NULL);
	assert_status(&r, 0);
	assert_has(r.out, "{\"window_ms\":50,\"nodes\":[{\"node\":\"node1\",");
	if (access("/usr/bin/jq", X_OK)) {
		fprintf(stderr, "jobs_text_json: jq not installed: JSON not parsed (run tools/bootstrap)\n");
		run_free(&r);
		return;
	}
	fd = tu_tmpfile(path);
	ck_assert_int_eq(write(fd, r.out, r.out_len), (ssize_t)r.out_len);
	close(fd);
	snprintf(cmd, sizeof(cmd), "jq -e '.jobs[0].job == \"slurm=42\" and .jobs[0].slurm_job_id == 42 "
		 "and .jobs[0].total.tx_bytes == 101037 and .jobs[1].nodes[0].net[1].proto == \"udp\" "
		 "and .jobs[1].nodes[0].peers[0].peer_jobs[0] == {\"node\": \"node2\", \"job\": \"slurm=43\"} "
		 "and .jobs[1].nodes[0].peers[1].peer_node == \"-\" and (.nodes | length) == 2' < %s >/dev/null",
		 path);
	st = system(cmd);
	unlink(path);
	ck_assert_msg(st == 0, "jq refused or disagreed with:\n%s", r.out);
	run_free(&r);
}
END_TEST

/* A node down: the others' jobs all the same, its error said, exit 3. */
START_TEST(jobs_node_down)
{
	char dead[64];
	struct run r;
	int fd = listen_loopback(dead, sizeof(dead));

	close(fd);	/* nothing listens there now */
	jobs_run(&r, "-m", dead);
	assert_status(&r, 3);
	assert_has(r.err, "magnet-jobs: cannot connect to ");
	assert_has(r.out, "\terror\tcannot\\x20connect\\x20to\\x20");
	assert_has(r.out, "peer\tslurm=42\tnode2\t10.0.0.1\tnode1\t40\t1007\t70\t100000\tnode1:slurm=42\n");
	run_free(&r);
}
END_TEST

/*
 * -M: AUTH MUNGE first on every connection, with a credential of ours for
 * magnetd that a real munged decodes; refused, the server's reason and
 * exit 2; munged down, a clear reason; without -M on loopback, no AUTH.
 */
START_TEST(munge)
{
	const char *cat[] = { "-M", "--munge-socket", NULL, "-n", "1", "-s", NULL, NULL };
	const char *top[] = { "-M", "--munge-socket", NULL, "-b", "-n", "1", "-d", "0.05",
			      "-s", NULL, NULL };
	const char *plain[] = { "-n", "1", "-s", NULL, NULL };
	char *p = (char *)recbuf, line[2048];
	struct tu_munged md;
	munge_ctx_t ctx;
	struct fake f;
	struct run r;
	void *payload;
	int len;
	uid_t uid;
	gid_t gid;

	tu_munged_start(&md, NULL);
	cat[2] = top[2] = md.socket;

	fake_init(&f);
	f.data = script;
	f.data_len = add_frame(script, 0, p, enc_kprobe(p, 16, 1000000000020ULL, 102));
	run_fake(&r, &f, "magnet-cat", cat, 6);
	assert_status(&r, 0);
	ck_assert_int_eq(auth_lines(f.log, line, sizeof(line)), 1);
	ck_assert_msg(!strncmp(f.log, "AUTH MUNGE MUNGE:", 17), "%s", f.log);
	assert_has(f.log, ":\nHELLO\nPROBES\nSUBSCRIBE");
	ctx = munge_ctx_create();
	ck_assert_int_eq(munge_ctx_set(ctx, MUNGE_OPT_SOCKET, md.socket), EMUNGE_SUCCESS);
	ck_assert_int_eq(munge_decode(line + 11, ctx, &payload, &len, &uid, &gid),
			 EMUNGE_SUCCESS);
	ck_assert_int_eq(len, 7);
	ck_assert(!memcmp(payload, "magnetd", 7));
	ck_assert_uint_eq(uid, geteuid());
	ck_assert_uint_eq(gid, getegid());
	free(payload);
	munge_ctx_destroy(ctx);
	run_free(&r);

	/* Refused: the reason, nothing else asked. */
	fake_init(&f);
	f.auth = "ERR auth: replayed credential (each is taken once)\n";
	run_fake(&r, &f, "magnet-cat", cat, 6);
	assert_status(&r, 2);
	assert_has(r.err, "magnet-cat: 127.0.0.1:");
	assert_has(r.err, " refused MUNGE authentication: auth: replayed credential (each is taken once)\n");
	ck_assert_ptr_null(strstr(f.log, "HELLO"));
	run_free(&r);

	/* magnet-top: each of its connections (info, then the AGG ones). */
	top_script(&f);
	run_fake(&r, &f, "magnet-top", top, 9);
	assert_status(&r, 0);
	ck_assert_int_eq(auth_lines(f.log, line, sizeof(line)), 5);
	ck_assert_msg(!strncmp(f.log, "AUTH MUNGE MUNGE:", 17), "%s", f.log);
	run_free(&r);

	/* Loopback without -M: no credential. */
	fake_init(&f);
	f.data = script;
	f.data_len = add_frame(script, 0, p, enc_kprobe(p, 16, 1000000000020ULL, 102));
	run_fake(&r, &f, "magnet-cat", plain, 3);
	assert_status(&r, 0);
	ck_assert_int_eq(auth_lines(f.log, line, sizeof(line)), 0);
	run_free(&r);

	/* No munged: said so, and nothing sent. */
	tu_munged_stop(&md);
	fake_init(&f);
	run_fake(&r, &f, "magnet-cat", cat, 6);
	assert_status(&r, 2);
	assert_has(r.err, "magnet-cat: cannot authenticate to 127.0.0.1:");
	assert_has(r.err, ": cannot mint a MUNGE credential: munged unreachable: Failed to access");
	ck_assert_str_eq(f.log, "");
	run_free(&r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("client");
	TCase *tp = tcase_create("parsers");
	TCase *tc = tcase_create("connection");
	TCase *te = tcase_create("tools");

	tcase_add_test(tp, split_addr);
	tcase_add_test(tp, frame_kinds);
	tcase_add_test(tp, frame_partial_and_bad);
	tcase_add_test(tp, frame_every_cut);
	tcase_add_test(tp, unescape);
	tcase_add_test(tp, escape);
	tcase_add_test(tp, quote);
	tcase_add_test(tp, parse_u64);
	tcase_add_test(tp, parse_ms);
	tcase_add_test(tp, hello);
	tcase_add_test(tp, probes);
	tcase_add_test(tp, stats);
	tcase_add_test(tp, agg);
	tcase_add_test(tp, agg_net);
	tcase_add_test(tp, json_lost);
	tcase_add_test(tp, totals);
	tcase_add_test(tp, jobs_match);
	suite_add_tcase(s, tp);

	tcase_add_test(tc, conn_refused);
	tcase_add_test(tc, conn_trickle);
	tcase_add_test(tc, conn_frame_alignment);
	tcase_add_test(tc, conn_cut_and_overlong);
	tcase_add_test(tc, conn_timeout_and_refusal);
	suite_add_tcase(s, tc);

	/* Real processes, real sockets, paced reports: seconds, not ms. */
	tcase_set_timeout(te, 60);
	tcase_add_test(te, cat_text);
	tcase_add_test(te, cat_json);
	tcase_add_test(te, cat_stops);
	tcase_add_test(te, cat_new_probe_names);
	tcase_add_test(te, cat_errors);
	tcase_add_test(te, cat_raw);
	tcase_add_test(te, cat_hostile_lines);
	tcase_add_test(te, cat_hostile_json);
	tcase_add_test(te, top_hostile_lines);
	tcase_add_test(te, cat_raw_terminal);
	tcase_add_test(te, cat_usage);
	tcase_add_test(te, top_batch);
	tcase_add_test(te, top_machine);
	tcase_add_test(te, top_net_batch);
	tcase_add_test(te, top_net_machine);
	tcase_add_test(te, top_slurm);
	tcase_add_test(te, top_net_empty);
	tcase_add_test(te, top_net_off);
	tcase_add_test(te, top_stale);
	tcase_add_test(te, top_errors);
	tcase_add_test(te, top_term_q);
	tcase_add_test(te, top_term_sigterm);
	tcase_add_test(te, munge);
	tcase_add_test(te, jobs_machine);
	tcase_add_test(te, jobs_text_json);
	tcase_add_test(te, jobs_node_down);
	suite_add_tcase(s, te);
	return tu_run(s);
}
