// SPDX-License-Identifier: GPL-2.0
/*
 * lib/escape.c. A JSON string is valid JSON whatever the bytes, and says
 * what they were: checked by a strict parser written here from RFC 8259
 * and RFC 3629's table (not from lib/util.c's decoder), and by python3's
 * json module when there is one. A text escape holds nothing a terminal
 * obeys and undoes to the bytes.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "escape.h"
#include "testutil.h"

#define MAXCP	256

/*
 * RFC 3629's well-formed sequences: the length of the one at s (len bytes
 * left) with *cp, or 0.
 */
static size_t wf_utf8(const unsigned char *s, size_t len, unsigned int *cp)
{
	static const struct {
		unsigned char lo, hi;		/* first byte */
		unsigned char lo1, hi1;		/* second byte */
		size_t n;
	} t[] = {
		{ 0x00, 0x7f, 0, 0, 1 },
		{ 0xc2, 0xdf, 0x80, 0xbf, 2 },
		{ 0xe0, 0xe0, 0xa0, 0xbf, 3 },
		{ 0xe1, 0xec, 0x80, 0xbf, 3 },
		{ 0xed, 0xed, 0x80, 0x9f, 3 },
		{ 0xee, 0xef, 0x80, 0xbf, 3 },
		{ 0xf0, 0xf0, 0x90, 0xbf, 4 },
		{ 0xf1, 0xf3, 0x80, 0xbf, 4 },
		{ 0xf4, 0xf4, 0x80, 0x8f, 4 },
	};
	static const unsigned char lead_bits[] = { 0, 0x7f, 0x1f, 0x0f, 0x07 };
	size_t i, k;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (s[0] < t[i].lo || s[0] > t[i].hi)
			continue;
		if (t[i].n > len)
			return 0;
		if (t[i].n > 1 && (s[1] < t[i].lo1 || s[1] > t[i].hi1))
			return 0;
		*cp = s[0] & lead_bits[t[i].n];
		for (k = 1; k < t[i].n; k++) {
			if ((s[k] & 0xc0) != 0x80)
				return 0;
			*cp = *cp << 6 | (s[k] & 0x3f);
		}
		return t[i].n;
	}
	return 0;
}

/* What a JSON string of s must decode to: characters, bad bytes as U+00XX. */
static size_t model(const unsigned char *s, size_t len, unsigned int *out)
{
	size_t k = 0, n;

	while (len) {
		n = wf_utf8(s, len, &out[k]);
		if (!n) {
			out[k] = *s;
			n = 1;
		}
		k++;
		s += n;
		len -= n;
	}
	return k;
}

