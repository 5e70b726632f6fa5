// SPDX-License-Identifier: GPL-2.0
/*
 * daemon/expr.c: evaluation of every field and operator, precedence and
 * parentheses (against random trees with known values), every error with
 * its exact message and column, the limits, garbage that must not crash.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"
#include "testutil.h"

static const struct {
	const char *name;
	unsigned int id;
} probes[] = {
	{ "tcp_sendmsg", 16 },
	{ "vfs_read", 17 },
	{ "foo.isra.0", 18 },
	{ "tcp_sendmsg%return", 19 },
};

static int lookup(void *arg, const char *name, size_t len, unsigned int *id)
{
	size_t i;

	(*(unsigned int *)arg)++;
	for (i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		if (strlen(probes[i].name) == len &&
		    !memcmp(probes[i].name, name, len)) {
			*id = probes[i].id;
			return 0;
		}
	}
	return -ENOENT;
}

static unsigned int lookups;

/* A header-only record; the filter sees nothing else. */
#define rec(ev, c, p, t, a, s, f) ((struct magnet_record){		\
	.size = MAGNET_RECORD_HEADER, .event_id = (ev), .flags = (f),	\
	.cpu = (c), .abstract_id = (a), .timestamp = (s), .pid = (p),	\
	.tgid = (t) })

static struct mg_expr *parse_ok(const char *text)
{
	struct mg_expr_error err;
	struct mg_expr *e;
	int ret = mg_expr_parse(text, strlen(text), lookup, &lookups, &e, &err);

	ck_assert_msg(ret == 0, "'%s': %s", text, err.msg);
	ck_assert_ptr_nonnull(e);
	return e;
}

static bool match(const char *text, const struct magnet_record *r)
{
	struct mg_expr *e = parse_ok(text);
	bool m = mg_expr_match(e, r);

	mg_expr_free(e);
	return m;
}

/* Parsing fails with exactly this message, at this column. */
static void parse_err(const char *text, size_t len, size_t col,
		      const char *msg, mg_expr_lookup_fn fn)
{
	struct mg_expr_error err;
	struct mg_expr *e = (struct mg_expr *)1;
	int ret = mg_expr_parse(text, len, fn, &lookups, &e, &err);

	ck_assert_msg(ret == -EINVAL, "'%s' parsed", text);
	ck_assert_ptr_null(e);
	ck_assert_str_eq(err.msg, msg);
	ck_assert_uint_eq(err.column, col);
}

#define ERR(text, col, msg) parse_err(text, strlen(text), col, msg, lookup)

START_TEST(fields)
{
	struct magnet_record r = rec(17, 3, 4242, 4200, 0xffff888012345678ULL,
				     123456789, 0x21);

	ck_assert(match("probe == vfs_read", &r));
	ck_assert(!match("probe == tcp_sendmsg", &r));
	ck_assert(match("probe != tcp_sendmsg", &r));
	ck_assert(match("probe == 17", &r));
	ck_assert(match("probe == 0x11", &r));
	ck_assert(match("event == 17", &r));
	ck_assert(match("event >= 16", &r));
	ck_assert(match("cpu == 3", &r));
	ck_assert(match("pid == 4242", &r));
	ck_assert(match("tgid == 4200", &r));
	ck_assert(match("abstract == 0xffff888012345678", &r));
	ck_assert(match("abstract == 0XFFFF888012345678", &r));
	ck_assert(match("abstract == 18446612682375452280", &r));
	ck_assert(match("ts == 123456789", &r));
	ck_assert(match("flags == 0x21", &r));
	ck_assert(!match("cpu == 4", &r));
	ck_assert(!match("pid == 4200", &r));
	ck_assert(!match("tgid == 4242", &r));

	r.event_id = 18;
	ck_assert(match("probe == foo.isra.0", &r));
	r.event_id = 19;
	ck_assert(match("probe == \"tcp_sendmsg%return\"", &r));
	ck_assert(match("probe!=\"vfs_read\"", &r));
	/* A field wider than its record field never matches, no error. */
	ck_assert(!match("cpu == 0x100000003", &r));
}
END_TEST

