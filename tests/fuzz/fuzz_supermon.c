// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for magnetd's Supermon listener (docs/supermon.md,
 * daemon/supermon.h): what a concentrator, or anyone on the listener,
 * sends.
 *
 * The input is a client's byte stream, taken as the server takes it
 * (daemon/client.c, supermon_line): lines from mg_linebuf_take, each
 * answered by mg_supermon_handle (mg_supermon_too_long past the line
 * limit), one connection's mask kept across them, up to Q. The totals
 * it samples are made from the input too (names and paths: any bytes).
 * Checked against a model of the grammar:
 *
 *   - every request gets exactly one reply: one line of printable ASCII,
 *     one s-expression (parentheses balanced outside strings, strings
 *     quoted with \" and \\ escaped);
 *   - its kind is the model's: # a description, S a sample, M and a mask
 *     of 1 to 31 (decimal or 0x hex) "(mask N)", Q "(bye)" and the end,
 *     anything else an error;
 *   - a sample holds exactly the categories of the connection's mask,
 *     which only a valid M changes.
 *
 * Any broken invariant abort()s, so libFuzzer reports it with the input.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "supermon.h"

#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "fuzz_supermon: %s:%d: %s\n",	\
				__FILE__, __LINE__, #cond);		\
			abort();					\
		}							\
	} while (0)

enum kind { K_DESCRIBE, K_SAMPLE, K_MASK, K_BYE, K_ERROR, K_NONE };

static bool blank(char c)
{
	return c == ' ' || c == '\t';
}

/* "1".."31", "0x1".."0x1f" and any leading zeros: the mask, else 0. */
static unsigned int ref_mask(const char *s, size_t len)
{
	unsigned int base = 10, v = 0;
	size_t i = 0;

	if (len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		i = 2;
	}
	if (i == len)
		return 0;
	for (; i < len; i++) {
		int d = isdigit((unsigned char)s[i]) ? s[i] - '0' :
			base == 16 && isxdigit((unsigned char)s[i]) ?
			tolower((unsigned char)s[i]) - 'a' + 10 : -1;

		if (d < 0)
			return 0;
		if (v > MG_SM_ALL)
			continue;	/* too big already; the digits still count */
		v = v * base + d;
	}
	return v >= 1 && v <= MG_SM_ALL ? v : 0;
}

/* docs/supermon.md, Grammar: what a request line is. */
static enum kind ref_request(const char *l, size_t len, unsigned int *mask)
{
	size_t i;

	while (len && blank(*l)) {
		l++;
		len--;
	}
	while (len && blank(l[len - 1]))
		len--;
	if (!len)
		return K_NONE;	/* a blank line asks nothing: no reply */
	for (i = 0; i < len; i++)
		if ((unsigned char)l[i] < 0x20 && l[i] != '\t')
			return K_ERROR;
	if (len == 1 && l[0] == '#')
		return K_DESCRIBE;
	if (len == 1 && l[0] == 'S')
		return K_SAMPLE;
	if (len == 1 && l[0] == 'Q')
		return K_BYE;
	if (len >= 3 && l[0] == 'M' && blank(l[1])) {
		for (i = 1; i < len && blank(l[i]); i++)
			;
		/* Leading zeros of an octal-looking mask read the same. */
		*mask = ref_mask(l + i, len - i);
		/* The mask's buffer: 31 bytes. */
		if (len - i > 31)
			*mask = 0;
		return *mask ? K_MASK : K_ERROR;
	}
	return K_ERROR;
}

/* One s-expression on one line of printable ASCII. */
static void check_sexp(const char *r, size_t len)
{
	bool in = false;
	long depth = 0;
	size_t i;

	CHECK(len >= 3 && r[0] == '(' && r[len - 1] == '\n');
	for (i = 0; i < len - 1; i++) {
		unsigned char c = r[i];

		CHECK(c >= 0x20 && c <= 0x7e);
		if (in) {
			if (c == '\\') {
				CHECK(i + 1 < len - 1 && (r[i + 1] == '"' || r[i + 1] == '\\'));
				i++;
			} else if (c == '"') {
				in = false;
			}
			continue;
		}
		if (c == '"')
			in = true;
		else if (c == '(')
			depth++;
		else if (c == ')')
			CHECK(--depth >= 0);
		/* The whole reply is one expression: nothing after it closes. */
		CHECK(depth > 0 || i == len - 2);
	}
	CHECK(!in && depth == 0);
}

/* The reply with its strings' insides blanked: its structure alone. */
static char *structure(const char *r, size_t len)
{
	char *s = malloc(len + 1);
	bool in = false;
	size_t i;

	CHECK(s);
	for (i = 0; i < len; i++) {
		s[i] = in && r[i] != '"' ? 'x' : r[i];
		if (in && r[i] == '\\' && i + 1 < len) {
			s[++i] = 'x';
			continue;
		}
		if (r[i] == '"')
			in = !in;
	}
	s[len] = '\0';
	return s;
}