static int hex4(const unsigned char *p, const unsigned char *end)
{
	int v = 0, i;

	if (end - p < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		unsigned char c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

/*
 * RFC 8259, strictly, plus what mg_json_write() promises: the whole of j
 * is one string; no raw control, DEL, C1, U+2028/9; no lone surrogate
 * escape. Its code points into out; the count, or -1 with *why.
 */
static long json_parse(const char *js, size_t jlen, unsigned int *out,
		       const char **why)
{
	const unsigned char *p = (const unsigned char *)js, *end = p + jlen;
	long k = 0;

#define FAIL(w)	do { *why = (w); return -1; } while (0)
	if (p == end || *p++ != '"')
		FAIL("no opening quote");
	for (;;) {
		unsigned int cp;
		int v, lo;
		size_t n;

		if (p == end)
			FAIL("unterminated");
		if (*p == '"')
			break;
		if (k == MAXCP)
			FAIL("too long");
		if (*p != '\\') {
			n = wf_utf8(p, end - p, &cp);
			if (!n)
				FAIL("raw bytes that are not UTF-8");
			if (cp < 0x20)
				FAIL("raw control character");
			if ((cp >= 0x7f && cp < 0xa0) || cp == 0x2028 || cp == 0x2029)
				FAIL("raw DEL, C1 control or U+2028/9");
			p += n;
			out[k++] = cp;
			continue;
		}
		if (++p == end)
			FAIL("escape at the end");
		switch (*p++) {
		case '"': cp = '"'; break;
		case '\\': cp = '\\'; break;
		case '/': cp = '/'; break;
		case 'b': cp = '\b'; break;
		case 'f': cp = '\f'; break;
		case 'n': cp = '\n'; break;
		case 'r': cp = '\r'; break;
		case 't': cp = '\t'; break;
		case 'u':
			v = hex4(p, end);
			if (v < 0)
				FAIL("bad \\u");
			p += 4;
			if (v >= 0xdc00 && v <= 0xdfff)
				FAIL("lone low surrogate");
			if (v >= 0xd800 && v <= 0xdbff) {
				if (end - p < 2 || p[0] != '\\' || p[1] != 'u')
					FAIL("lone high surrogate");
				lo = hex4(p + 2, end);
				if (lo < 0xdc00 || lo > 0xdfff)
					FAIL("lone high surrogate");
				p += 6;
				v = 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
			}
			cp = v;
			break;
		default:
			FAIL("unknown escape");
		}
		out[k++] = cp;
	}
	if (++p != end)
		FAIL("bytes after the closing quote");
#undef FAIL
	return k;
}

/* mg_json_write() of s into a malloc'd string; *len its length. */
static char *json_of(const void *s, size_t slen, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	tu_assert(f);
	mg_json_write(f, s, slen);
	tu_assert(!fclose(f));
	return buf;
}

/* The JSON of s must parse, and decode to the model's code points. */
static void check_json(const void *s, size_t slen, const char *j, size_t jlen)
{
	unsigned int want[MAXCP], got[MAXCP];
	const char *why = NULL;
	size_t nw = model(s, slen, want);
	long n = json_parse(j, jlen, got, &why);
	size_t i;

	if (n < 0)
		ck_abort_msg("%s: %.*s", why, (int)jlen, j);
	tu_assert_op((size_t)n, ==, nw);
	for (i = 0; i < nw; i++)
		tu_assert_op(got[i], ==, want[i]);
}

static const struct {
	const char *in;
	size_t len;		/* 0: strlen(in) */
	const char *want;
} json_cases[] = {
	{ "", 0, "\"\"" },
	{ "tcp_sendmsg", 0, "\"tcp_sendmsg\"" },
	{ "q\"b\\s/", 0, "\"q\\\"b\\\\s/\"" },
	/* Controls: the short escapes, then \u00XX; DEL too. */
	{ "\b\f\n\r\t", 0, "\"\\b\\f\\n\\r\\t\"" },
	{ "\x01\x1b[2J\x1f\x7f", 0, "\"\\u0001\\u001b[2J\\u001f\\u007f\"" },
	{ "a\0b", 3, "\"a\\u0000b\"" },
	/* Valid UTF-8 as it is: 2, 3 and 4 bytes, the edges. */
	{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 0,
	  "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"" },
	{ "\xc2\xa0\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf", 0,
	  "\"\xc2\xa0\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf\"" },
	/* C1 controls and the JavaScript line ends: escaped, same code points. */
	{ "\xc2\x80\xc2\x85\xc2\x9b\xc2\x9f", 0, "\"\\u0080\\u0085\\u009b\\u009f\"" },
	{ "\xe2\x80\xa8\xe2\x80\xa9", 0, "\"\\u2028\\u2029\"" },
	/* Stray bytes: continuation bytes, 0xF5-0xFF. */
	{ "\x80\xbf", 0, "\"\\u0080\\u00bf\"" },
	{ "\xf5\xf8\xfe\xff", 0, "\"\\u00f5\\u00f8\\u00fe\\u00ff\"" },
	/* Overlong forms, of '/' and NUL among them. */
	{ "\xc0\xaf", 0, "\"\\u00c0\\u00af\"" },
	{ "\xc0\x80", 0, "\"\\u00c0\\u0080\"" },
	{ "\xc1\xbf", 0, "\"\\u00c1\\u00bf\"" },
	{ "\xe0\x80\xaf", 0, "\"\\u00e0\\u0080\\u00af\"" },
	{ "\xe0\x9f\xbf", 0, "\"\\u00e0\\u009f\\u00bf\"" },
	{ "\xf0\x80\x80\xaf", 0, "\"\\u00f0\\u0080\\u0080\\u00af\"" },
	{ "\xf0\x8f\xbf\xbf", 0, "\"\\u00f0\\u008f\\u00bf\\u00bf\"" },
	/* Surrogates, alone and as a CESU-8 pair. */
	{ "\xed\xa0\x80", 0, "\"\\u00ed\\u00a0\\u0080\"" },
	{ "\xed\xbf\xbf", 0, "\"\\u00ed\\u00bf\\u00bf\"" },
	{ "\xed\xa0\xbd\xed\xb8\x80", 0,
	  "\"\\u00ed\\u00a0\\u00bd\\u00ed\\u00b8\\u0080\"" },
	{ "\xed\x9f\xbf", 0, "\"\xed\x9f\xbf\"" },		/* U+D7FF is fine */
	/* Past U+10FFFF. */
	{ "\xf4\x90\x80\x80", 0, "\"\\u00f4\\u0090\\u0080\\u0080\"" },
	/* Truncated: at the end, before ASCII, before a valid character. */
	{ "\xc3", 0, "\"\\u00c3\"" },
	{ "\xe2\x82", 0, "\"\\u00e2\\u0082\"" },
	{ "\xf0\x9f\x98", 0, "\"\\u00f0\\u009f\\u0098\"" },
	{ "\xe2\x82z", 0, "\"\\u00e2\\u0082z\"" },
	{ "\xe2\xc3\xa9", 0, "\"\\u00e2\xc3\xa9\"" },
	{ "\xf0\x9f\x98\"", 0, "\"\\u00f0\\u009f\\u0098\\\"\"" },
	/* Cut by len: the bytes beyond are not looked at. */
	{ "\xe2\x82\xac", 2, "\"\\u00e2\\u0082\"" },
	{ "\xf0\x9f\x98\x80", 3, "\"\\u00f0\\u009f\\u0098\"" },
	{ "x\xc3\xa9", 2, "\"x\\u00c3\"" },
};

#define NCASES	(sizeof(json_cases) / sizeof(json_cases[0]))

static size_t case_len(size_t i)
{
	return json_cases[i].len ? json_cases[i].len : strlen(json_cases[i].in);
}

START_TEST(json_exact)
{
	size_t i, len;

	for (i = 0; i < NCASES; i++) {
		char *j = json_of(json_cases[i].in, case_len(i), &len);

		ck_assert_msg(!strcmp(j, json_cases[i].want),
			      "case %zu: got %s, want %s", i, j, json_cases[i].want);
		check_json(json_cases[i].in, case_len(i), j, len);
		free(j);
	}
	/* The NUL-terminated form is the same writer. */
	{
		char *buf = NULL;
		size_t blen;
		FILE *f = open_memstream(&buf, &blen);

		mg_json_string(f, "a\"\xff");
		fclose(f);
		ck_assert_str_eq(buf, "\"a\\\"\\u00ff\"");
		free(buf);
	}
}
END_TEST

/* Random bytes, biased towards UTF-8's lead and continuation bytes. */
static size_t random_bytes(unsigned char *s, size_t max)
{
	static const unsigned char pick[] = {
		'a', '"', '\\', 0x00, 0x1b, 0x7f, 0x80, 0x9f, 0xa0, 0xbf,
		0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe2, 0xed, 0xef, 0xf0, 0xf4,
		0xf5, 0xff,
	};
	size_t n = tu_rand() % (max + 1), i;

	for (i = 0; i < n; i++)
		s[i] = tu_rand() % 2 ? pick[tu_rand() % sizeof(pick)] : tu_rand();
	return n;
}

START_TEST(json_random)
{
	unsigned char s[48];
	size_t n, len;
	int i;

	tu_seed(7);
	for (i = 0; i < 20000; i++) {
		char *j;

		n = random_bytes(s, sizeof(s));
		j = json_of(s, n, &len);
		check_json(s, n, j, len);
		free(j);
	}
}
END_TEST

/* An independent parser: python3's json, on every case and random ones. */
START_TEST(json_python)
{
	char path[64], cmd[256];
	unsigned char s[48];
	size_t i, n;
	int fd, st;
	FILE *f;

	if (system("command -v python3 >/dev/null 2>&1")) {
		printf("test_escape: skip json_python: no python3\n");
		return;
	}
	fd = tu_tmpfile(path);
	f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	tu_seed(11);
	fputc('[', f);
	for (i = 0; i < NCASES + 2000; i++) {
		if (i)
			fputc(',', f);
		if (i < NCASES) {
			mg_json_write(f, json_cases[i].in, case_len(i));
		} else {
			n = random_bytes(s, sizeof(s));
			mg_json_write(f, s, n);
		}
	}
	fputs("]\n", f);
	ck_assert_int_eq(fclose(f), 0);
	/* Read as UTF-8, strictly; each element a str; as many as written. */
	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import json, sys\n"
		 "v = json.load(open(sys.argv[1], encoding=\"utf-8\", errors=\"strict\"))\n"
		 "assert len(v) == %zu and all(isinstance(x, str) for x in v)' %s",
		 NCASES + 2000, path);
	st = system(cmd);
	unlink(path);
	ck_assert_msg(st == 0, "python3 refused the JSON (status %d)", st);
}
END_TEST

/* Undo a text escape: \\ and \xNN. Length, or -1 if it is not one. */
static long unescape(const char *e, unsigned char *out)
{
	long k = 0;

	while (*e) {
		unsigned int v;

		if (*e != '\\') {
			out[k++] = *e++;
			continue;
		}
		if (e[1] == '\\') {
			out[k++] = '\\';
			e += 2;
		} else if (e[1] == 'x' && sscanf(e + 2, "%2x", &v) == 1 &&
			   e[2] && e[3]) {
			out[k++] = v;
			e += 4;
		} else {
			return -1;
		}
	}
	return k;
}

/* Nothing a terminal obeys: valid UTF-8, no C0, DEL or C1. */
static void check_inert(const char *e, unsigned int flags)
{
	const unsigned char *p = (const unsigned char *)e;
	size_t len = strlen(e), n;
	unsigned int cp;

	while (len) {
		n = wf_utf8(p, len, &cp);
		if (!n)
			ck_abort_msg("escape not UTF-8: %s", e);
		if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0))
			ck_abort_msg("control U+%04X in escape %s", cp, e);
		if ((flags & MG_ESC_SPACE) && cp == ' ')
			ck_abort_msg("space in a word: %s", e);
		p += n;
		len -= n;
	}
}