START_TEST(operators)
{
	static const __u64 vals[] = { 0, 1, 1000, 0x7fffffffffffffffULL,
				      UINT64_MAX - 1, UINT64_MAX };
	static const char *const ops[] = { "==", "!=", "<", "<=", ">", ">=" };
	struct magnet_record r = rec(16, 0, 0, 0, 0, 0, 0);
	char text[96];
	unsigned int i, j, o;
	bool want;

	for (i = 0; i < 6; i++) {
		r.abstract_id = vals[i];
		for (j = 0; j < 6; j++) {
			for (o = 0; o < 6; o++) {
				__u64 a = vals[i], b = vals[j];

				want = o == 0 ? a == b : o == 1 ? a != b :
				       o == 2 ? a < b : o == 3 ? a <= b :
				       o == 4 ? a > b : a >= b;
				snprintf(text, sizeof(text), "abstract %s %llu",
					 ops[o], (unsigned long long)b);
				ck_assert_msg(match(text, &r) == want, "%s", text);
				snprintf(text, sizeof(text), "abstract%s0x%llx",
					 ops[o], (unsigned long long)b);
				ck_assert_msg(match(text, &r) == want, "%s", text);
			}
		}
	}
}
END_TEST

START_TEST(match_all)
{
	static const char *const all[] = { "", " ", "\t \t", "*", " * ", "\t*" };
	struct magnet_record r = rec(99, 7, 1, 1, 1, 1, 0);
	struct mg_expr *e;
	unsigned int i;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		e = parse_ok(all[i]);
		ck_assert_uint_eq(mg_expr_nodes(e), 1);
		ck_assert(mg_expr_match(e, &r));
		mg_expr_free(e);
	}
	ck_assert(mg_expr_match(NULL, &r));
	/* Length, not NUL, ends the text. */
	ck_assert_int_eq(mg_expr_parse("cpu == 1", 0, NULL, NULL, &e,
				       &(struct mg_expr_error){ 0 }), 0);
	ck_assert(mg_expr_match(e, &r));
	mg_expr_free(e);
	ck_assert_int_eq(mg_expr_parse("cpu == 7garbage", 8, NULL, NULL, &e,
				       &(struct mg_expr_error){ 0 }), 0);
	ck_assert(mg_expr_match(e, &r));
	mg_expr_free(e);
	mg_expr_free(NULL);
}
END_TEST

/* A: cpu == 1, B: pid == 1, C: tgid == 1, set from the bits of m. */
static const char *const prec_text[] = {
	"cpu == 1 || pid == 1 && tgid == 1",
	"cpu == 1 && pid == 1 || tgid == 1",
	"(cpu == 1 || pid == 1) && tgid == 1",
	"cpu == 1 && (pid == 1 || tgid == 1)",
	"!cpu == 1 && pid == 1",
	"!(cpu == 1 && pid == 1)",
	"!(cpu == 1) || !(pid == 1) && tgid == 1",
	"!!cpu == 1",
	"!(!(cpu == 1 || pid == 1) && !tgid == 1)",
	"((((cpu == 1))))",
	"cpu==1||pid==1||tgid==1",
	"cpu==1&&pid==1&&tgid==1",
	"\tcpu==1 ||\t( pid==1&&!tgid==1 ) ",
};

static bool prec_want(unsigned int i, bool a, bool b, bool c)
{
	switch (i) {
	case 0: return a || (b && c);
	case 1: return (a && b) || c;
	case 2: return (a || b) && c;
	case 3: return a && (b || c);
	case 4: return !a && b;
	case 5: return !(a && b);
	case 6: return !a || (!b && c);
	case 7: return a;
	case 8: return !(!(a || b) && !c);
	case 9: return a;
	case 10: return a || b || c;
	case 11: return a && b && c;
	default: return a || (b && !c);
	}
}

START_TEST(precedence)
{
	struct magnet_record r = rec(16, 0, 0, 0, 0, 0, 0);
	struct mg_expr *e = parse_ok(prec_text[_i]);
	unsigned int m;

	for (m = 0; m < 8; m++) {
		r.cpu = m & 1;
		r.pid = !!(m & 2);
		r.tgid = !!(m & 4);
		ck_assert_msg(mg_expr_match(e, &r) ==
			      prec_want(_i, m & 1, m & 2, m & 4),
			      "'%s' with %u", prec_text[_i], m);
	}
	mg_expr_free(e);
}
END_TEST

START_TEST(node_count)
{
	struct mg_expr *e = parse_ok("cpu == 1");

	ck_assert_uint_eq(mg_expr_nodes(e), 1);
	mg_expr_free(e);
	/* One n-ary node for a chain, not one per operator. */
	e = parse_ok("cpu == 1 && cpu == 2 && cpu == 3 || !cpu == 4");
	ck_assert_uint_eq(mg_expr_nodes(e), 7);	/* AND, 3, NOT, 1, OR */
	mg_expr_free(e);
}
END_TEST

