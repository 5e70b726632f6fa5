// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for magnetd's Prometheus listener (docs/prometheus.md,
 * daemon/prom.h): what a scraper, or anyone on the listener, sends.
 *
 * The input is a client's byte stream, taken as the server takes it
 * (daemon/client.c, prom_line): lines from mg_linebuf_take, the first the
 * request line (its first 511 bytes kept), then header lines up to an
 * empty one, which mg_prom_respond answers. The totals it renders are
 * made from the input too (probe names, job paths: any bytes). Checked:
 *
 *   - the response is one well-formed HTTP/1.1 response: a status line,
 *     header lines ending in CRLF with no other CR or LF, Content-Length
 *     the body's length (HEAD: no body), Connection: close;
 *   - its status is the one a model of the request line gives (400 for
 *     no request line, 405 for another method than GET or HEAD, 404 for
 *     another path than /metrics, 200);
 *   - a 200's body is the exposition format: every line a # HELP, a
 *     # TYPE or a sample "name{label="value",...} number", label values
 *     escaped (\\, \", \n) and valid UTF-8.
 *
 * Any broken invariant abort()s, so libFuzzer reports it with the input.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prom.h"
#include "proto.h"

#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "fuzz_http: %s:%d: %s\n",	\
				__FILE__, __LINE__, #cond);		\
			abort();					\
		}							\
	} while (0)

/* client.c keeps this much of the request line. */
#define HTTP_LINE_MAX	512

/* ---- the model of the request line ---- */

struct word {
	const char *s;
	size_t len;
};

static bool word_is(const struct word *w, const char *s)
{
	return w->len == strlen(s) && !memcmp(w->s, s, w->len);
}

/* HTTP's whitespace, as the C locale has it. */
static bool ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
	       c == '\r';
}

/* prom.h: the status a request line gets. */
static int ref_status(const char *line, bool *head)
{
	struct word w[4];
	size_t n = 0, i = 0, len = strlen(line);
	const char *q;

	while (n < 4) {
		while (i < len && ws(line[i]))
			i++;
		if (i == len)
			break;
		w[n].s = line + i;
		while (i < len && !ws(line[i]))
			i++;
		w[n].len = line + i - w[n].s;
		n++;
	}
	*head = false;
	if (n != 3 || w[2].len < 7 || memcmp(w[2].s, "HTTP/1.", 7))
		return 400;
	*head = word_is(&w[0], "HEAD");
	if (!*head && !word_is(&w[0], "GET"))
		return 405;
	q = memchr(w[1].s, '?', w[1].len);
	if (q)
		w[1].len = q - w[1].s;
	return word_is(&w[1], "/metrics") ? 200 : 404;
}

/* ---- the response ---- */

/* Strict UTF-8: no overlong forms, no surrogates, at most U+10FFFF. */
static bool utf8_ok(const unsigned char *s, size_t len)
{
	size_t i = 0, n, k;
	uint32_t c;

	while (i < len) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		if (s[i] >= 0xc2 && s[i] <= 0xdf)
			n = 1, c = s[i] & 0x1f;
		else if (s[i] >= 0xe0 && s[i] <= 0xef)
			n = 2, c = s[i] & 0x0f;
		else if (s[i] >= 0xf0 && s[i] <= 0xf4)
			n = 3, c = s[i] & 0x07;
		else
			return false;
		for (k = 1; k <= n; k++) {
			if (i + k >= len || (s[i + k] & 0xc0) != 0x80)
				return false;
			c = c << 6 | (s[i + k] & 0x3f);
		}
		if ((n == 2 && c < 0x800) || (n == 3 && c < 0x10000) ||
		    (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
			return false;
		i += n + 1;
	}
	return true;
}

static bool metric_name(const char **p, const char *end)
{
	const char *s = *p;

	if (s == end || !(isalpha((unsigned char)*s) || *s == '_' || *s == ':'))
		return false;
	while (s < end && (isalnum((unsigned char)*s) || *s == '_' || *s == ':'))
		s++;
	*p = s;
	return true;
}

/* One line of the exposition format (without its '\n'). */
static void check_page_line(const char *l, const char *end)
{
	const char *p = l, *v;

	if (end - l >= 2 && l[0] == '#') {
		CHECK(!strncmp(l, "# HELP ", 7) || !strncmp(l, "# TYPE ", 7));
		p = l + 7;
		CHECK(metric_name(&p, end) && p < end && *p == ' ');
		CHECK(utf8_ok((const unsigned char *)l, end - l));
		return;
	}
	CHECK(metric_name(&p, end));
	if (p < end && *p == '{') {
		p++;
		for (;;) {
			CHECK(metric_name(&p, end));
			CHECK(end - p >= 2 && p[0] == '=' && p[1] == '"');
			p += 2;
			v = p;
			while (p < end && *p != '"') {
				if (*p == '\\') {
					CHECK(p + 1 < end && (p[1] == '\\' || p[1] == '"' ||
							      p[1] == 'n'));
					p++;
				}
				p++;
			}
			CHECK(p < end);
			CHECK(utf8_ok((const unsigned char *)v, p - v));
			p++;
			if (p < end && *p == ',') {
				p++;
				continue;
			}
			CHECK(p < end && *p == '}');
			p++;
			break;
		}
	}
	CHECK(p < end && *p == ' ');
	p++;
	CHECK(p < end);
	for (; p < end; p++)
		CHECK(isdigit((unsigned char)*p) || *p == '.');
}

static void check_response(const char *r, size_t len, int want, bool head)
{
	const char *p = r, *end = r + len, *eol, *hdr_end;
	bool clen = false, close = false;
	unsigned long long cl = 0;
	size_t body;
	int code;

	hdr_end = memmem(r, len, "\r\n\r\n", 4);
	CHECK(hdr_end);
	CHECK(sscanf(r, "HTTP/1.1 %3d ", &code) == 1 && code == want);
	while (p < hdr_end) {
		eol = memmem(p, hdr_end + 2 - p, "\r\n", 2);
		CHECK(eol);
		/* No CR or LF but the line's end: nothing injected. */
		CHECK(!memchr(p, '\r', eol - p) && !memchr(p, '\n', eol - p));
		if (!strncmp(p, "Content-Length: ", 16)) {
			CHECK(sscanf(p + 16, "%llu", &cl) == 1);
			clen = true;
		}
		if (!strncmp(p, "Connection: close", 17))
			close = true;
		p = eol + 2;
	}
	CHECK(clen && close);
	body = end - (hdr_end + 4);
	CHECK(head ? body == 0 : body == cl);
	if (want != 200 || head)
		return;
	CHECK(!strncmp(hdr_end + 4, "# HELP magnet_up ", 17));
	for (p = hdr_end + 4; p < end; p = eol + 1) {
		eol = memchr(p, '\n', end - p);
		CHECK(eol);
		check_page_line(p, eol);
	}
}

/* ---- totals made of the input ---- */

static char *take(const uint8_t **d, size_t *n, char *dst, size_t max)
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
	/* A NUL ends a name early, as it would in the daemon's strings. */
	*d += k;
	*n -= k;
	return dst;
}

