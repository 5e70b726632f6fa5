// SPDX-License-Identifier: GPL-2.0
/*
 * lib/print.c, lib/probes.c, lib/stats.c: exact output (generic, sock and
 * raw records; who wrote them: comm, cgroup, intr; TASK lines), parsing.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "print.h"
#include "probes.h"
#include "record.h"
#include "stats.h"
#include "tasks.h"
#include "testutil.h"
#include "trace.h"

static __u64 buf64[MAGNET_RECORD_MAX / 8];
static const char table[] =
	"id\ttype\ttarget\tnargs\thits\tmissed\n"	/* tolerated header */
	"16\tkprobe\ttcp_sendmsg\t3\t100\t2\n"
	"17\tkretprobe\ttcp_sendmsg\t1\t99\t0\n"
	"\n"
	"bogus line\n"
	"18\tkprobe\tweird\"na\\me\x01\t0\n"		/* no counters */
	"19\tkprobe\tbad_nargs\t9\t0\t0\n"		/* skipped */
	"70000\tkprobe\tbad_id\t0\t0\t0\n"		/* skipped */
	"21\tkretprobe\tvfs_read\t3\t7\t0\t4000@1\n"	/* captures */
	"22\tkprobe\tcap_bad\t1\t7\t3\t0@1\n"		/* bad capture: none */
	"23\tkprobe\tcap_future\t2\t1\t2\t16@5\tfuture name\tnew column\n"
	"25\tkretprobe\tdo_x\t0\t0\t0\t-\tx_done\n"		/* named */
	"26\tkretprobe\tdo_y\t0\t0\t0\t-\t\n"		/* empty name */
	"24\tcustom\tmymod:req done\t0\t12\t0\n"		/* a module's event */
	"20\tkprobe\tlast_no_newline\t6\t1\t1";

static const struct mg_record_hdr hdr = {
	.event_id = 16,
	.cpu = 3,
	.abstract_id = 0xffff888012345678ULL,
	.timestamp = 12000000345ULL,
	.pid = 4242,
	.tgid = 4200,
	.cgroup = 4026531841U,	/* above 2^31: printed unsigned */
};

static const __u64 args[6] = { 1, 0xffffffffffffffffULL, 0, 3, 4, 5 };

/* Print the record at buf64 with o into a string. */
static char *render(const struct mg_print_opts *o)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(mg_print_record(f, o, (struct magnet_record *)buf64), 0);
	fclose(f);
	return out;
}

static void expect(const struct mg_print_opts *o, const char *want)
{
	char *got = render(o);

	ck_assert_str_eq(got, want);
	free(got);
}

static struct mg_probe_table probes;

static void setup(void)
{
	ck_assert_int_eq(mg_probes_parse(&probes, table, sizeof(table) - 1), 0);
}

static void teardown(void)
{
	mg_probes_free(&probes);
}

START_TEST(probes_parse)
{
	const struct mg_probe *p;

	ck_assert_uint_eq(probes.n, 10);
	p = mg_probes_find(&probes, 16);
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(p->type, "kprobe");
	ck_assert_str_eq(p->target, "tcp_sendmsg");
	ck_assert_uint_eq(p->nargs, 3);
	ck_assert_uint_eq(p->hits, 100);
	ck_assert_uint_eq(p->missed, 2);
	ck_assert_uint_eq(p->capture_len, 0);
	p = mg_probes_find(&probes, 17);
	ck_assert_str_eq(p->type, "kretprobe");
	p = mg_probes_find(&probes, 18);
	ck_assert_str_eq(p->target, "weird\"na\\me\x01");
	ck_assert_uint_eq(p->hits, 0);
	p = mg_probes_find(&probes, 20);
	ck_assert_str_eq(p->target, "last_no_newline");
	ck_assert_uint_eq(p->nargs, 6);
	ck_assert_ptr_null(mg_probes_find(&probes, 19));
	/* The capture column; missed stays a number next to it. */
	p = mg_probes_find(&probes, 21);
	ck_assert_str_eq(p->target, "vfs_read");
	ck_assert_uint_eq(p->missed, 0);
	ck_assert_uint_eq(p->capture_len, 4000);
	ck_assert_uint_eq(p->capture_arg, 1);
	p = mg_probes_find(&probes, 22);
	ck_assert_uint_eq(p->missed, 3);
	ck_assert_uint_eq(p->capture_len, 0);
	p = mg_probes_find(&probes, 23);
	ck_assert_uint_eq(p->missed, 2);
	ck_assert_uint_eq(p->capture_len, 16);
	ck_assert_uint_eq(p->capture_arg, 5);
	/*
	 * Names: the column after the capture's ("-" without one); without
	 * it (an older module), the defaults it gave: SYMBOL, SYMBOL%return.
	 */
	ck_assert_str_eq(p->name, "future name");
	ck_assert_str_eq(mg_probes_find(&probes, 16)->name, "tcp_sendmsg");
	ck_assert_str_eq(mg_probes_find(&probes, 17)->name, "tcp_sendmsg%return");
	ck_assert_str_eq(mg_probes_find(&probes, 17)->target, "tcp_sendmsg");
	p = mg_probes_find(&probes, 25);
	ck_assert_str_eq(p->name, "x_done");
	ck_assert_str_eq(p->target, "do_x");
	ck_assert_uint_eq(p->capture_len, 0);
	ck_assert_str_eq(mg_probes_find(&probes, 26)->name, "do_y%return");
	ck_assert_ptr_eq(mg_probes_find_name(&probes, "x_done", 6), p);
	ck_assert_ptr_eq(mg_probes_find_name(&probes, "tcp_sendmsg%return!", 18),
			 mg_probes_find(&probes, 17));
	ck_assert_ptr_null(mg_probes_find_name(&probes, "do_x", 4));
	ck_assert_ptr_null(mg_probes_find_name(&probes, "x_don", 5));
	ck_assert_str_eq(mg_event_name(&probes, 25), "x_done");
	/* Events of kernel modules: type custom, the target is the name. */
	p = mg_probes_find(&probes, 24);
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(p->type, "custom");
	ck_assert_str_eq(p->target, "mymod:req done");
	ck_assert_uint_eq(p->nargs, 0);
	ck_assert_uint_eq(p->hits, 12);
	ck_assert_uint_eq(p->capture_len, 0);
	ck_assert_str_eq(mg_event_name(&probes, 24), "mymod:req done");
	ck_assert_ptr_null(mg_probes_find(NULL, 16));
	ck_assert_str_eq(mg_event_name(&probes, 16), "tcp_sendmsg");
	ck_assert_str_eq(mg_event_name(&probes, MAGNET_EVENT_LOST), "lost");
	ck_assert_str_eq(mg_event_name(&probes, 99), "unknown");
	ck_assert_str_eq(mg_event_name(NULL, 16), "unknown");
}
END_TEST