static const struct {
	const char *text;
	size_t col;
	const char *msg;
} errors[] = {
	{ "cpu", 3, "expected a comparison operator at column 3" },
	{ "cpu 2", 4, "expected a comparison operator at column 4" },
	{ "cpu && pid == 1", 4, "expected a comparison operator at column 4" },
	{ "cpu ==", 6, "expected a number at column 6" },
	{ "cpu == x", 7, "expected a number at column 7" },
	{ "cpu == \"x\"", 7, "expected a number at column 7" },
	{ "probe ==", 8, "expected a probe name or number at column 8" },
	{ "probe == (", 9, "expected a probe name or number at column 9" },
	{ "bogus == 1", 0, "unknown field 'bogus' at column 0" },
	{ "CPU == 1", 0, "unknown field 'CPU' at column 0" },
	{ "probe == nosuch", 9, "unknown probe 'nosuch' at column 9" },
	{ "probe == \"\"", 9, "unknown probe '' at column 9" },
	{ "probe == \"tcp_sendmsg \"", 9,
	  "unknown probe 'tcp_sendmsg ' at column 9" },
	{ "probe < tcp_sendmsg", 8,
	  "a probe name compares only with == or != at column 8" },
	{ "probe >= \"vfs_read\"", 9,
	  "a probe name compares only with == or != at column 9" },
	{ "cpu = 1", 4, "expected '==' at column 4" },
	{ "cpu >== 1", 6, "expected '==' at column 6" },
	{ "cpu == 1 & pid == 2", 9, "expected '&&' at column 9" },
	{ "cpu == 1 | pid == 2", 9, "expected '||' at column 9" },
	{ "cpu == 1 pid == 2", 9, "expected '&&', '||' or the end at column 9" },
	{ "cpu == 1 !", 9, "expected '&&', '||' or the end at column 9" },
	{ "(cpu == 1", 9, "expected ')' at column 9" },
	{ "((cpu == 1) || pid == 2", 23, "expected ')' at column 23" },
	{ "cpu == 1)", 8, "unbalanced ')' at column 8" },
	{ "cpu == 0x", 7, "expected a hex digit at column 7" },
	{ "cpu == 0xg", 7, "expected a hex digit at column 7" },
	{ "cpu == 12ab", 7, "invalid character in number at column 7" },
	{ "cpu == 0x1fz", 7, "invalid character in number at column 7" },
	{ "cpu == 1.5", 7, "invalid character in number at column 7" },
	{ "cpu == 18446744073709551616", 7,
	  "number out of range (64 bits) at column 7" },
	{ "cpu == 99999999999999999999999", 7,
	  "number out of range (64 bits) at column 7" },
	{ "cpu == 0x10000000000000000", 7,
	  "number out of range (64 bits) at column 7" },
	{ "probe == \"tcp", 9, "unterminated string at column 9" },
	{ "cpu == 1 && ", 12, "expected a field, '!' or '(' at column 12" },
	{ "&& cpu == 1", 0, "expected a field, '!' or '(' at column 0" },
	{ "()", 1, "expected a field, '!' or '(' at column 1" },
	{ "!", 1, "expected a field, '!' or '(' at column 1" },
	{ "1 == cpu", 0, "expected a field, '!' or '(' at column 0" },
	{ "\"cpu\" == 1", 0, "expected a field, '!' or '(' at column 0" },
	{ "cpu == 1 || *", 12, "expected a field, '!' or '(' at column 12" },
	{ "* && cpu == 1", 2, "'*' must be the whole filter at column 2" },
	{ "**", 1, "'*' must be the whole filter at column 1" },
	{ "cpu == 1 @", 9, "unexpected character '@' at column 9" },
	{ "cpu == -1", 7, "unexpected character '-' at column 7" },
	{ "cpu == 1 \x01", 9, "unexpected byte 0x01 at column 9" },
	{ "cpu == 1 \xff", 9, "unexpected byte 0xff at column 9" },
	{ "cpu\n== 1", 3, "unexpected byte 0x0a at column 3" },
};

START_TEST(error_columns)
{
	parse_err(errors[_i].text, strlen(errors[_i].text), errors[_i].col,
		  errors[_i].msg, lookup);
}
END_TEST

