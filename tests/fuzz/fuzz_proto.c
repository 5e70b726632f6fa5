// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for magnetd's client protocol (docs/protocol.md): what
 * a client sends reaches these parsers before anything else, so every byte
 * sequence must be safe and get the documented answer.
 *
 * The input is a client's byte stream:
 *
 *   1. line assembly (mg_linebuf_take) with the stream cut into reads in
 *      several ways (one read, byte by byte up to 2 KiB, reads that start
 *      at a '\n', pseudo-random reads, reads around the line limit): the
 *      lines and too-long reports must be those of a reference model,
 *      whatever the cuts;
 *   2. every line through mg_proto_parse, checked against a model of the
 *      command grammar (kind, FORMAT, AGG key and interval, the filter's
 *      place in the line), and error replies "ERR ..." of one printable line
 *      under MG_PROTO_ERR_MAX;
 *   3. a SUBSCRIBE's filter (and the whole input, as a filter) through
 *      mg_expr_parse, against an independent parser-evaluator written from
 *      the grammar: accepted iff it accepts, the same node count, and
 *      mg_expr_match equal to it on a few records; errors at a column
 *      within the filter and ending in it; "!(F)" the exact complement;
 *   4. mg_proto_parse_interval on every line and on the input's first
 *      word, against a model.
 *
 * Any broken invariant abort()s, so libFuzzer reports it with the input.
 * Everything the parsers read is copied to a buffer of exactly its length
 * first, so that AddressSanitizer sees any read past it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "expr.h"
#include "proto.h"

#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "fuzz_proto: %s:%d: %s\n",	\
				__FILE__, __LINE__, #cond);		\
			abort();					\
		}							\
	} while (0)

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* An exact-size heap copy, so reads past len are ASan's to catch. */
static char *dup_exact(const void *s, size_t len)
{
	char *p = malloc(len ? len : 1);

	CHECK(p);
	memcpy(p, s, len);
	return p;
}

static bool printable_ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

/* ---- probe names the filters may use ---- */

static const struct {
	const char *name;
	unsigned int id;
} probes[] = {
	{ "tcp_sendmsg", 16 },
	{ "vfs_read", 17 },
	{ "tcp_sendmsg%return", 18 },
	{ "foo.isra.0", 19 },
	{ "format", 20 },
	{ "vfs_write", 0xffff },
};

/* The text being parsed: lookups must name bytes inside it. */
static const char *cur_text;
static size_t cur_len;

static int lookup(void *arg, const char *name, size_t len, unsigned int *id)
{
	size_t i;

	CHECK(arg == &cur_text);
	CHECK(name >= cur_text && len <= cur_len &&
	      (size_t)(name - cur_text) <= cur_len - len);
	for (i = 0; i < ARRAY_SIZE(probes); i++) {
		if (strlen(probes[i].name) == len &&
		    !memcmp(probes[i].name, name, len)) {
			*id = probes[i].id;
			return 0;
		}
	}
	return -ENOENT;
}

/* ---- records the filters are evaluated on ---- */

#define NREC	6
static struct magnet_record recs[NREC];

static void make_records(const uint8_t *d, size_t n)
{
	struct magnet_record *r;
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	memset(recs, 0, sizeof(recs));
	r = &recs[1];			/* every field at its maximum */
	r->event_id = 0xffff;
	r->flags = 0xffff;
	r->cpu = UINT32_MAX;
	r->abstract_id = UINT64_MAX;
	r->timestamp = UINT64_MAX;
	r->pid = UINT32_MAX;
	r->tgid = UINT32_MAX;
	r = &recs[2];			/* the protocol document's examples */
	r->event_id = 16;
	r->cpu = 2;
	r->pid = 1234;
	r->tgid = 1234;
	r->abstract_id = 0x1000;
	r->timestamp = 1000000000;
	r->flags = 0x31;
	r = &recs[3];
	r->event_id = 17;
	r->cpu = 1;
	r->pid = 1;
	r->tgid = 1;
	r->abstract_id = 0xffff888000001000ULL;
	r->timestamp = 12000000345ULL;
	r->flags = 0x21;
	r = &recs[4];			/* a LOST record */
	r->event_id = MAGNET_EVENT_LOST;
	r->cpu = 3;
	r->timestamp = 5;
	/* One from the input, so that the fuzzer may steer constants to it. */
	for (i = 0; i < n; i++)
		h = (h ^ d[i]) * 0x100000001b3ULL;
	r = &recs[5];
	r->event_id = 16 + (h & 3);
	r->flags = h >> 8;
	r->cpu = (h >> 16) & 7;
	r->pid = h >> 24;
	r->tgid = h >> 32;
	r->abstract_id = h;
	r->timestamp = h >> (h & 63);
	for (r = recs; r < recs + NREC; r++)
		r->size = MAGNET_RECORD_HEADER;
}