static void make_view(struct mg_totals_view *v, struct mg_totals_probe *p,
		      struct mg_totals_job *j, const uint8_t *d, size_t n)
{
	memset(v, 0, sizeof(*v));
	memset(p, 0, 2 * sizeof(*p));
	memset(j, 0, 2 * sizeof(*j));
	strcpy(v->node.node, "node1");
	v->node.now_ns = 1700000000000000000ULL;
	v->node.uptime_ns = 42000000000ULL;
	v->node.module_up = true;
	v->node.records = n;
	p[0].id = 16;
	take(&d, &n, p[0].name, sizeof(p[0].name));
	take(&d, &n, p[0].symbol, sizeof(p[0].symbol));
	take(&d, &n, p[0].type, sizeof(p[0].type));
	p[0].loaded = true;
	p[0].sock = true;
	p[0].events = UINT64_MAX;
	p[1].id = 17;
	strcpy(p[1].name, "tcp_sendmsg%return");
	strcpy(p[1].symbol, "tcp_sendmsg");
	strcpy(p[1].type, "kretprobe");
	j[0].cgroup = 4242;
	j[0].exported = true;
	take(&d, &n, j[0].path, sizeof(j[0].path));
	j[1].cgroup = 4243;
	strcpy(j[1].path, "/not exported");
	v->probes = p;
	v->nprobes = 2;
	v->jobs = j;
	v->njobs = 2;
	strcpy(v->other.path, "other");
	v->other.exported = true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mg_totals_probe probes[2];
	struct mg_totals_job jobs[2];
	struct mg_totals_view v;
	struct mg_linebuf *lb = malloc(sizeof(*lb));
	char request[HTTP_LINE_MAX];
	const char *p, *line;
	size_t left, line_len;
	bool seen = false, head;
	char *out = NULL;
	size_t out_len = 0;
	FILE *f;
	int want;

	CHECK(lb);
	make_view(&v, probes, jobs, data, size);
	mg_linebuf_init(lb);
	p = (const char *)data;
	left = size;
	for (;;) {
		enum mg_line_status st = mg_linebuf_take(lb, &p, &left, &line,
							 &line_len);

		if (st == MG_LINE_MORE || st == MG_LINE_TOO_LONG)
			break;	/* client.c: more to come, or a fixed 431 */
		if (!seen) {
			if (line_len >= sizeof(request))
				line_len = sizeof(request) - 1;
			memcpy(request, line, line_len);
			request[line_len] = '\0';
			seen = true;
			continue;
		}
		if (line_len)
			continue;	/* a header */
		want = ref_status(request, &head);
		f = open_memstream(&out, &out_len);
		CHECK(f);
		CHECK(mg_prom_respond(f, request, &v) == 0);
		CHECK(!fclose(f));
		check_response(out, out_len, want, head);
		free(out);
		break;	/* answered: the server closes */
	}
	free(lb);
	return 0;
}