START_TEST(error_misc)
{
	char text[128], msg[128];

	/* No lookup: every name is unknown, numbers still work. */
	parse_err("probe == vfs_read", 17, 9,
		  "unknown probe 'vfs_read' at column 9", NULL);
	/* A NUL inside the length is a byte like any other. */
	parse_err("cpu == 1\0", 9, 8, "unexpected byte 0x00 at column 8",
		  lookup);
	/* Long names are cut in the message. */
	snprintf(text, sizeof(text), "probe == %.60s", "aaaaaaaaaabbbbbbbbbbcccccccccc"
		 "ddddddddddeeeeeeeeeeffffffffff");
	snprintf(msg, sizeof(msg), "unknown probe '%.48s...' at column 9",
		 text + 9);
	ERR(text, 9, msg);
	ERR("probe == \"a\x01\"", 9, "unknown probe 'a?' at column 9");
	/* The first error wins: the bad field, not the bad number after it. */
	ERR("nope == 0x", 0, "unknown field 'nope' at column 0");
}
END_TEST

START_TEST(limits_depth)
{
	struct magnet_record r = rec(16, 1, 0, 0, 0, 0, 0);
	char text[512];
	size_t n = 0;
	unsigned int i;

	/* 32 nested parentheses parse, the 33rd is refused at its column. */
	for (i = 0; i < MG_EXPR_MAX_DEPTH; i++)
		text[n++] = '(';
	n += sprintf(text + n, "cpu == 1");
	for (i = 0; i < MG_EXPR_MAX_DEPTH; i++)
		text[n++] = ')';
	text[n] = '\0';
	ck_assert(match(text, &r));
	memmove(text + 1, text, n + 1);
	text[0] = '(';
	strcat(text, ")");
	ERR(text, 32, "filter nested too deeply (more than 32) at column 32");

	/* '!' nests too: 32 of them (an even count) are the identity. */
	memset(text, '!', 32);
	strcpy(text + 32, "cpu == 1");
	ck_assert(match(text, &r));
	memset(text, '!', 33);
	strcpy(text + 33, "cpu == 1");
	ERR(text, 32, "filter nested too deeply (more than 32) at column 32");

	/* Mixed, with spaces: 16 "!(" pairs are depth 32. */
	n = 0;
	for (i = 0; i < 16; i++)
		n += sprintf(text + n, "! ( ");
	n += sprintf(text + n, "cpu == 1");
	for (i = 0; i < 16; i++)
		n += sprintf(text + n, " )");
	ck_assert(match(text, &r));
	n = sprintf(text, "cpu == 2 || ");
	for (i = 0; i < 16; i++)
		n += sprintf(text + n, "!(");
	n += sprintf(text + n, "(cpu == 1");
	ERR(text, 12 + 32, "filter nested too deeply (more than 32) at column 44");

	/* Depth is nesting, not length: siblings at one level do not add. */
	n = 0;
	for (i = 0; i < 40; i++)
		n += sprintf(text + n, "%s(cpu == %u)", i ? "||" : "", i + 2);
	ck_assert(!match(text, &r));
}
END_TEST

START_TEST(limits_nodes)
{
	struct magnet_record r = rec(16, 255, 0, 0, 0, 0, 0);
	static char text[8192];
	struct mg_expr *e;
	size_t n = 0;
	unsigned int i;

	/* 255 comparisons and their OR: 256 nodes, the most allowed. Each
	 * term and its " || " are 14 bytes: term i starts at column 14 * i. */
	for (i = 0; i < 255; i++)
		n += sprintf(text + n, "%scpu == %3u", i ? " || " : "", i + 1);
	e = parse_ok(text);
	ck_assert_uint_eq(mg_expr_nodes(e), MG_EXPR_MAX_NODES);
	ck_assert(mg_expr_match(e, &r));	/* only the last term is true */
	r.cpu = 256;
	ck_assert(!mg_expr_match(e, &r));
	mg_expr_free(e);

	sprintf(text + n, " || cpu == 256");
	ERR(text, 14 * 255, "filter too long (more than 256 nodes) at column 3570");

	/* Operator nodes count: 128 NOT-ed comparisons and an AND. */
	n = 0;
	for (i = 0; i < 128; i++)
		n += sprintf(text + n, "%s!cpu==1", i ? "&&" : "");
	/* Term i starts at 9 * i; the NOT of term 127 is node 257. */
	ERR(text, 9 * 127, "filter too long (more than 256 nodes) at column 1143");
	e = parse_ok(strstr(text, "&&") + 2);	/* one term fewer: 255 nodes */
	ck_assert_uint_eq(mg_expr_nodes(e), 255);
	mg_expr_free(e);
}
END_TEST