START_TEST(text_exact)
{
	static const struct {
		const char *in, *word, *text;	/* MG_ESC_SPACE, 0 */
	} v[] = {
		{ "nginx", "nginx", "nginx" },
		{ "a b", "a\\x20b", "a b" },
		{ "t\tx\n", "t\\x09x\\x0a", "t\\x09x\\x0a" },
		{ "back\\", "back\\\\", "back\\\\" },
		{ "\x1b[2J\x1b]0;t\x07", "\\x1b[2J\\x1b]0;t\\x07", "\\x1b[2J\\x1b]0;t\\x07" },
		{ "\x7f", "\\x7f", "\\x7f" },
		{ "caf\xc3\xa9 \xe2\x82\xac", "caf\xc3\xa9\\x20\xe2\x82\xac",
		  "caf\xc3\xa9 \xe2\x82\xac" },
		{ "\xc2\x9b" "1m", "\\xc2\\x9b1m", "\\xc2\\x9b1m" },	/* C1 CSI */
		{ "\xff\xfe\xc3", "\\xff\\xfe\\xc3", "\\xff\\xfe\\xc3" },
		{ "\xc0\xaf\xed\xa0\x80", "\\xc0\\xaf\\xed\\xa0\\x80",
		  "\\xc0\\xaf\\xed\\xa0\\x80" },
		{ "\xe2\x82z", "\\xe2\\x82z", "\\xe2\\x82z" },
		{ "q\"", "q\"", "q\"" },
	};
	char out[64], *buf;
	size_t i, len;
	FILE *f;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		ck_assert_str_eq(mg_escape(out, sizeof(out), v[i].in, MG_ESC_SPACE),
				 v[i].word);
		ck_assert_str_eq(mg_escape(out, sizeof(out), v[i].in, 0), v[i].text);
		buf = NULL;
		f = open_memstream(&buf, &len);
		mg_escape_write(f, v[i].in, 0);
		fclose(f);
		ck_assert_str_eq(buf, v[i].text);
		free(buf);
	}
	/* Cut to fit, whole characters and escapes only. */
	ck_assert_str_eq(mg_escape(out, 6, "ab\x01xyz", 0), "ab");
	ck_assert_str_eq(mg_escape(out, 7, "ab\x01xyz", 0), "ab\\x01");
	ck_assert_str_eq(mg_escape(out, 4, "a\xc3\xa9z", 0), "a\xc3\xa9");
	ck_assert_str_eq(mg_escape(out, 3, "a\xc3\xa9z", 0), "a");
	ck_assert_str_eq(mg_escape(out, 1, "abc", 0), "");
}
END_TEST