/* ---- the filter grammar, independently: parse and evaluate at once ---- */

enum rtok {
	R_END, R_NUM, R_NAME, R_STR, R_LP, R_RP, R_NOT, R_AND, R_OR, R_STAR,
	R_OP, R_ERR,
};

enum rop { R_EQ, R_NE, R_LT, R_LE, R_GT, R_GE };

struct ref {
	const char *s;
	size_t len, pos;
	enum rtok tok;
	enum rop op;
	uint64_t num;
	const char *name;	/* R_NAME, R_STR */
	size_t name_len;
	size_t tok_pos;		/* where the current token starts */
	unsigned int depth, nodes;
	bool err;
	size_t err_col;		/* the first error's: its token's start */
	uint32_t all;		/* a bit per record */
};

static bool r_letter(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool r_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int r_hex(char c)
{
	if (r_digit(c))
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void r_fail(struct ref *r, size_t col)
{
	if (!r->err)
		r->err_col = col;
	r->err = true;
	r->tok = R_ERR;
}

/*
 * A number or a name is the longest run of letters, digits and dots; a
 * number must then be all decimal digits or 0x and hex digits, and fit in
 * 64 bits ("12ab", "1.5", "0x" are errors).
 */
static void r_word(struct ref *r)
{
	size_t start = r->pos, i, n;
	unsigned __int128 v = 0;
	unsigned int base = 10;
	int d;

	while (r->pos < r->len &&
	       (r_letter(r->s[r->pos]) || r_digit(r->s[r->pos]) ||
		r->s[r->pos] == '.'))
		r->pos++;
	n = r->pos - start;
	if (r_letter(r->s[start])) {
		r->tok = R_NAME;
		r->name = r->s + start;
		r->name_len = n;
		return;
	}
	i = start;
	if (n > 2 && r->s[i] == '0' && (r->s[i + 1] == 'x' || r->s[i + 1] == 'X')) {
		base = 16;
		i += 2;
	}
	for (; i < r->pos; i++) {
		d = base == 16 ? r_hex(r->s[i]) : r_digit(r->s[i]) ? r->s[i] - '0' : -1;
		if (d < 0)
			return r_fail(r, start);
		v = v * base + d;
		if (v > UINT64_MAX)
			return r_fail(r, start);
	}
	r->tok = R_NUM;
	r->num = v;
}

static void r_lex(struct ref *r)
{
	static const struct {
		char s[3];
		enum rtok tok;
		enum rop op;
	} puncts[] = {		/* two-byte tokens first: the longest wins */
		{ "==", R_OP, R_EQ }, { "!=", R_OP, R_NE }, { "<=", R_OP, R_LE },
		{ ">=", R_OP, R_GE }, { "&&", R_AND, 0 }, { "||", R_OR, 0 },
		{ "<", R_OP, R_LT }, { ">", R_OP, R_GT }, { "!", R_NOT, 0 },
		{ "(", R_LP, 0 }, { ")", R_RP, 0 }, { "*", R_STAR, 0 },
	};
	const char *q;
	size_t i, n;

	if (r->err)
		return;
	while (r->pos < r->len && (r->s[r->pos] == ' ' || r->s[r->pos] == '\t'))
		r->pos++;
	r->tok_pos = r->pos;
	if (r->pos == r->len) {
		r->tok = R_END;
		return;
	}
	if (r_letter(r->s[r->pos]) || r_digit(r->s[r->pos]))
		return r_word(r);
	if (r->s[r->pos] == '"') {
		q = memchr(r->s + r->pos + 1, '"', r->len - r->pos - 1);
		if (!q)
			return r_fail(r, r->pos);
		r->tok = R_STR;
		r->name = r->s + r->pos + 1;
		r->name_len = q - r->name;
		r->pos = q + 1 - r->s;
		return;
	}
	for (i = 0; i < ARRAY_SIZE(puncts); i++) {
		n = strlen(puncts[i].s);
		if (r->len - r->pos >= n && !memcmp(r->s + r->pos, puncts[i].s, n)) {
			r->tok = puncts[i].tok;
			r->op = puncts[i].op;
			r->pos += n;
			return;
		}
	}
	r_fail(r, r->pos);
}

static uint64_t r_field(const struct magnet_record *rec, unsigned int f)
{
	switch (f) {
	case 0: case 1: return rec->event_id;
	case 2: return rec->cpu;
	case 3: return rec->pid;
	case 4: return rec->tgid;
	case 5: return rec->abstract_id;
	case 6: return rec->timestamp;
	default: return rec->flags;
	}
}

static uint32_t r_or(struct ref *r);

/* Enclosing '(' and '!': at most MG_EXPR_MAX_DEPTH. */
static bool r_enter(struct ref *r)
{
	if (++r->depth > MG_EXPR_MAX_DEPTH) {
		r_fail(r, r->tok_pos);
		return false;
	}
	return true;
}

static uint32_t r_cmp(struct ref *r)
{
	static const char *const fields[] = { "probe", "event", "cpu", "pid",
		"tgid", "abstract", "ts", "flags" };
	unsigned int f, k, id;
	uint32_t m = 0;
	uint64_t v, x;
	enum rop op;

	for (f = 0; f < ARRAY_SIZE(fields); f++)
		if (strlen(fields[f]) == r->name_len &&
		    !memcmp(fields[f], r->name, r->name_len))
			break;
	if (f == ARRAY_SIZE(fields)) {
		r_fail(r, r->tok_pos);
		return 0;
	}
	r_lex(r);
	if (r->tok != R_OP) {
		r_fail(r, r->tok_pos);
		return 0;
	}
	op = r->op;
	r_lex(r);
	if (r->tok == R_NUM) {
		v = r->num;
	} else if (f == 0 && (r->tok == R_NAME || r->tok == R_STR) &&
		   (op == R_EQ || op == R_NE) &&
		   !lookup(&cur_text, r->name, r->name_len, &id)) {
		v = id;
	} else {
		r_fail(r, r->tok_pos);
		return 0;
	}
	r->nodes++;
	for (k = 0; k < NREC; k++) {
		x = r_field(&recs[k], f);
		if (op == R_EQ ? x == v : op == R_NE ? x != v : op == R_LT ? x < v :
		    op == R_LE ? x <= v : op == R_GT ? x > v : x >= v)
			m |= 1U << k;
	}
	r_lex(r);
	return m;
}

static uint32_t r_unary(struct ref *r)
{
	uint32_t m;

	switch (r->tok) {
	case R_NOT:
		if (!r_enter(r))
			return 0;
		r_lex(r);
		m = ~r_unary(r) & r->all;
		r->nodes++;
		r->depth--;
		return m;
	case R_LP:
		if (!r_enter(r))
			return 0;
		r_lex(r);
		m = r_or(r);
		if (r->tok != R_RP) {
			r_fail(r, r->tok_pos);
			return 0;
		}
		r->depth--;
		r_lex(r);
		return m;
	case R_NAME:
		return r_cmp(r);
	default:
		r_fail(r, r->tok_pos);
		return 0;
	}
}

static uint32_t r_and(struct ref *r)
{
	uint32_t m = r_unary(r);

	if (r->tok == R_AND)
		r->nodes++;
	while (r->tok == R_AND) {
		r_lex(r);
		m &= r_unary(r);
	}
	return m;
}

static uint32_t r_or(struct ref *r)
{
	uint32_t m = r_and(r);

	if (r->tok == R_OR)
		r->nodes++;
	while (r->tok == R_OR) {
		r_lex(r);
		m |= r_and(r);
	}
	return m;
}

/*
 * Accepted? Then *mask holds which records match, *nodes the count. If not,
 * *col is the column of the error (SIZE_MAX: past the node limit, which
 * the reference finds only at the end).
 */
static bool ref_filter(const char *s, size_t len, uint32_t *mask,
		       unsigned int *nodes, size_t *col)
{
	struct ref r = { .s = s, .len = len, .all = (1U << NREC) - 1 };

	cur_text = s;
	cur_len = len;
	*col = SIZE_MAX;
	r_lex(&r);
	if (r.tok == R_STAR)
		r_lex(&r);
	else if (r.tok != R_END)
		*mask = r_or(&r);
	if (r.tok != R_END)
		r_fail(&r, r.tok_pos);
	if (r.err) {
		*col = r.err_col;
		return false;
	}
	if (!r.nodes) {		/* empty, or "*" */
		*mask = r.all;
		r.nodes = 1;
	}
	*nodes = r.nodes;
	return r.nodes <= MG_EXPR_MAX_NODES;
}

/* ---- filters ---- */

static int parse_filter(const char *s, size_t len, struct mg_expr **e,
			struct mg_expr_error *err)
{
	int ret;

	cur_text = s;
	cur_len = len;
	ret = mg_expr_parse(s, len, lookup, &cur_text, e, err);
	CHECK(ret == 0 || ret == -EINVAL);
	if (ret) {
		char tail[40];
		size_t n = strnlen(err->msg, sizeof(err->msg));

		CHECK(!*e);
		CHECK(err->column <= len);
		CHECK(n > 0 && n < MG_EXPR_ERR_MAX);
		/* Sent to a client after "ERR bad filter: " (daemon/server.c):
		 * one clean line, an error reply's size at most. */
		CHECK(printable_ascii(err->msg));
		CHECK(strlen("ERR bad filter: ") + n < MG_PROTO_ERR_MAX);
		snprintf(tail, sizeof(tail), " at column %zu", err->column);
		CHECK(n > strlen(tail) && !strcmp(err->msg + n - strlen(tail), tail));
		return ret;
	}
	CHECK(*e);
	CHECK(mg_expr_nodes(*e) >= 1 && mg_expr_nodes(*e) <= MG_EXPR_MAX_NODES);
	return 0;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static void check_filter(const char *text, size_t len)
{
	char *s = dup_exact(text, len), *neg;
	struct mg_expr *e, *ne;
	struct mg_expr_error err;
	unsigned int nodes = 0, k;
	uint32_t mask = 0;
	bool ok;
	size_t a, b, col;

	ok = ref_filter(s, len, &mask, &nodes, &col);
	if (parse_filter(s, len, &e, &err)) {
		CHECK(!ok);
		/*
		 * The offending token's column (docs/protocol.md, Filters),
		 * unless the node limit came first: the reference counts
		 * nodes to the end.
		 */
		if (!strstr(err.msg, "filter too long"))
			CHECK(err.column == col);
		free(s);
		return;
	}
	CHECK(ok);
	CHECK(mg_expr_nodes(e) == nodes);
	for (k = 0; k < NREC; k++)
		CHECK(mg_expr_match(e, &recs[k]) == !!(mask & (1U << k)));
	CHECK(mg_expr_match(NULL, &recs[0]));

	/* "!(F)" is its complement, unless it passes a limit. */
	for (a = 0; a < len && is_blank(s[a]); a++)
		;
	for (b = len; b > a && is_blank(s[b - 1]); b--)
		;
	if (b > a && !(b - a == 1 && s[a] == '*')) {
		neg = malloc(len + 3);
		CHECK(neg);
		neg[0] = '!';
		neg[1] = '(';
		memcpy(neg + 2, s, len);
		neg[len + 2] = ')';
		if (parse_filter(neg, len + 3, &ne, &err)) {
			CHECK(strstr(err.msg, "more than"));
		} else {
			CHECK(mg_expr_nodes(ne) == nodes + 1);
			for (k = 0; k < NREC; k++)
				CHECK(mg_expr_match(ne, &recs[k]) !=
				      mg_expr_match(e, &recs[k]));
			mg_expr_free(ne);
		}
		free(neg);
	}
	mg_expr_free(e);
	free(s);
}

/* ---- intervals ---- */

static const struct {
	const char *name;
	uint64_t ns;
} units[] = {
	{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 },
	{ "m", 60000000000ULL }, { "h", 3600000000000ULL },
};

/* docs/protocol.md: digits, then a unit, within 10ms..24h. */
static bool ref_interval(const char *s, size_t len, __u64 *ns)
{
	unsigned __int128 v = 0;
	size_t i, u;

	for (i = 0; i < len && r_digit(s[i]); i++)
		if (v <= UINT64_MAX)
			v = v * 10 + (s[i] - '0');
	if (!i)
		return false;
	for (u = 0; u < ARRAY_SIZE(units); u++)
		if (strlen(units[u].name) == len - i &&
		    !memcmp(units[u].name, s + i, len - i))
			break;
	if (u == ARRAY_SIZE(units) || v > UINT64_MAX)
		return false;
	v *= units[u].ns;
	if (v < MG_PROTO_EVERY_MIN_NS || v > MG_PROTO_EVERY_MAX_NS)
		return false;
	*ns = v;
	return true;
}

static void check_interval(const char *text, size_t len)
{
	static const char *const reasons[] = {
		"interval must start with a decimal number",
		"interval needs a unit: ns, us, ms, s, m or h",
		"interval must be 10ms to 24h",
	};
	char *s = dup_exact(text, len), why[MG_PROTO_ERR_MAX];
	__u64 want = 0, ns = 0;
	bool ok = ref_interval(s, len, &want);
	unsigned int i;
	int ret;

	memset(why, 0, sizeof(why));
	ret = mg_proto_parse_interval(s, len, &ns, why);
	if (ret) {
		CHECK(ret == -EINVAL && !ok);
		for (i = 0; i < ARRAY_SIZE(reasons); i++)
			if (!strcmp(why, reasons[i]))
				break;
		CHECK(i < ARRAY_SIZE(reasons));
	} else {
		CHECK(ok && ns == want);
	}
	free(s);
}

/* ---- command lines ---- */

struct word {
	const char *s;
	size_t len;
};

static size_t words(const char *s, size_t len, struct word *w, size_t max)
{
	size_t n = 0, i = 0;

	while (n < max) {
		while (i < len && is_blank(s[i]))
			i++;
		if (i == len)
			break;
		w[n].s = s + i;
		while (i < len && !is_blank(s[i]))
			i++;
		w[n].len = s + i - w[n].s;
		n++;
	}
	return n;
}

static bool word_is(const struct word *w, const char *kw)
{
	return w->len == strlen(kw) && !strncasecmp(w->s, kw, w->len);
}

static bool even_quotes(const char *s, const char *end)
{
	bool even = true;

	for (; s < end; s++)
		even ^= *s == '"';
	return even;
}

/*
 * docs/protocol.md, Commands: the command words and AGG keys, in the order
 * of their enums (a command or key added to the daemon and not here fails
 * the CHECK in LLVMFuzzerTestOneInput).
 */
static const char *const commands[] = { "HELLO", "PROBES", "STATS",
	"SUBSCRIBE", "AGG", "UNSUBSCRIBE", "QUIT", "TOTALS", "AUTH" };
static const char *const agg_keys[] = { "probe", "pid", "tgid", "comm",
					"cgroup", "net" };

/*
 * A client's word as an error reason echoes it: its first 32 bytes, bytes
 * 0x80-0xff as '?', "..." after a longer one.
 */
static const char *ref_echo(char *buf, const struct word *w)
{
	size_t i, n = w->len > 32 ? 32 : w->len;

	for (i = 0; i < n; i++)
		buf[i] = (unsigned char)w->s[i] >= 0x80 ? '?' : w->s[i];
	strcpy(buf + n, w->len > 32 ? "..." : "");
	return buf;
}

/*
 * The reason an invalid interval gets, or NULL when it is valid. A count
 * of 19 digits or more may be refused as out of range before its unit is
 * looked at: then *any is set and any of the three reasons will do.
 */
static const char *ref_interval_why(const char *s, size_t len, bool *any)
{
	size_t i, u;
	__u64 ns;

	*any = false;
	if (ref_interval(s, len, &ns))
		return NULL;
	for (i = 0; i < len && r_digit(s[i]); i++)
		;
	if (!i)
		return "interval must start with a decimal number";
	*any = i >= 19;
	for (u = 0; u < ARRAY_SIZE(units); u++)
		if (strlen(units[u].name) == len - i &&
		    !memcmp(units[u].name, s + i, len - i))
			return "interval must be 10ms to 24h";
	return "interval needs a unit: ns, us, ms, s, m or h";
}

/*
 * The model of one command line: whether it is accepted, and if not the
 * error reply the document gives it (in why, MG_PROTO_ERR_MAX bytes; ""
 * when any of several reasons will do, *loose then set).
 */
static bool ref_command(const char *line, size_t len, struct mg_cmd *want,
			char *why, bool *loose)
{
	char e[64];
	struct word w[6];
	const char *rest, *end, *reason;
	size_t i, n, nrest;

	memset(want, 0, sizeof(*want));
	*loose = false;
	why[0] = '\0';
	if (len > MG_PROTO_LINE_MAX) {
		snprintf(why, MG_PROTO_ERR_MAX, "ERR line too long (max 4096 bytes)");
		return false;
	}
	for (i = 0; i < len; i++)
		if (((unsigned char)line[i] < 0x20 && line[i] != '\t') ||
		    line[i] == 0x7f) {
			snprintf(why, MG_PROTO_ERR_MAX,
				 "ERR control character 0x%02x at column %zu",
				 (unsigned char)line[i], i);
			return false;
		}
	if (!words(line, len, w, 1)) {
		snprintf(why, MG_PROTO_ERR_MAX, "ERR empty command");
		return false;
	}
	for (i = 0; i < ARRAY_SIZE(commands); i++)
		if (word_is(&w[0], commands[i]))
			break;
	if (i == ARRAY_SIZE(commands)) {
		snprintf(why, MG_PROTO_ERR_MAX, "ERR unknown command '%s'",
			 ref_echo(e, &w[0]));
		return false;
	}
	want->kind = i;
	rest = w[0].s + w[0].len;
	nrest = line + len - rest;
	n = words(rest, nrest, w, 6);
	switch (want->kind) {
	case MG_CMD_AGG:
		if (n == 0) {
			snprintf(why, MG_PROTO_ERR_MAX,
				 "ERR AGG needs a key: probe, pid, tgid, comm, cgroup or net");
			return false;
		}
		for (i = 0; i < ARRAY_SIZE(agg_keys); i++)
			if (word_is(&w[0], agg_keys[i]))
				break;
		if (i == ARRAY_SIZE(agg_keys)) {
			snprintf(why, MG_PROTO_ERR_MAX,
				 "ERR unknown AGG key '%s' (probe, pid, tgid, comm, cgroup or net)",
				 ref_echo(e, &w[0]));
			return false;
		}
		want->agg_key = i;
		want->interval_ns = MG_PROTO_EVERY_DEFAULT_NS;
		if (n == 1)
			return true;
		if (!word_is(&w[1], "EVERY")) {
			snprintf(why, MG_PROTO_ERR_MAX,
				 "ERR expected EVERY after the AGG key, not '%s'",
				 ref_echo(e, &w[1]));
			return false;
		}
		if (n == 2) {
			snprintf(why, MG_PROTO_ERR_MAX,
				 "ERR EVERY needs an interval, e.g. 500ms");
			return false;
		}
		if (n > 3) {
			snprintf(why, MG_PROTO_ERR_MAX, "ERR too many arguments to AGG");
			return false;
		}
		reason = ref_interval_why(w[2].s, w[2].len, loose);
		if (!reason && ref_interval(w[2].s, w[2].len, &want->interval_ns))
			return true;
		if (!*loose)
			snprintf(why, MG_PROTO_ERR_MAX, "ERR %s", reason);
		return false;
	case MG_CMD_AUTH:
		/* AUTH MUNGE <credential>: one scheme, one word. */
		if (n == 0) {
			snprintf(why, MG_PROTO_ERR_MAX,
				 "ERR AUTH needs a scheme: AUTH MUNGE <credential>");
			return false;
		}
		if (!word_is(&w[0], "MUNGE")) {
			snprintf(why, MG_PROTO_ERR_MAX,
				 "ERR unknown AUTH scheme '%s' (MUNGE)", ref_echo(e, &w[0]));
			return false;
		}
		if (n == 1) {
			snprintf(why, MG_PROTO_ERR_MAX,
				 "ERR AUTH MUNGE needs a credential (munge -s magnetd)");
			return false;
		}
		if (n > 2) {
			snprintf(why, MG_PROTO_ERR_MAX, "ERR too many arguments to AUTH");
			return false;
		}
		want->cred = w[1].s;
		want->cred_len = w[1].len;
		return true;
	case MG_CMD_SUBSCRIBE:
		/* The last two words, if there are that many. */
		n = 0;
		for (end = rest + nrest; n < 2; n++) {
			while (end > rest && is_blank(end[-1]))
				end--;
			if (end == rest)
				break;
			w[n].len = 0;
			while (end > rest && !is_blank(end[-1])) {
				end--;
				w[n].len++;
			}
			w[n].s = end;
		}
		end = rest + nrest;
		if (n == 2 && word_is(&w[1], "FORMAT") && even_quotes(rest, w[1].s)) {
			if (word_is(&w[0], "binary")) {
				want->format = MG_FORMAT_BINARY;
			} else if (!word_is(&w[0], "json")) {
				snprintf(why, MG_PROTO_ERR_MAX,
					 "ERR unknown format '%s' (json or binary)",
					 ref_echo(e, &w[0]));
				return false;
			}
			end = w[1].s;
		} else if (n && word_is(&w[0], "FORMAT") && even_quotes(rest, w[0].s)) {
			snprintf(why, MG_PROTO_ERR_MAX, "ERR FORMAT needs json or binary");
			return false;
		}
		while (rest < end && is_blank(*rest))
			rest++;
		while (end > rest && is_blank(end[-1]))
			end--;
		want->filter = rest;
		want->filter_len = end - rest;
		want->filter_col = rest - line;
		return true;
	default:
		if (n == 0)
			return true;
		snprintf(why, MG_PROTO_ERR_MAX, "ERR %s takes no arguments",
			 commands[want->kind]);
		return false;
	}
}

static void check_line(const char *text, size_t len)
{
	char *line = dup_exact(text, len), why[MG_PROTO_ERR_MAX];
	struct mg_cmd cmd, want;
	bool loose, ok = ref_command(line, len, &want, why, &loose);
	size_t n;
	int ret;

	ret = mg_proto_parse(line, len, &cmd);
	if (ret) {
		CHECK(ret == -EINVAL);
		CHECK(!ok);
		n = strnlen(cmd.error, sizeof(cmd.error));
		CHECK(n < MG_PROTO_ERR_MAX);
		CHECK(n > 4 && !memcmp(cmd.error, "ERR ", 4));
		/* A reply line of printable ASCII: what the document says. */
		CHECK(printable_ascii(cmd.error));
		CHECK(loose || !strcmp(cmd.error, why));
		free(line);
		return;
	}
	CHECK(ok);
	CHECK(cmd.kind == want.kind);
	switch (cmd.kind) {
	case MG_CMD_AGG:
		CHECK(cmd.agg_key == want.agg_key);
		CHECK(cmd.interval_ns == want.interval_ns);
		CHECK(cmd.interval_ns >= MG_PROTO_EVERY_MIN_NS &&
		      cmd.interval_ns <= MG_PROTO_EVERY_MAX_NS);
		break;
	case MG_CMD_AUTH:
		CHECK(cmd.cred == want.cred && cmd.cred_len == want.cred_len);
		CHECK(cmd.cred_len && cmd.cred + cmd.cred_len <= line + len);
		break;
	case MG_CMD_SUBSCRIBE:
		CHECK(cmd.format == want.format);
		CHECK(cmd.filter_len == want.filter_len);
		if (cmd.filter_len) {
			CHECK(cmd.filter == want.filter);
			CHECK(cmd.filter_col == want.filter_col);
			CHECK(cmd.filter == line + cmd.filter_col);
			CHECK(cmd.filter_col + cmd.filter_len <= len);
		}
		make_records((const uint8_t *)line, len);
		check_filter(cmd.filter_len ? cmd.filter : "", cmd.filter_len);
		break;
	default:
		break;
	}
	free(line);
}

/* ---- line assembly ---- */

struct event {
	enum mg_line_status st;	/* READY or TOO_LONG */
	size_t off, len;	/* READY: the line's bytes in the input */
};

/* docs/protocol.md, Framing: what the assembler must report. */
static size_t model_lines(const char *d, size_t n, struct event *ev)
{
	size_t i = 0, k = 0, seg;
	const char *nl;

	while (i < n) {
		nl = memchr(d + i, '\n', n - i);
		seg = nl ? (size_t)(nl - (d + i)) : n - i;
		if (seg > MG_PROTO_LINE_MAX) {
			ev[k++] = (struct event){ .st = MG_LINE_TOO_LONG };
		} else if (nl) {
			ev[k++] = (struct event){
				.st = MG_LINE_READY,
				.off = i,
				.len = seg - (seg && d[i + seg - 1] == '\r'),
			};
		}
		i = nl ? (size_t)(nl - d) + 1 : n;
	}
	return k;
}

enum split {
	SPLIT_ONE,	/* one read */
	SPLIT_BYTES,	/* a byte a read */
	SPLIT_NEWLINE,	/* every read but the first starts with a '\n' */
	SPLIT_RANDOM,	/* pseudo-random sizes */
	SPLIT_LIMIT,	/* sizes around the line limit */
	SPLIT_NR
};

static size_t next_read(enum split how, uint64_t *state, size_t nth,
			const char *d, size_t n, size_t pos)
{
	static const size_t limit[] = { MG_PROTO_LINE_MAX - 1, MG_PROTO_LINE_MAX,
					MG_PROTO_LINE_MAX + 1, 1, 2 };
	const char *nl;
	size_t from;

	switch (how) {
	case SPLIT_ONE:
		return SIZE_MAX;
	case SPLIT_BYTES:
		return 1;
	case SPLIT_NEWLINE:
		/* Up to the next '\n', not including it: the assembler sees a
		 * line end at the very start of a read, e.g. right after a
		 * too-long line's last byte. */
		from = pos + (d[pos] == '\n');
		nl = from < n ? memchr(d + from, '\n', n - from) : NULL;
		return nl ? (size_t)(nl - (d + pos)) : SIZE_MAX;
	case SPLIT_RANDOM:
		*state ^= *state << 13;
		*state ^= *state >> 7;
		*state ^= *state << 17;
		return 1 + (*state % (*state & 0x100 ? 4200 : 17));
	default:
		return limit[nth % ARRAY_SIZE(limit)];
	}
}

/* Feed the input in reads cut as how says; the events must be ev[]. */
static void assemble(const char *d, size_t n, enum split how, uint64_t seed,
		     const struct event *ev, size_t nev)
{
	struct mg_linebuf *lb = malloc(sizeof(*lb));
	size_t pos = 0, k = 0, nth = 0, chunk, len, line_len, before;
	const char *p, *line, *start;
	enum mg_line_status st;
	char *buf;

	CHECK(lb);
	mg_linebuf_init(lb);
	while (pos < n) {
		chunk = next_read(how, &seed, nth++, d, n, pos);
		if (chunk > n - pos)
			chunk = n - pos;
		buf = dup_exact(d + pos, chunk);
		p = buf;
		len = chunk;
		for (;;) {
			start = p;
			before = len;
			line = NULL;
			st = mg_linebuf_take(lb, &p, &len, &line, &line_len);
			/* *data and *len move together, forwards, within the read. */
			CHECK(p >= start && len <= before && p + len == start + before);
			if (st == MG_LINE_MORE) {
				CHECK(len == 0);
				break;
			}
			CHECK(k < nev && st == ev[k].st);
			if (st == MG_LINE_READY) {
				CHECK(line && line_len <= MG_PROTO_LINE_MAX);
				CHECK(line[line_len] == '\0');
				CHECK(line_len == ev[k].len &&
				      !memcmp(line, d + ev[k].off, line_len));
			}
			k++;
		}
		free(buf);
		pos += chunk;
	}
	CHECK(k == nev);
	free(lb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *d = (const char *)data;
	struct event *ev = malloc((size + 1) * sizeof(*ev));
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	unsigned int how;
	size_t nev, i, w;

	CHECK(ev);
	/* The model knows every command and key the daemon does. */
	CHECK(ARRAY_SIZE(commands) == MG_CMD_NR && ARRAY_SIZE(agg_keys) == MG_AGG_NR);
	for (i = 0; i < MG_CMD_NR; i++)
		CHECK(!strcmp(commands[i], mg_proto_cmd_name(i)));
	for (i = 0; i < MG_AGG_NR; i++)
		CHECK(!strcmp(agg_keys[i], mg_proto_agg_key_name(i)));
	for (i = 0; i < size; i++)
		seed = (seed ^ data[i]) * 0x100000001b3ULL;
	nev = model_lines(d, size, ev);
	for (how = 0; how < SPLIT_NR; how++) {
		/* One byte a read is slow on long inputs: the random reads,
		 * half of them 1..17 bytes, cover those. */
		if (how == SPLIT_BYTES && size > 2048)
			continue;
		assemble(d, size, how, seed | 1, ev, nev);
	}

	for (i = 0; i < nev; i++) {
		if (ev[i].st != MG_LINE_READY)
			continue;
		check_line(d + ev[i].off, ev[i].len);
		check_interval(d + ev[i].off, ev[i].len);
	}

	/* The parsers directly, on bytes the assembler would not hand over. */
	check_line(d, size);
	for (w = 0; w < size && w < 64 && !is_blank(d[w]) && d[w] != '\n'; w++)
		;
	check_interval(d, w);
	make_records(data, size);
	check_filter(d, size);

	free(ev);
	return 0;
}