START_TEST(limits_numbers)
{
	struct magnet_record r = rec(16, 0, 0, 0, UINT64_MAX, 0, 0);

	ck_assert(match("abstract == 18446744073709551615", &r));
	ck_assert(match("abstract == 0xffffffffffffffff", &r));
	ck_assert(match("abstract == 0x0000000000000000000ffffffffffffffff", &r));
	ck_assert(match("abstract == 000000000000000000000018446744073709551615", &r));
	r.abstract_id = 0;
	ck_assert(match("abstract == 0", &r));
	ck_assert(match("abstract == 0x0", &r));
	ck_assert(match("abstract == 00", &r));	/* decimal: no octal */
	r.abstract_id = 10;
	ck_assert(match("abstract == 010", &r));
	ERR("ts > 18446744073709551616", 5,
	    "number out of range (64 bits) at column 5");
	ERR("ts > 18446744073709551620", 5,
	    "number out of range (64 bits) at column 5");
}
END_TEST

START_TEST(lookup_calls)
{
	struct magnet_record r = rec(16, 0, 0, 0, 0, 0, 0);

	lookups = 0;
	ck_assert(match("probe == tcp_sendmsg || probe == 17", &r));
	ck_assert_uint_eq(lookups, 1);	/* at parse time only */
}
END_TEST

/*
 * A random valid expression with its expected value on *r: random fields,
 * operators and constants near the record's values, minimal or extra
 * parentheses and random blanks. Precedence is tested by printing an OR
 * below an AND with parentheses and never otherwise.
 */
static const char *const rfields[] = { "probe", "event", "cpu", "pid",
				       "tgid", "abstract", "ts", "flags" };
static const char *const rops[] = { "==", "!=", "<", "<=", ">", ">=" };

static void blank(char *buf, size_t *n)
{
	static const char *const b[] = { "", "", " ", "\t", "  " };

	*n += sprintf(buf + *n, "%s", b[tu_rand() % 5]);
}

static __u64 rfield(const struct magnet_record *r, unsigned int f)
{
	switch (f) {
	case 0: case 1: return r->event_id;
	case 2: return r->cpu;
	case 3: return r->pid;
	case 4: return r->tgid;
	case 5: return r->abstract_id;
	case 6: return r->timestamp;
	default: return r->flags;
	}
}

/*
 * ctx: 0 top level or inside parentheses, 1 operand of ||, 2 operand of &&,
 * 3 operand of !. Returns the value.
 */
static bool gen(char *buf, size_t *n, unsigned int depth, unsigned int ctx,
		const struct magnet_record *r)
{
	unsigned int kind = depth >= 5 ? 0 : tu_rand() % 5, k, i;
	bool v, and, paren;

	blank(buf, n);
	switch (kind) {
	case 0: case 1: {	/* comparison */
		unsigned int f = tu_rand() % 8, o = tu_rand() % 6;
		__u64 a = rfield(r, f), b = a + (tu_rand() % 3) - 1;

		if (tu_rand() % 8 == 0)
			b = tu_rand();
		if (f == 0 && o < 2 && b >= 16 && b <= 19 && tu_rand() % 2)
			*n += sprintf(buf + *n, "probe%s%s%s", rops[o],
				      tu_rand() % 2 ? " " : "",
				      (const char *[]){ "tcp_sendmsg", "vfs_read",
					"foo.isra.0", "\"tcp_sendmsg%return\"" }[b - 16]);
		else
			*n += sprintf(buf + *n, tu_rand() % 2 ? "%s %s %llu" :
				      "%s%s0x%llx", rfields[f], rops[o],
				      (unsigned long long)b);
		v = o == 0 ? a == b : o == 1 ? a != b : o == 2 ? a < b :
		    o == 3 ? a <= b : o == 4 ? a > b : a >= b;
		break;
	}
	case 2:			/* ! */
		*n += sprintf(buf + *n, "!");
		v = !gen(buf, n, depth + 1, 3, r);
		break;
	case 3:			/* && or || list */
		k = 2 + tu_rand() % 3;
		and = tu_rand() % 2;
		/* Parentheses where precedence needs them, and at random. */
		paren = (and ? ctx == 3 : ctx >= 2) || tu_rand() % 4 == 0;
		if (paren)
			*n += sprintf(buf + *n, "(");
		v = and;
		for (i = 0; i < k; i++) {
			bool x;

			if (i)
				*n += sprintf(buf + *n, and ? "&&" : "||");
			x = gen(buf, n, depth + 1, and ? 2 : 1, r);
			v = and ? v && x : v || x;
		}
		if (paren)
			*n += sprintf(buf + *n, ")");
		break;
	default:		/* parenthesised */
		*n += sprintf(buf + *n, "(");
		v = gen(buf, n, depth + 1, 0, r);
		*n += sprintf(buf + *n, ")");
		break;
	}
	blank(buf, n);
	return v;
}