START_TEST(text_random)
{
	unsigned char s[48], back[48];
	char e[4 * 48 + 1], cut[4 * 48 + 1], *buf;
	unsigned int flags;
	size_t n, size, len;
	int i;
	FILE *f;

	tu_seed(13);
	for (i = 0; i < 20000; i++) {
		n = random_bytes(s, sizeof(s) - 1);
		/* NUL-terminated input: a NUL ends it. */
		s[n] = '\0';
		n = strlen((char *)s);
		flags = i % 2 ? MG_ESC_SPACE : 0;
		mg_escape(e, sizeof(e), (char *)s, flags);
		check_inert(e, flags);
		tu_assert_int(unescape(e, back), ==, (long)n);
		tu_assert(!memcmp(back, s, n));
		/* The stream form is the same. */
		buf = NULL;
		f = open_memstream(&buf, &len);
		mg_escape_write(f, (char *)s, flags);
		fclose(f);
		tu_assert(!strcmp(buf, e));
		free(buf);
		/* A cut one is a prefix that still undoes. */
		size = 1 + tu_rand() % (strlen(e) + 1);
		mg_escape(cut, size, (char *)s, flags);
		tu_assert_op(strlen(cut), <, size);
		tu_assert(!strncmp(cut, e, strlen(cut)));
		tu_assert_int(unescape(cut, back), >=, 0);
		/* ... as long as fits: the next piece (4 bytes at most) not. */
		if (strlen(cut) < strlen(e))
			tu_assert_op(strlen(cut) + 4, >=, size);
	}
}
END_TEST