START_TEST(probes_capture_column)
{
	static const char *const bad[] = {
		"", "4000", "@1", "4000@", "0@0", "4097@0", "1@6", "1@-1",
		"x@1", "1@1x", "-1@1", " 1@1",
	};
	struct mg_probe_table t;
	char line[64];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int n = snprintf(line, sizeof(line), "16\tkprobe\tf\t1\t5\t6\t%s\n", bad[i]);

		ck_assert_int_eq(mg_probes_parse(&t, line, n), 0);
		ck_assert_uint_eq(t.n, 1);
		ck_assert_uint_eq(t.v[0].missed, 6);
		ck_assert_msg(t.v[0].capture_len == 0, "\"%s\" parsed", bad[i]);
		mg_probes_free(&t);
	}
	ck_assert_int_eq(mg_probes_parse(&t, "16\tkprobe\tf+4\t0\t5\t6\t4096@0", 28), 0);
	ck_assert_uint_eq(t.v[0].capture_len, 4096);
	ck_assert_uint_eq(t.v[0].capture_arg, 0);
	ck_assert_str_eq(t.v[0].target, "f+4");
	mg_probes_free(&t);
}
END_TEST

START_TEST(probes_empty)
{
	struct mg_probe_table t;

	ck_assert_int_eq(mg_probes_parse(&t, "", 0), 0);
	ck_assert_uint_eq(t.n, 0);
	mg_probes_free(&t);
	/* Length bounds the text even without a NUL. */
	ck_assert_int_eq(mg_probes_parse(&t, "16\tkprobe\tf\t0\n17\tkprobe\tg\t0\n", 14), 0);
	ck_assert_uint_eq(t.n, 1);
	ck_assert_str_eq(t.v[0].target, "f");
	mg_probes_free(&t);
}
END_TEST

/* A table of n lines naming ids from..from - n + 1 (mod 2^16), "p<id>". */
static char *big_table(size_t n, unsigned int from, size_t *len)
{
	char *s = malloc(n * 32 + 1);
	size_t i, at = 0;

	ck_assert_ptr_nonnull(s);
	for (i = 0; i < n; i++) {
		unsigned int id = (from - i) & MAGNET_EVENT_MAX;

		at += sprintf(s + at, "%u\tkprobe\tp%u\t1\t0\t0\n", id, id);
	}
	*len = at;
	return s;
}

/*
 * One line per event id, in the worst order for a scan (from the top):
 * every id found, named by its line; an id repeated keeps its first name;
 * more lines than ids is no table the module writes (-E2BIG), a million
 * of them too, and a parse that costs per record what the table holds
 * would not finish here.
 */
START_TEST(probes_every_id)
{
	struct mg_probe_table t;
	const struct mg_probe *p;
	char name[16], *text;
	unsigned int id;
	size_t len;

	text = big_table(MG_PROBES_MAX, MAGNET_EVENT_MAX, &len);
	ck_assert_int_eq(mg_probes_parse(&t, text, len), 0);
	ck_assert_uint_eq(t.n, MG_PROBES_MAX);
	for (id = 0; id <= MAGNET_EVENT_MAX; id++) {
		p = mg_probes_find(&t, id);
		ck_assert_ptr_nonnull(p);
		ck_assert_uint_eq(p->id, id);
		snprintf(name, sizeof(name), "p%u", id);
		ck_assert_str_eq(p->target, name);
	}
	ck_assert_ptr_null(mg_probes_find(&t, MAGNET_EVENT_MAX + 1));
	ck_assert_ptr_eq(mg_probes_find(&t, MAGNET_EVENT_MAX), &t.v[0]);
	mg_probes_free(&t);
	free(text);

	/* One line more: an id twice, which no module writes. */
	text = big_table(MG_PROBES_MAX + 1, MAGNET_EVENT_MAX, &len);
	ck_assert_int_eq(mg_probes_parse(&t, text, len), -E2BIG);
	ck_assert_uint_eq(t.n, 0);
	ck_assert_ptr_null(mg_probes_find(&t, 16));
	free(text);
	text = big_table(1000000, 40000, &len);
	ck_assert_int_eq(mg_probes_parse(&t, text, len), -E2BIG);
	free(text);

	/* Lines that are not probes do not count: a header, blank lines. */
	text = big_table(MG_PROBES_MAX, 7, &len);
	text = realloc(text, len + 64);
	memmove(text + 11, text, len);
	memcpy(text, "id\ttype\n\n\n\n", 11);
	ck_assert_int_eq(mg_probes_parse(&t, text, len + 11), 0);
	ck_assert_uint_eq(t.n, MG_PROBES_MAX);
	mg_probes_free(&t);
	free(text);
}
END_TEST

START_TEST(probes_first_name_wins)
{
	static const char text[] =
		"17\tkprobe\tfirst\t1\t0\t0\n"
		"18\tkprobe\tb\t1\t0\t0\n"
		"17\tkretprobe\tsecond\t2\t0\t0\n"
		"bad line\n"
		"19\tkprobe\n";
	static const char more[] =
		"18\tkprobe\trenamed\t1\t0\t0\n"
		"20\tcustom\tadded\t0\t0\t0\n"
		"20\tcustom\tadded_again\t0\t0\t0\n";
	struct mg_probe_table t;
	size_t i;

	ck_assert_int_eq(mg_probes_parse(&t, text, sizeof(text) - 1), 0);
	ck_assert_uint_eq(t.n, 2);
	ck_assert_str_eq(mg_event_name(&t, 17), "first");
	ck_assert_str_eq(mg_probes_find(&t, 17)->type, "kprobe");
	ck_assert_str_eq(mg_event_name(&t, 19), "unknown");
	/* More lines: only ids the table lacks join it, at its end. */
	ck_assert_int_eq(mg_probes_parse_more(&t, more, sizeof(more) - 1), 0);
	ck_assert_uint_eq(t.n, 3);
	ck_assert_str_eq(mg_event_name(&t, 18), "b");
	ck_assert_str_eq(mg_event_name(&t, 20), "added");
	ck_assert_str_eq(t.v[2].target, "added");
	/* Many more, one at a time, as PRBS chunks come: the names stay. */
	for (i = 0; i < 30000; i++) {
		char line[64];
		int n = snprintf(line, sizeof(line), "%zu\tkprobe\tq%zu\t0\t0\t0\n",
				 21 + i, 21 + i);

		ck_assert_int_eq(mg_probes_parse_more(&t, line, n), 0);
	}
	ck_assert_uint_eq(t.n, 3 + 30000);
	ck_assert_str_eq(mg_event_name(&t, 17), "first");
	ck_assert_str_eq(mg_event_name(&t, 30020), "q30020");
	mg_probes_free(&t);

	/* A table filled in by hand (a protocol's parser), then indexed. */
	memset(&t, 0, sizeof(t));
	t.v = calloc(3, sizeof(*t.v));
	t.n = 3;
	t.v[0].id = 40;
	t.v[0].target = strdup("x");
	t.v[0].name = strdup("x");
	t.v[1].id = 30;
	t.v[1].target = strdup("y");
	t.v[1].name = strdup("y");
	t.v[2].id = 40;
	t.v[2].target = strdup("z");
	t.v[2].name = strdup("z");
	ck_assert_ptr_null(mg_probes_find(&t, 40));	/* not indexed yet */
	ck_assert_int_eq(mg_probes_index(&t), 0);
	ck_assert_str_eq(mg_event_name(&t, 40), "x");
	ck_assert_str_eq(mg_event_name(&t, 30), "y");
	t.v[1].id = MAGNET_EVENT_MAX + 1;
	ck_assert_int_eq(mg_probes_index(&t), -EINVAL);
	mg_probes_free(&t);
}
END_TEST