START_TEST(random_trees)
{
	static char text[131072];
	struct mg_expr_error err;
	struct magnet_record r;
	struct mg_expr *e;
	unsigned int i, parsed = 0;
	size_t n;
	bool want;
	int ret;

	tu_seed(0x5eed0001);
	for (i = 0; i < 20000; i++) {
		r = rec(16 + tu_rand() % 4, tu_rand() % 8, tu_rand() % 3,
			tu_rand(), tu_rand() >> (tu_rand() % 64), tu_rand(),
			tu_rand() % 0x100);
		n = 0;
		want = gen(text, &n, 0, 0, &r);
		ret = mg_expr_parse(text, n, lookup, &lookups, &e, &err);
		/* Deep random trees may pass the limits: then it must say so. */
		if (ret) {
			tu_assert(strstr(err.msg, "more than"));
			continue;
		}
		parsed++;
		if (mg_expr_match(e, &r) != want)
			ck_abort_msg("'%s' should be %d", text, want);
		mg_expr_free(e);
	}
	ck_assert_uint_gt(parsed, 19000);
}
END_TEST

/* Garbage, biased towards the grammar's tokens so it gets deep. */
START_TEST(fuzz_garbage)
{
	static const char *const toks[] = {
		"probe", "cpu", "pid", "tgid", "abstract", "ts", "flags",
		"event", "tcp_sendmsg", "\"vfs_read\"", "\"", "==", "!=", "<",
		"<=", ">", ">=", "=", "&&", "||", "&", "|", "!", "(", ")", "*",
		"0x", "0", "12", "18446744073709551615", "99999999999999999999",
		"0xffffffffffffffff", " ", "\t", "x", ".",
	};
	struct magnet_record r = rec(16, 1, 2, 3, 4, 5, 6);
	static char text[4097];
	struct mg_expr_error err;
	struct mg_expr *e;
	unsigned int i, ok = 0;
	size_t n, len, col;
	char tail[40];
	int ret;

	tu_seed(0xbadc0ffee);
	for (i = 0; i < 100000; i++) {
		len = tu_rand() % (i % 100 ? 64 : 4096);
		n = tu_token_soup(text, len, toks, sizeof(toks) / sizeof(toks[0]), 4);
		ret = mg_expr_parse(text, n, lookup, &lookups, &e, &err);
		if (ret == 0) {
			ok++;
			mg_expr_match(e, &r);
			tu_assert_op(mg_expr_nodes(e), <=, MG_EXPR_MAX_NODES);
			mg_expr_free(e);
			continue;
		}
		tu_assert_int(ret, ==, -EINVAL);
		tu_assert_op(err.column, <=, n);
		/* Every message ends in its own column. */
		snprintf(tail, sizeof(tail), " at column %zu", err.column);
		col = strlen(err.msg);
		tu_assert_op(col, >, strlen(tail));
		tu_assert(!strcmp(err.msg + col - strlen(tail), tail));
	}
	ck_assert_uint_gt(ok, 100);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("expr");
	TCase *tc = tcase_create("expr");

	tcase_add_test(tc, fields);
	tcase_add_test(tc, operators);
	tcase_add_test(tc, match_all);
	tcase_add_loop_test(tc, precedence, 0,
			    sizeof(prec_text) / sizeof(prec_text[0]));
	tcase_add_test(tc, node_count);
	tcase_add_loop_test(tc, error_columns, 0,
			    sizeof(errors) / sizeof(errors[0]));
	tcase_add_test(tc, error_misc);
	tcase_add_test(tc, limits_depth);
	tcase_add_test(tc, limits_nodes);
	tcase_add_test(tc, limits_numbers);
	tcase_add_test(tc, lookup_calls);
	suite_add_tcase(s, tc);

	tc = tcase_create("fuzz");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, random_trees);
	tcase_add_test(tc, fuzz_garbage);
	suite_add_tcase(s, tc);

	return tu_run(s);
}