/* ---- totals made of the input ---- */

static void take(const uint8_t **d, size_t *n, char *dst, size_t max)
{
	size_t k = *n && (*d)[0] < max ? (*d)[0] : 0;

	if (*n) {
		(*d)++;
		(*n)--;
	}
	if (k > *n)
		k = *n;
	memcpy(dst, *d, k);
	dst[k] = '\0';
	*d += k;
	*n -= k;
}

static void make_view(struct mg_totals_view *v, struct mg_totals_probe *p,
		      struct mg_totals_job *j, const uint8_t *d, size_t n)
{
	memset(v, 0, sizeof(*v));
	memset(p, 0, sizeof(*p));
	memset(j, 0, sizeof(*j));
	strcpy(v->node.node, "node1");
	v->node.now_ns = 1700000000000000000ULL;
	v->node.module_up = true;
	p->id = 16;
	take(&d, &n, p->name, sizeof(p->name));
	take(&d, &n, p->symbol, sizeof(p->symbol));
	take(&d, &n, p->type, sizeof(p->type));
	p->loaded = true;
	j->cgroup = 4242;
	j->exported = true;
	take(&d, &n, j->path, sizeof(j->path));
	take(&d, &n, v->node.node, sizeof(v->node.node));
	v->probes = p;
	v->nprobes = 1;
	/* Its traffic: one protocol, no peer listed (its series in "other"). */
	j->has_net = true;
	j->net.proto[MG_TOTALS_TCP].tx_packets = 1;
	j->net.proto_series[MG_TOTALS_TCP].tx_packets = 1;
	j->net.other.n.tx_packets = j->net.other.series.tx_packets = 1;
	v->jobs = j;
	v->njobs = 1;
	strcpy(v->other.path, "other");
	v->other.exported = true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const starts[] = {
		[K_DESCRIBE] = "(description ", [K_SAMPLE] = "(sample ",
		[K_MASK] = "(mask ", [K_BYE] = "(bye)", [K_ERROR] = "(error ",
		[K_NONE] = "",
	};
	struct mg_supermon_client cl;
	struct mg_totals_probe probe;
	struct mg_totals_job job;
	struct mg_totals_view v;
	struct mg_linebuf *lb = malloc(sizeof(*lb));
	unsigned int mask = MG_SM_ALL, m = 0;
	const char *p, *line;
	size_t left, line_len;
	char *out = NULL;
	size_t out_len = 0;
	unsigned int requests = 0;
	bool bye = false;
	FILE *f;

	CHECK(lb);
	make_view(&v, &probe, &job, data, size);
	mg_linebuf_init(lb);
	mg_supermon_client_init(&cl);
	p = (const char *)data;
	left = size;
	/* Enough requests for any sequence of masks; a sample each is slow. */
	while (!bye && requests++ < 64) {
		enum mg_line_status st = mg_linebuf_take(lb, &p, &left, &line,
							 &line_len);
		enum kind k;
		int ret = 0;

		if (st == MG_LINE_MORE)
			break;
		f = open_memstream(&out, &out_len);
		CHECK(f);
		if (st == MG_LINE_TOO_LONG) {
			mg_supermon_too_long(f, MG_PROTO_LINE_MAX);
			k = K_ERROR;
		} else {
			k = ref_request(line, line_len, &m);
			ret = mg_supermon_handle(f, line, line_len, &cl, &v);
		}
		CHECK(!fclose(f));
		if (k == K_NONE) {
			CHECK(!out_len && !ret && cl.mask == mask);
			free(out);
			out = NULL;
			continue;
		}
		CHECK(out_len && memchr(out, '\n', out_len) == out + out_len - 1);
		check_sexp(out, out_len);
		CHECK(!strncmp(out, starts[k], strlen(starts[k])));
		CHECK(ret == (k == K_BYE));
		if (k == K_MASK) {
			char want[16];

			mask = m;
			snprintf(want, sizeof(want), "(mask %u)\n", m);
			CHECK(!strcmp(out, want));
		}
		if (k == K_SAMPLE) {
			char *st = structure(out, out_len);

			/* The categories of the mask, and only they. */
			CHECK(!!strstr(st, ") (node (module ") == !!(mask & MG_SM_NODE));
			CHECK(!!strstr(st, " (probes (probe ") == !!(mask & MG_SM_PROBES));
			CHECK(!!strstr(st, " (jobs (job ") == !!(mask & MG_SM_JOBS));
			CHECK(!!strstr(st, " (net (net ") == !!(mask & MG_SM_NET));
			CHECK(!!strstr(st, " (peers (peer ") == !!(mask & MG_SM_PEERS));
			free(st);
		}
		CHECK(cl.mask == mask);
		bye = k == K_BYE;
		free(out);
		out = NULL;
	}
	free(lb);
	return 0;
}