START_TEST(stats_parse)
{
	static const char text[] =
		"cpu\twritten\tbytes\tlost_full\tlost_too_big\tlost_nesting\toverwritten\n"
		"0\t10\t480\t1\t2\t3\t4\n"
		"7\t18446744073709551615\t0\t0\t0\t0\t0\textra\n";
	struct mg_kstats *v;
	size_t n;

	ck_assert_int_eq(mg_stats_parse(text, sizeof(text) - 1, &v, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(v[0].cpu, 0);
	ck_assert_uint_eq(v[0].written, 10);
	ck_assert_uint_eq(v[0].bytes, 480);
	ck_assert_uint_eq(v[0].lost_full, 1);
	ck_assert_uint_eq(v[0].lost_too_big, 2);
	ck_assert_uint_eq(v[0].lost_nesting, 3);
	ck_assert_uint_eq(v[0].overwritten, 4);
	ck_assert_uint_eq(mg_stats_find(v, n, 7)->written, 18446744073709551615ULL);
	ck_assert_ptr_null(mg_stats_find(v, n, 1));
	free(v);

	ck_assert_int_eq(mg_stats_parse("hdr\n0\t1\t2\n", 10, &v, &n), -EINVAL);
	ck_assert_int_eq(mg_stats_parse("0\t1\t2\t3\t4\t5\tx\n", 14, &v, &n), -EINVAL);
	ck_assert_int_eq(mg_stats_parse("hdr only\n", 9, &v, &n), 0);
	ck_assert_uint_eq(n, 0);
	free(v);
}
END_TEST

START_TEST(text_kprobe)
{
	struct mg_print_opts o = { .probes = &probes };

	mg_record_encode_kprobe(buf64, sizeof(buf64), &hdr, args, 3);
	expect(&o, "12.000000345 3 4242/4200 tcp_sendmsg(16) abstract=0xffff888012345678 args=[0x1,0xffffffffffffffff,0x0] comm=? cgroup=4026531841\n");
	mg_record_encode_kprobe(buf64, sizeof(buf64), &hdr, NULL, 0);
	expect(&o, "12.000000345 3 4242/4200 tcp_sendmsg(16) abstract=0xffff888012345678 args=[] comm=? cgroup=4026531841\n");
	/* Names come from the probe table: escaped, spaces kept. */
	{
		struct mg_record_hdr h = hdr;

		h.event_id = 18;
		mg_record_encode_kprobe(buf64, sizeof(buf64), &h, NULL, 0);
		expect(&o, "12.000000345 3 4242/4200 weird\"na\\\\me\\x01(18) abstract=0xffff888012345678 args=[] comm=? cgroup=4026531841\n");
		h.event_id = 24;
		mg_record_encode_kprobe(buf64, sizeof(buf64), &h, NULL, 0);
		expect(&o, "12.000000345 3 4242/4200 mymod:req done(24) abstract=0xffff888012345678 args=[] comm=? cgroup=4026531841\n");
	}
}
END_TEST

/* A crafted probe table: terminal escapes, C1, bytes that are not UTF-8. */
START_TEST(names_escaped)
{
	static const char evil[] =
		"16\tkprobe\t\x1b]0;pwn\x07\x1b[2J\xc2\x9b" "31m na\\me\xff\xc3\xa9\xed\xa0\x80\r\t0\n";
	struct mg_print_opts o = { 0 };
	struct mg_probe_table t;

	ck_assert_int_eq(mg_probes_parse(&t, evil, sizeof(evil) - 1), 0);
	ck_assert_uint_eq(t.n, 1);
	o.probes = &t;
	mg_record_encode_kprobe(buf64, sizeof(buf64), &hdr, NULL, 0);
	expect(&o, "12.000000345 3 4242/4200 \\x1b]0;pwn\\x07\\x1b[2J\\xc2\\x9b31m na\\\\me\\xff\xc3\xa9\\xed\\xa0\\x80\\x0d(16) abstract=0xffff888012345678 args=[] comm=? cgroup=4026531841\n");
	o.json = true;
	expect(&o, "{\"ts\":12000000345,\"cpu\":3,\"pid\":4242,\"tgid\":4200,\"comm\":null,\"cgroup\":4026531841,\"intr\":false,\"id\":16,\"event\":\"\\u001b]0;pwn\\u0007\\u001b[2J\\u009b31m na\\\\me\\u00ff\xc3\xa9\\u00ed\\u00a0\\u0080\\r\",\"symbol\":\"\\u001b]0;pwn\\u0007\\u001b[2J\\u009b31m na\\\\me\\u00ff\xc3\xa9\\u00ed\\u00a0\\u0080\\r\",\"type\":\"kprobe\",\"abstract\":\"0xffff888012345678\",\"args\":[]}\n");
	mg_probes_free(&t);
}
END_TEST

START_TEST(text_kretprobe)
{
	struct mg_print_opts o = { .probes = &probes };
	struct mg_record_hdr h = hdr;

	h.event_id = 17;
	mg_record_encode_kretprobe(buf64, sizeof(buf64), &h, -11, 1500, args, 1);
	expect(&o, "12.000000345 3 4242/4200 tcp_sendmsg%return(17) abstract=0xffff888012345678 args=[0x1] ret=-11 lat=1500ns comm=? cgroup=4026531841\n");
	h.event_id = 1234;
	mg_record_encode_kretprobe(buf64, sizeof(buf64), &h, 0, 0, NULL, 0);
	expect(&o, "12.000000345 3 4242/4200 unknown(1234) abstract=0xffff888012345678 args=[] ret=0 lat=0ns comm=? cgroup=4026531841\n");
}
END_TEST

START_TEST(text_lost)
{
	struct mg_print_opts o = { .probes = &probes };
	struct magnet_lost l = { 1, 2, 3, 4 };

	mg_record_encode_lost(buf64, sizeof(buf64), &hdr, &l);
	expect(&o, "12.000000345 3 LOST full=1 too_big=2 nesting=3 overwritten=4\n");
	o.json = true;
	expect(&o, "{\"ts\":12000000345,\"cpu\":3,\"pid\":4242,\"tgid\":4200,\"id\":1,\"event\":\"lost\",\"full\":1,\"too_big\":2,\"nesting\":3,\"overwritten\":4}\n");
}
END_TEST

START_TEST(json_probes)
{
	struct mg_print_opts o = { .probes = &probes, .json = true };
	struct mg_record_hdr h = hdr;

	mg_record_encode_kprobe(buf64, sizeof(buf64), &h, args, 2);
	expect(&o, "{\"ts\":12000000345,\"cpu\":3,\"pid\":4242,\"tgid\":4200,\"comm\":null,\"cgroup\":4026531841,\"intr\":false,\"id\":16,\"event\":\"tcp_sendmsg\",\"symbol\":\"tcp_sendmsg\",\"type\":\"kprobe\",\"abstract\":\"0xffff888012345678\",\"args\":[\"0x1\",\"0xffffffffffffffff\"]}\n");
	h.event_id = 17;
	mg_record_encode_kretprobe(buf64, sizeof(buf64), &h, -9223372036854775807LL - 1, 7, NULL, 0);
	expect(&o, "{\"ts\":12000000345,\"cpu\":3,\"pid\":4242,\"tgid\":4200,\"comm\":null,\"cgroup\":4026531841,\"intr\":false,\"id\":17,\"event\":\"tcp_sendmsg%return\",\"symbol\":\"tcp_sendmsg\",\"type\":\"kretprobe\",\"abstract\":\"0xffff888012345678\",\"args\":[],\"ret\":-9223372036854775808,\"lat_ns\":7}\n");
	/* Names come from the probe table: escape them. */
	h.event_id = 18;
	mg_record_encode_kprobe(buf64, sizeof(buf64), &h, NULL, 0);
	expect(&o, "{\"ts\":12000000345,\"cpu\":3,\"pid\":4242,\"tgid\":4200,\"comm\":null,\"cgroup\":4026531841,\"intr\":false,\"id\":18,\"event\":\"weird\\\"na\\\\me\\u0001\",\"symbol\":\"weird\\\"na\\\\me\\u0001\",\"type\":\"kprobe\",\"abstract\":\"0xffff888012345678\",\"args\":[]}\n");
}
END_TEST

/* Encode a kprobe (ret false) or kretprobe with a capture of data[0..len). */
static void encode_cap(bool ret, unsigned int nargs, const void *data,
		       unsigned int len, unsigned int arg)
{
	struct mg_record_cap cap = { .len = len, .arg = arg, .data = data };
	struct mg_record_hdr h = hdr;
	ssize_t n;

	h.event_id = ret ? 17 : 16;
	n = ret ? mg_record_encode_kretprobe_cap(buf64, sizeof(buf64), &h, 4, 99,
						 args, nargs, &cap)
		: mg_record_encode_kprobe_cap(buf64, sizeof(buf64), &h, args,
					      nargs, &cap);
	ck_assert_int_gt(n, 0);
}

START_TEST(text_capture)
{
	struct mg_print_opts o = { .probes = &probes };
	unsigned char data[4000];
	char want[512];
	unsigned int i;

	/* Printable as is, quote and backslash escaped, the rest \xNN. */
	encode_cap(false, 1, "hi \"x\"\\\x00\x7f\xff\n~", 12, 1);
	expect(&o, "12.000000345 3 4242/4200 tcp_sendmsg(16) abstract=0xffff888012345678 args=[0x1] cap=12@arg1 \"hi \\\"x\\\"\\\\\\x00\\x7f\\xff\\x0a~\" comm=? cgroup=4026531841\n");
	/* kretprobe: after ret and lat. */
	encode_cap(true, 0, "abc", 3, 5);
	expect(&o, "12.000000345 3 4242/4200 tcp_sendmsg%return(17) abstract=0xffff888012345678 args=[] ret=4 lat=99ns cap=3@arg5 \"abc\" comm=? cgroup=4026531841\n");
	/* Unreadable. */
	encode_cap(true, 2, NULL, 4000, 0);
	expect(&o, "12.000000345 3 4242/4200 tcp_sendmsg%return(17) abstract=0xffff888012345678 args=[0x1,0xffffffffffffffff] ret=4 lat=99ns cap=0@arg0 \"\" comm=? cgroup=4026531841\n");

	/* 64 bytes in full; 65 and more: the first 64, then "...". */
	for (i = 0; i < sizeof(data); i++)
		data[i] = 'a' + i % 26;
	encode_cap(false, 0, data, 64, 2);
	snprintf(want, sizeof(want), "12.000000345 3 4242/4200 tcp_sendmsg(16) abstract=0xffff888012345678 args=[] cap=64@arg2 \"%.64s\" comm=? cgroup=4026531841\n", data);
	expect(&o, want);
	encode_cap(false, 0, data, 65, 2);
	snprintf(want, sizeof(want), "12.000000345 3 4242/4200 tcp_sendmsg(16) abstract=0xffff888012345678 args=[] cap=65@arg2 \"%.64s\"... comm=? cgroup=4026531841\n", data);
	expect(&o, want);
	encode_cap(false, 6, data, 4000, 3);
	snprintf(want, sizeof(want), "12.000000345 3 4242/4200 tcp_sendmsg(16) abstract=0xffff888012345678 args=[0x1,0xffffffffffffffff,0x0,0x3,0x4,0x5] cap=4000@arg3 \"%.64s\"... comm=? cgroup=4026531841\n", data);
	expect(&o, want);
	/* Escapes count as one byte each toward the 64. */
	memset(data, 0, 70);
	encode_cap(false, 0, data, 70, 0);
	strcpy(want, "12.000000345 3 4242/4200 tcp_sendmsg(16) abstract=0xffff888012345678 args=[] cap=70@arg0 \"");
	for (i = 0; i < 64; i++)
		strcat(want, "\\x00");
	strcat(want, "\"... comm=? cgroup=4026531841\n");
	expect(&o, want);
}
END_TEST

START_TEST(json_capture)
{
	struct mg_print_opts o = { .probes = &probes, .json = true };
	unsigned char data[4000];
	char *got, *hex;
	unsigned int i;

	encode_cap(false, 1, "\x00\x01\xab\xff\"\\z", 7, 4);
	expect(&o, "{\"ts\":12000000345,\"cpu\":3,\"pid\":4242,\"tgid\":4200,\"comm\":null,\"cgroup\":4026531841,\"intr\":false,\"id\":16,\"event\":\"tcp_sendmsg\",\"symbol\":\"tcp_sendmsg\",\"type\":\"kprobe\",\"abstract\":\"0xffff888012345678\",\"args\":[\"0x1\"],\"capture\":{\"arg\":4,\"len\":7,\"hex\":\"0001abff225c7a\"}}\n");
	encode_cap(true, 0, "abc", 3, 5);
	expect(&o, "{\"ts\":12000000345,\"cpu\":3,\"pid\":4242,\"tgid\":4200,\"comm\":null,\"cgroup\":4026531841,\"intr\":false,\"id\":17,\"event\":\"tcp_sendmsg%return\",\"symbol\":\"tcp_sendmsg\",\"type\":\"kretprobe\",\"abstract\":\"0xffff888012345678\",\"args\":[],\"ret\":4,\"lat_ns\":99,\"capture\":{\"arg\":5,\"len\":3,\"hex\":\"616263\"}}\n");
	encode_cap(true, 0, NULL, 9, 1);
	expect(&o, "{\"ts\":12000000345,\"cpu\":3,\"pid\":4242,\"tgid\":4200,\"comm\":null,\"cgroup\":4026531841,\"intr\":false,\"id\":17,\"event\":\"tcp_sendmsg%return\",\"symbol\":\"tcp_sendmsg\",\"type\":\"kretprobe\",\"abstract\":\"0xffff888012345678\",\"args\":[],\"ret\":4,\"lat_ns\":99,\"capture\":{\"arg\":1,\"len\":0,\"hex\":\"\"}}\n");

	/* The full capture, every byte, however long. */
	for (i = 0; i < sizeof(data); i++)
		data[i] = i * 7;
	encode_cap(true, 6, data, 4000, 2);
	got = render(&o);
	ck_assert_ptr_nonnull(strstr(got, ",\"lat_ns\":99,\"capture\":{\"arg\":2,\"len\":4000,\"hex\":\""));
	hex = strstr(got, "\"hex\":\"") + 7;
	for (i = 0; i < sizeof(data); i++) {
		char b[3];

		snprintf(b, sizeof(b), "%02x", data[i]);
		ck_assert_msg(!memcmp(hex + 2 * i, b, 2), "byte %u", i);
	}
	ck_assert_str_eq(hex + 8000, "\"}}\n");
	free(got);
}
END_TEST

/* A sock record at buf64: family fam, addresses from text. */
static void encode_sock(__u16 fam, __u8 proto, __u8 state, const char *src,
			unsigned int sport, const char *dst, unsigned int dport,
			__u64 size)
{
	struct magnet_sock s = {
		.family = fam, .protocol = proto, .state = state,
		.sport = htons(sport), .dport = htons(dport), .size = size,
	};

	if (src) {
		ck_assert_int_eq(inet_pton(fam, src, s.saddr), 1);
		ck_assert_int_eq(inet_pton(fam, dst, s.daddr), 1);
	}
	ck_assert_int_eq(mg_record_encode_sock(buf64, sizeof(buf64), &hdr, &s), 88);
}

#define PFX "12.000000345 3 4242/4200 tcp_sendmsg(16) abstract=0xffff888012345678"
#define JPFX "{\"ts\":12000000345,\"cpu\":3,\"pid\":4242,\"tgid\":4200,\"comm\":null,\"cgroup\":4026531841,\"intr\":false,\"id\":16,\"event\":\"tcp_sendmsg\",\"symbol\":\"tcp_sendmsg\",\"type\":\"kprobe\",\"abstract\":\"0xffff888012345678\""

/* An skb record: 4 bytes of an IPv4 header caught at the network layer. */
START_TEST(text_json_skb)
{
	static const unsigned char ip[4] = { 0x45, 0x00, 0x00, 0x1c };
	struct magnet_skb k = {
		.len = 28, .caplen = 4, .ifindex = 1, .protocol = htons(0x0800),
		.direction = MAGNET_SKB_DIR_IN, .layer = MAGNET_SKB_LAYER_NETWORK,
		.sk_cgroup = 0x100000007ULL,
	};
	struct mg_print_opts o = { .probes = &probes };

	ck_assert_int_eq(mg_record_encode_skb(buf64, sizeof(buf64), &hdr, &k, ip, 8), 72);
	expect(&o, PFX " skb len=28 if=1 proto=0x0800 dir=in layer=network sk_cgroup=4294967303 cap=4 \"E\\x00\\x00\\x1c\" comm=? cgroup=4026531841\n");
	o.json = true;
	{
		char *got = render(&o);

		ck_assert_ptr_nonnull(strstr(got, ",\"skb\":{\"len\":28,\"ifindex\":1,\"protocol\":2048,"
					   "\"dir\":\"in\",\"layer\":\"network\",\"sk_cgroup\":4294967303,\"caplen\":4,\"hex\":\"4500001c\"}"));
		free(got);
	}
}
END_TEST

/* A switch record: text as ftrace's sched_switch reads, JSON whole. */
START_TEST(text_json_switch)
{
	struct magnet_switch sw = {
		.prev_pid = 4242, .prev_tgid = 4200, .next_pid = 7, .next_tgid = 7,
		.prev_state = 0x402, .next_cgroup = 9, .prev_comm = "a b",
		.next_comm = "0123456789abcdef",	/* 16 long: not terminated */
	};
	struct mg_print_opts o = { .probes = &probes };

	ck_assert_int_eq(mg_record_encode_switch(buf64, sizeof(buf64), &hdr, &sw), 104);
	expect(&o, PFX " switch prev=a\\x20b:4242/4200 state=I(1026) next=0123456789abcdef:7/7 next_cgroup=9 comm=? cgroup=4026531841\n");
	sw.prev_state = 1;
	sw.preempt = 1;
	ck_assert_int_eq(mg_record_encode_switch(buf64, sizeof(buf64), &hdr, &sw), 104);
	o.json = true;
	{
		char *got = render(&o);

		ck_assert_ptr_nonnull(strstr(got, ",\"switch\":{\"prev_comm\":\"a b\",\"prev_pid\":4242,"
					   "\"prev_tgid\":4200,\"prev_state\":1,\"state\":\"R+\",\"preempt\":true,"
					   "\"next_comm\":\"0123456789abcdef\",\"next_pid\":7,\"next_tgid\":7,"
					   "\"next_cgroup\":9}"));
		free(got);
	}
}
END_TEST

START_TEST(text_sock)
{
	struct mg_print_opts o = { .probes = &probes };

	encode_sock(AF_INET, 6, 1, "10.0.0.1", 5001, "10.0.0.2", 80, 1448);
	expect(&o, PFX " sock tcp 10.0.0.1:5001 -> 10.0.0.2:80 size=1448 state=ESTABLISHED(1) comm=? cgroup=4026531841\n");
	encode_sock(AF_INET6, 6, 10, "2001:db8::1", 80, "::ffff:192.0.2.7", 65535, 0);
	expect(&o, PFX " sock tcp [2001:db8::1]:80 -> [::ffff:192.0.2.7]:65535 size=0 state=LISTEN(10) comm=? cgroup=4026531841\n");
	encode_sock(AF_INET, 17, 7, "0.0.0.0", 0, "255.255.255.255", 53, UINT64_MAX);
	expect(&o, PFX " sock udp 0.0.0.0:0 -> 255.255.255.255:53 size=18446744073709551615 state=CLOSE(7) comm=? cgroup=4026531841\n");
	/* Other protocols by number; states the table does not know. */
	encode_sock(AF_INET6, 132, 0, "::", 1, "fe80::1:2", 2, 3);
	expect(&o, PFX " sock ipproto132 [::]:1 -> [fe80::1:2]:2 size=3 state=unknown(0) comm=? cgroup=4026531841\n");
	encode_sock(AF_INET, 0, 255, "1.2.3.4", 1, "5.6.7.8", 2, 3);
	expect(&o, PFX " sock ipproto0 1.2.3.4:1 -> 5.6.7.8:2 size=3 state=unknown(255) comm=? cgroup=4026531841\n");
	encode_sock(AF_INET, 6, 12, "1.2.3.4", 1, "5.6.7.8", 2, 3);
	expect(&o, PFX " sock tcp 1.2.3.4:1 -> 5.6.7.8:2 size=3 state=NEW_SYN_RECV(12) comm=? cgroup=4026531841\n");
	encode_sock(AF_INET, 6, 13, "1.2.3.4", 1, "5.6.7.8", 2, 3);
	expect(&o, PFX " sock tcp 1.2.3.4:1 -> 5.6.7.8:2 size=3 state=BOUND_INACTIVE(13) comm=? cgroup=4026531841\n");
	encode_sock(AF_INET, 6, 14, "1.2.3.4", 1, "5.6.7.8", 2, 3);
	expect(&o, PFX " sock tcp 1.2.3.4:1 -> 5.6.7.8:2 size=3 state=unknown(14) comm=? cgroup=4026531841\n");
	/* Not an inet socket: no addresses. */
	encode_sock(0, 0, 7, NULL, 0, NULL, 0, 4096);
	expect(&o, PFX " sock - size=4096 state=CLOSE(7) comm=? cgroup=4026531841\n");
	encode_sock(0, 0, 0, NULL, 0, NULL, 0, 0);
	expect(&o, PFX " sock - size=0 state=unknown(0) comm=? cgroup=4026531841\n");
}
END_TEST

START_TEST(json_sock)
{
	struct mg_print_opts o = { .probes = &probes, .json = true };

	encode_sock(AF_INET, 6, 1, "10.0.0.1", 5001, "10.0.0.2", 80, 1448);
	expect(&o, JPFX ",\"sock\":{\"family\":\"inet\",\"proto\":\"tcp\",\"src\":\"10.0.0.1\",\"sport\":5001,\"dst\":\"10.0.0.2\",\"dport\":80,\"size\":1448,\"state\":1}}\n");
	encode_sock(AF_INET6, 17, 7, "2001:db8::1", 443, "2001:db8:0:1::ff", 1, UINT64_MAX);
	expect(&o, JPFX ",\"sock\":{\"family\":\"inet6\",\"proto\":\"udp\",\"src\":\"2001:db8::1\",\"sport\":443,\"dst\":\"2001:db8:0:1::ff\",\"dport\":1,\"size\":18446744073709551615,\"state\":7}}\n");
	encode_sock(AF_INET, 1, 0, "1.2.3.4", 0, "5.6.7.8", 0, 0);
	expect(&o, JPFX ",\"sock\":{\"family\":\"inet\",\"proto\":\"icmp\",\"src\":\"1.2.3.4\",\"sport\":0,\"dst\":\"5.6.7.8\",\"dport\":0,\"size\":0,\"state\":0}}\n");
	encode_sock(0, 0, 7, NULL, 0, NULL, 0, 4096);
	expect(&o, JPFX ",\"sock\":{\"family\":null,\"size\":4096,\"state\":7}}\n");
	/* -w still goes after ts. */
	o.wall = true;
	expect(&o, "{\"ts\":12000000345,\"wall\":\"1970-01-01T00:00:12.000000345Z\",\"cpu\":3,\"pid\":4242,\"tgid\":4200,\"comm\":null,\"cgroup\":4026531841,\"intr\":false,\"id\":16,\"event\":\"tcp_sendmsg\",\"symbol\":\"tcp_sendmsg\",\"type\":\"kprobe\",\"abstract\":\"0xffff888012345678\",\"sock\":{\"family\":null,\"size\":4096,\"state\":7}}\n");
}
END_TEST

/* A raw record of event 24 (custom) at buf64. */
static void encode_raw(const void *data, size_t len)
{
	struct mg_record_hdr h = hdr;

	h.event_id = 24;
	ck_assert_int_gt(mg_record_encode_raw(buf64, sizeof(buf64), &h, data, len), 0);
}

#define RPFX "12.000000345 3 4242/4200 mymod:req done(24) abstract=0xffff888012345678"
#define JRPFX "{\"ts\":12000000345,\"cpu\":3,\"pid\":4242,\"tgid\":4200,\"comm\":null,\"cgroup\":4026531841,\"intr\":false,\"id\":24,\"event\":\"mymod:req done\",\"symbol\":\"mymod:req done\",\"type\":\"custom\",\"abstract\":\"0xffff888012345678\""

START_TEST(text_raw)
{
	struct mg_print_opts o = { .probes = &probes };
	unsigned char data[MAGNET_PAYLOAD_MAX - 8];
	char want[512];
	unsigned int i;

	encode_raw("hi \"x\"\\\x00\x7f\xff\n~", 12);
	expect(&o, RPFX " raw len=12 \"hi \\\"x\\\"\\\\\\x00\\x7f\\xff\\x0a~\" comm=? cgroup=4026531841\n");
	encode_raw(NULL, 0);
	expect(&o, RPFX " raw len=0 \"\" comm=? cgroup=4026531841\n");
	for (i = 0; i < sizeof(data); i++)
		data[i] = 'a' + i % 26;
	encode_raw(data, 64);
	snprintf(want, sizeof(want), RPFX " raw len=64 \"%.64s\" comm=? cgroup=4026531841\n", data);
	expect(&o, want);
	encode_raw(data, 65);
	snprintf(want, sizeof(want), RPFX " raw len=65 \"%.64s\"... comm=? cgroup=4026531841\n", data);
	expect(&o, want);
	encode_raw(data, sizeof(data));
	snprintf(want, sizeof(want), RPFX " raw len=4088 \"%.64s\"... comm=? cgroup=4026531841\n", data);
	expect(&o, want);
	/* Without a probe table: the id only. */
	o.probes = NULL;
	encode_raw("ok", 2);
	expect(&o, "12.000000345 3 4242/4200 unknown(24) abstract=0xffff888012345678 raw len=2 \"ok\" comm=? cgroup=4026531841\n");
}
END_TEST

START_TEST(json_raw)
{
	struct mg_print_opts o = { .probes = &probes, .json = true };
	unsigned char data[MAGNET_PAYLOAD_MAX - 8];
	char *got, *hex;
	unsigned int i;

	encode_raw("\x00\x01\xab\xff\"\\z", 7);
	expect(&o, JRPFX ",\"raw\":{\"len\":7,\"hex\":\"0001abff225c7a\"}}\n");
	encode_raw(NULL, 0);
	expect(&o, JRPFX ",\"raw\":{\"len\":0,\"hex\":\"\"}}\n");
	/* Every byte, however long. */
	for (i = 0; i < sizeof(data); i++)
		data[i] = i * 7;
	encode_raw(data, sizeof(data));
	got = render(&o);
	ck_assert_ptr_nonnull(strstr(got, ",\"raw\":{\"len\":4088,\"hex\":\""));
	hex = strstr(got, "\"hex\":\"") + 7;
	for (i = 0; i < sizeof(data); i++) {
		char b[3];

		snprintf(b, sizeof(b), "%02x", data[i]);
		ck_assert_msg(!memcmp(hex + 2 * i, b, 2), "byte %u", i);
	}
	ck_assert_str_eq(hex + 2 * sizeof(data), "\"}}\n");
	free(got);
}
END_TEST

/* Feed a TASK record naming pid on hdr's CPU to t. */
static void name(struct mg_tasks *t, __u32 pid, const char *comm, __u64 cg)
{
	__u64 tb[(MAGNET_RECORD_HEADER + sizeof(struct magnet_task)) / 8];
	struct mg_record_hdr h = hdr;

	h.pid = pid;
	h.abstract_id = cg;
	h.cgroup = (__u32)cg;
	ck_assert_int_gt(mg_record_encode_task(tb, sizeof(tb), &h, comm), 0);
	ck_assert_int_eq(mg_tasks_feed(t, (struct magnet_record *)tb), 1);
}

/* Who wrote a record: comm from the TASK records, cgroup, intr. */
START_TEST(attribution)
{
	struct mg_tasks *t = mg_tasks_new();
	struct mg_print_opts o = { .probes = &probes };
	struct mg_record_hdr h = hdr;

	ck_assert_ptr_nonnull(t);
	o.tasks = t;
	mg_record_encode_kprobe(buf64, sizeof(buf64), &hdr, args, 1);
	/* Not named yet: unknown. */
	expect(&o, "12.000000345 3 4242/4200 tcp_sendmsg(16) abstract=0xffff888012345678 args=[0x1] comm=? cgroup=4026531841\n");
	name(t, 4242, "my worker\x1b", 4026531841U);
	expect(&o, "12.000000345 3 4242/4200 tcp_sendmsg(16) abstract=0xffff888012345678 args=[0x1] comm=my\\x20worker\\x1b cgroup=4026531841\n");
	o.json = true;
	expect(&o, "{\"ts\":12000000345,\"cpu\":3,\"pid\":4242,\"tgid\":4200,\"comm\":\"my worker\\u001b\",\"cgroup\":4026531841,\"intr\":false,\"id\":16,\"event\":\"tcp_sendmsg\",\"symbol\":\"tcp_sendmsg\",\"type\":\"kprobe\",\"abstract\":\"0xffff888012345678\",\"args\":[\"0x1\"]}\n");
	/* In interrupt context: the interrupted task's, said so. */
	h.intr = true;
	h.cgroup = 1;
	mg_record_encode_kprobe(buf64, sizeof(buf64), &h, NULL, 0);
	expect(&o, "{\"ts\":12000000345,\"cpu\":3,\"pid\":4242,\"tgid\":4200,\"comm\":\"my worker\\u001b\",\"cgroup\":1,\"intr\":true,\"id\":16,\"event\":\"tcp_sendmsg\",\"symbol\":\"tcp_sendmsg\",\"type\":\"kprobe\",\"abstract\":\"0xffff888012345678\",\"args\":[]}\n");
	o.json = false;
	expect(&o, "12.000000345 3 4242/4200 tcp_sendmsg(16) abstract=0xffff888012345678 args=[] intr comm=my\\x20worker\\x1b cgroup=1\n");
	/* Another CPU: not named there. */
	h.cpu = 4;
	mg_record_encode_kprobe(buf64, sizeof(buf64), &h, NULL, 0);
	expect(&o, "12.000000345 4 4242/4200 tcp_sendmsg(16) abstract=0xffff888012345678 args=[] intr comm=? cgroup=1\n");
	/* 4242 + 64 takes the slot: 4242 is unknown again, never guessed. */
	name(t, 4242 + MAGNET_TASK_SLOTS, "?", 9);
	mg_record_encode_kprobe(buf64, sizeof(buf64), &hdr, NULL, 0);
	expect(&o, "12.000000345 3 4242/4200 tcp_sendmsg(16) abstract=0xffff888012345678 args=[] comm=? cgroup=4026531841\n");
	/* A thread named "?" is not an unknown one. */
	h = hdr;
	h.pid = 4242 + MAGNET_TASK_SLOTS;
	mg_record_encode_sock(buf64, sizeof(buf64), &h,
			      &(struct magnet_sock){ .size = 1 });
	expect(&o, "12.000000345 3 4306/4200 tcp_sendmsg(16) abstract=0xffff888012345678 sock - size=1 state=unknown(0) comm=\\x3f cgroup=4026531841\n");
	o.json = true;
	expect(&o, "{\"ts\":12000000345,\"cpu\":3,\"pid\":4306,\"tgid\":4200,\"comm\":\"?\",\"cgroup\":4026531841,\"intr\":false,\"id\":16,\"event\":\"tcp_sendmsg\",\"symbol\":\"tcp_sendmsg\",\"type\":\"kprobe\",\"abstract\":\"0xffff888012345678\",\"sock\":{\"family\":null,\"size\":1,\"state\":0}}\n");
	mg_tasks_free(t);
}
END_TEST

/* A TASK record's own line: the thread, its comm, its whole cgroup id. */
START_TEST(task_lines)
{
	struct mg_print_opts o = { .probes = &probes };
	struct mg_record_hdr h = hdr;

	h.abstract_id = 3ULL << 32 | 4026531841U;	/* a second generation */
	mg_record_encode_task_as(buf64, sizeof(buf64), &h, "kworker/3:1 \"x\"", 1000, 0);
	expect(&o, "12.000000345 3 TASK 4242/4200 comm=kworker/3:1\\x20\"x\" cgroup=4026531841 cgroup_id=16911433729 uid=1000 euid=0\n");
	o.json = true;
	expect(&o, "{\"ts\":12000000345,\"cpu\":3,\"pid\":4242,\"tgid\":4200,\"comm\":\"kworker/3:1 \\\"x\\\"\",\"cgroup\":4026531841,\"cgroup_id\":16911433729,\"uid\":1000,\"euid\":0,\"id\":2,\"event\":\"task\",\"type\":\"task\"}\n");
	/* 16 bytes, no NUL in the record; pid 0 is the idle task. */
	h.pid = h.tgid = 0;
	mg_record_encode_task(buf64, sizeof(buf64), &h, "0123456789abcdefgh");
	expect(&o, "{\"ts\":12000000345,\"cpu\":3,\"pid\":0,\"tgid\":0,\"comm\":\"0123456789abcdef\",\"cgroup\":4026531841,\"cgroup_id\":16911433729,\"uid\":null,\"euid\":null,\"id\":2,\"event\":\"task\",\"type\":\"task\"}\n");
	o.json = false;
	mg_record_encode_task(buf64, sizeof(buf64), &h, "?");
	expect(&o, "12.000000345 3 TASK 0/0 comm=\\x3f cgroup=4026531841 cgroup_id=16911433729\n");
}
END_TEST

START_TEST(wall_and_tsc)
{
	struct mg_print_opts o = { .probes = &probes, .wall = true };
	struct mg_trace_info info = { 0 };
	char buf[64];

	mg_format_wall(buf, sizeof(buf), 0);
	ck_assert_str_eq(buf, "1970-01-01T00:00:00.000000000Z");
	mg_format_wall(buf, sizeof(buf), 1700000000123456789ULL);
	ck_assert_str_eq(buf, "2023-11-14T22:13:20.123456789Z");

	/* Trace clock 2 s at wall 1700000000.0; the record is at 12.000000345. */
	o.realtime0 = 1700000000000000000ULL;
	o.clock0 = 2000000000ULL;
	mg_record_encode_kprobe(buf64, sizeof(buf64), &hdr, NULL, 0);
	expect(&o, "12.000000345 2023-11-14T22:13:30.000000345Z 3 4242/4200 tcp_sendmsg(16) abstract=0xffff888012345678 args=[] comm=? cgroup=4026531841\n");
	o.json = true;
	expect(&o, "{\"ts\":12000000345,\"wall\":\"2023-11-14T22:13:30.000000345Z\",\"cpu\":3,\"pid\":4242,\"tgid\":4200,\"comm\":null,\"cgroup\":4026531841,\"intr\":false,\"id\":16,\"event\":\"tcp_sendmsg\",\"symbol\":\"tcp_sendmsg\",\"type\":\"kprobe\",\"abstract\":\"0xffff888012345678\",\"args\":[]}\n");
	/* A record from before the start still maps back correctly. */
	o.json = false;
	o.clock0 = 13000000345ULL;
	expect(&o, "12.000000345 2023-11-14T22:13:19.000000000Z 3 4242/4200 tcp_sendmsg(16) abstract=0xffff888012345678 args=[] comm=? cgroup=4026531841\n");

	/* tsc without a frequency: raw cycles, no wall time. */
	snprintf(info.clock, sizeof(info.clock), "tsc");
	mg_print_opts_init(&o, &info, &probes);
	o.wall = true;
	expect(&o, "12000000345 3 4242/4200 tcp_sendmsg(16) abstract=0xffff888012345678 args=[] comm=? cgroup=4026531841\n");
	/* With tsc_khz: cycles since the start converted to ns. 3 GHz: the
	 * record is 10000000345 cycles = 3.333333448 s after the start. */
	info.tsc_khz = 3000000;
	info.start_realtime_ns = 1700000000000000000ULL;
	info.start_clock_ns = 2000000000ULL;
	mg_print_opts_init(&o, &info, &probes);
	ck_assert_uint_eq(o.tsc_khz, 3000000);
	o.wall = true;
	expect(&o, "12000000345 2023-11-14T22:13:23.333333448Z 3 4242/4200 tcp_sendmsg(16) abstract=0xffff888012345678 args=[] comm=? cgroup=4026531841\n");
	/* Before the start, too. */
	o.clock0 = 15000000345ULL;
	expect(&o, "12000000345 2023-11-14T22:13:19.000000000Z 3 4242/4200 tcp_sendmsg(16) abstract=0xffff888012345678 args=[] comm=? cgroup=4026531841\n");
	o.json = true;
	expect(&o, "{\"ts\":12000000345,\"wall\":\"2023-11-14T22:13:19.000000000Z\",\"cpu\":3,\"pid\":4242,\"tgid\":4200,\"comm\":null,\"cgroup\":4026531841,\"intr\":false,\"id\":16,\"event\":\"tcp_sendmsg\",\"symbol\":\"tcp_sendmsg\",\"type\":\"kprobe\",\"abstract\":\"0xffff888012345678\",\"args\":[]}\n");
	o.json = false;
	snprintf(info.clock, sizeof(info.clock), "mono");
	mg_print_opts_init(&o, &info, NULL);
	expect(&o, "12.000000345 3 4242/4200 unknown(16) abstract=0xffff888012345678 args=[] comm=? cgroup=4026531841\n");
}
END_TEST

START_TEST(clock_delta)
{
	struct mg_print_opts o = { 0 };

	ck_assert_int_eq(mg_print_clock_delta_ns(&o, 10, 5), -5);
	ck_assert_int_eq(mg_print_clock_delta_ns(&o, 5, 10), 5);
	ck_assert_int_eq(mg_print_clock_delta_ns(&o, 0, UINT64_MAX), -1);
	o.tsc = true;
	o.tsc_khz = 1000000;		/* 1 GHz: cycles are ns */
	ck_assert_int_eq(mg_print_clock_delta_ns(&o, 7, 1000000007), 1000000000);
	o.tsc_khz = 2500000;
	ck_assert_int_eq(mg_print_clock_delta_ns(&o, 5, 0), -2);
	ck_assert_int_eq(mg_print_clock_delta_ns(&o, 0, 5), 2);
	/* Large spans do not overflow: 2^62 cycles at 4 GHz. */
	o.tsc_khz = 4000000;
	ck_assert_int_eq(mg_print_clock_delta_ns(&o, 0, 1ULL << 62), 1ULL << 60);
	o.tsc_khz = 3000001;
	ck_assert_int_eq(mg_print_clock_delta_ns(&o, 1ULL << 63, 0),
			 -(__s64)((((1ULL << 63) / 3000001) * 1000000) +
				  ((1ULL << 63) % 3000001) * 1000000 / 3000001));
	/*
	 * 2^63 ns apart (a crafted trace's start and records): INT64_MIN
	 * either way, with no signed overflow (UBSan in make unit's
	 * sanitized run).
	 */
	o.tsc_khz = 1000000;
	ck_assert_int_eq(mg_print_clock_delta_ns(&o, 1ULL << 63, 0), INT64_MIN);
	o.tsc = false;
	ck_assert_int_eq(mg_print_clock_delta_ns(&o, 1ULL << 63, 0), INT64_MIN);
	ck_assert_int_eq(mg_print_clock_delta_ns(&o, 0, 1ULL << 63), INT64_MIN);
	ck_assert_int_eq(mg_print_clock_delta_ns(&o, UINT64_MAX, 0), 1);
	ck_assert_int_eq(mg_print_clock_delta_ns(&o, (1ULL << 63) + 1, 0),
			 INT64_MAX);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("print");
	TCase *tc = tcase_create("print");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, probes_parse);
	tcase_add_test(tc, probes_capture_column);
	tcase_add_test(tc, probes_empty);
	tcase_add_test(tc, probes_every_id);
	tcase_add_test(tc, probes_first_name_wins);
	tcase_add_test(tc, stats_parse);
	tcase_add_test(tc, text_kprobe);
	tcase_add_test(tc, names_escaped);
	tcase_add_test(tc, text_kretprobe);
	tcase_add_test(tc, text_lost);
	tcase_add_test(tc, json_probes);
	tcase_add_test(tc, text_capture);
	tcase_add_test(tc, json_capture);
	tcase_add_test(tc, text_sock);
	tcase_add_test(tc, text_json_skb);
	tcase_add_test(tc, text_json_switch);
	tcase_add_test(tc, json_sock);
	tcase_add_test(tc, text_raw);
	tcase_add_test(tc, json_raw);
	tcase_add_test(tc, attribution);
	tcase_add_test(tc, task_lines);
	tcase_add_test(tc, wall_and_tsc);
	tcase_add_test(tc, clock_delta);
	suite_add_tcase(s, tc);

	return tu_run(s);
}