/*
 * Bytes with NULs in them (a server's line): every byte stands for itself,
 * NUL included, and the return says how many fitted.
 */
START_TEST(text_mem)
{
	static const char in[] = "ERR \x1b[31m\0x\x9b" "2J\xc2\x9b\x7f caf\xc3\xa9";
	char out[128];

	ck_assert_uint_eq(mg_escape_mem(out, sizeof(out), in, sizeof(in) - 1, 0),
			  sizeof(in) - 1);
	ck_assert_str_eq(out, "ERR \\x1b[31m\\x00x\\x9b2J\\xc2\\x9b\\x7f caf\xc3\xa9");
	ck_assert_uint_eq(mg_escape_mem(out, 8, in, sizeof(in) - 1, 0), 4);
	ck_assert_str_eq(out, "ERR ");
	ck_assert_uint_eq(mg_escape_mem(out, 9, in, sizeof(in) - 1, 0), 5);
	ck_assert_str_eq(out, "ERR \\x1b");
	ck_assert_uint_eq(mg_escape_mem(out, 9, in, 0, 0), 0);
	ck_assert_str_eq(out, "");
	ck_assert_uint_eq(mg_escape_mem(out, 0, in, 3, 0), 0);
	/* A sequence cut by len is bytes, not a character. */
	ck_assert_uint_eq(mg_escape_mem(out, sizeof(out), "a\xc3\xa9", 2, 0), 2);
	ck_assert_str_eq(out, "a\\xc3");
}
END_TEST

/*
 * What a terminal only shows: printable ASCII and UTF-8 from U+00A0, up
 * to the first byte it would obey or that is not UTF-8.
 */
START_TEST(text_inert)
{
	static const struct {
		const char *s;
		size_t len, inert;
	} v[] = {
		{ "{\"a\":\"b\\u001b\"}", 15, 15 },
		{ "caf\xc3\xa9 \xe2\x80\xa8", 9, 9 },
		{ "ab\x1b[2J", 6, 2 },
		{ "ab\x9b" "2J", 5, 2 },		/* a lone 8-bit CSI */
		{ "ab\xc2\x9b" "2J", 6, 2 },	/* CSI as UTF-8 (C1) */
		{ "ab\x7f", 3, 2 },
		{ "ab\x00" "c", 4, 2 },
		{ "ab\t", 3, 2 },
		{ "ab\xc3", 3, 2 },		/* cut */
		{ "ab\xed\xa0\x80", 5, 2 },	/* a surrogate */
		{ "ab\xc0\xaf", 4, 2 },		/* overlong */
		{ "", 0, 0 },
	};
	unsigned char s[48];
	char e[4 * 48 + 1];
	size_t i, n;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		ck_assert_msg(mg_text_inert(v[i].s, v[i].len) == v[i].inert,
			      "case %zu: %zu", i, mg_text_inert(v[i].s, v[i].len));
	/* Whatever the bytes: a JSON string and a text escape are inert. */
	tu_seed(17);
	for (i = 0; i < 20000; i++) {
		char *buf = NULL;
		size_t len;
		FILE *f = open_memstream(&buf, &len);

		n = random_bytes(s, sizeof(s));
		mg_json_write(f, s, n);
		fclose(f);
		tu_assert_op(mg_text_inert(buf, len), ==, len);
		free(buf);
		mg_escape_mem(e, sizeof(e), s, n, i % 2 ? MG_ESC_SPACE : 0);
		tu_assert_op(mg_text_inert(e, strlen(e)), ==, strlen(e));
		/* ... and inert is what the checker here calls so. */
		n = mg_text_inert(s, n);
		memcpy(e, s, n);
		e[n] = '\0';
		check_inert(e, 0);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("escape");
	TCase *tc = tcase_create("escape");

	tcase_add_test(tc, json_exact);
	tcase_add_test(tc, json_random);
	tcase_add_test(tc, json_python);
	tcase_add_test(tc, text_exact);
	tcase_add_test(tc, text_random);
	tcase_add_test(tc, text_mem);
	tcase_add_test(tc, text_inert);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
