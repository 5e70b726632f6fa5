// SPDX-License-Identifier: GPL-2.0
/*
 * mgclient: see mgclient.h. The protocol is docs/protocol.md; the
 * comments here say only what the document leaves to a client.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <linux/magnet.h>

#include "escape.h"
#include "mgclient.h"
#include "util.h"

/* First receive buffer; it doubles up to MGC_BUF_MAX for large messages. */
#define MGC_BUF_MIN		(256U << 10)
#define MGC_BUF_MAX		(MGC_FRAME_MAX + 2 * MGC_LINE_MAX)
/* How long a send may wait for room in the socket. */
#define MGC_SEND_TIMEOUT_MS	10000
/* Bytes of an offending line quoted in an error. */
#define MGC_EXCERPT		40

static void vwhy(char *why, size_t whylen, const char *fmt, va_list ap)
{
	if (why && whylen)
		vsnprintf(why, whylen, fmt, ap);
}

/* Input that breaks the protocol: why, and -EPROTO. */
__attribute__((format(printf, 3, 4)))
static int fail(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwhy(why, whylen, fmt, ap);
	va_end(ap);
	return -EPROTO;
}

/* An argument of ours that is wrong: why, and -EINVAL. */
__attribute__((format(printf, 3, 4)))
static int bad(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwhy(why, whylen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/*
 * A cut copy of untrusted bytes, to quote in an error: printable ASCII
 * and spaces as they are (it is a sentence), the rest as \xNN.
 */
static const char *excerpt(char *buf, size_t size, const char *s, size_t len)
{
	size_t n = len > MGC_EXCERPT ? MGC_EXCERPT : len, i, used = 0;

	for (i = 0; i < n && used + 8 < size; i++) {
		unsigned char c = s[i];

		if (c >= 0x20 && c < 0x7f && c != '\\')
			buf[used++] = c;
		else
			used += snprintf(buf + used, size - used, "\\x%02x", c);
	}
	buf[used] = '\0';
	if (len > i)
		strcat(buf, "...");
	return buf;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/*
 * Next blank-separated word of [*p, end): *w and *wl, *p moved past it.
 * false when only blanks are left.
 */
static bool next_word(const char **p, const char *end, const char **w,
		      size_t *wl)
{
	const char *s = *p;

	while (s < end && is_blank(*s))
		s++;
	if (s == end) {
		*p = s;
		return false;
	}
	*w = s;
	while (s < end && !is_blank(*s))
		s++;
	*wl = s - *w;
	*p = s;
	return true;
}

static bool word_eq(const char *w, size_t wl, const char *s)
{
	return wl == strlen(s) && !memcmp(w, s, wl);
}

int mgc_parse_u64(const char *s, size_t len, __u64 *v)
{
	__u64 n = 0;
	size_t i;

	if (!len)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		unsigned int d = (unsigned char)s[i] - '0';

		if (d > 9 || n > (UINT64_MAX - d) / 10)
			return -EINVAL;
		n = n * 10 + d;
	}
	*v = n;
	return 0;
}

int mgc_parse_ms(const char *s, long long *ms)
{
	const char *dot = strchr(s, '.');
	size_t il = dot ? (size_t)(dot - s) : strlen(s);
	size_t fl = dot ? strlen(dot + 1) : 0, i;
	__u64 ip, fp = 0;

	if (mgc_parse_u64(s, il, &ip) || ip > 1000000000ULL ||
	    (dot && (mgc_parse_u64(dot + 1, fl, &fp) || fl > 3)))
		return -EINVAL;
	for (i = fl; i < 3; i++)
		fp *= 10;
	*ms = ip * 1000 + fp;
	return 0;
}

int mgc_opt_count(const char *prog, char opt, const char *arg, __u64 *v)
{
	if (mgc_parse_u64(arg, strlen(arg), v) || !*v) {
		fprintf(stderr, "%s: -%c needs a count from 1, not '%s'\n",
			prog, opt, arg);
		return -EINVAL;
	}
	return 0;
}

/* ---- for the programs ---- */

long long mgc_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

void mgc_catch_signals(const int *sigs, void (*handler)(int),
		       sigset_t *waitmask)
{
	struct sigaction sa = { .sa_handler = handler };
	sigset_t block;
	size_t i;

	sigemptyset(&block);
	for (i = 0; sigs[i]; i++)
		sigaddset(&block, sigs[i]);
	sigprocmask(SIG_BLOCK, &block, waitmask);
	for (i = 0; sigs[i]; i++)
		sigaction(sigs[i], &sa, NULL);
}

/* ---- addresses ---- */

static int copy_part(char *dst, size_t dstlen, const char *s, size_t len)
{
	if (len >= dstlen)
		return -1;
	memcpy(dst, s, len);
	dst[len] = '\0';
	return 0;
}

int mgc_split_addr(const char *spec, char *host, size_t hostlen,
		   char *port, size_t portlen, char *why, size_t whylen)
{
	const char *h = MGC_DEFAULT_HOST, *p = MGC_DEFAULT_PORT, *colon;
	size_t hl = strlen(h), pl = strlen(p);
	__u64 pv;

	if (spec && *spec == '[') {
		const char *close = strchr(spec, ']');

		if (!close)
			return bad(why, whylen, "missing ']' after the IPv6 address");
		h = spec + 1;
		hl = close - h;
		if (!hl)
			return bad(why, whylen, "empty address in '[]'");
		if (close[1] == ':') {
			p = close + 2;
			pl = strlen(p);
		} else if (close[1]) {
			return bad(why, whylen, "expected ':PORT' after ']'");
		}
	} else if (spec && *spec) {
		colon = strchr(spec, ':');
		if (colon && strchr(colon + 1, ':')) {
			/* Two colons: a bare IPv6 address, no port. */
			h = spec;
			hl = strlen(spec);
		} else if (colon) {
			if (colon > spec) {
				h = spec;
				hl = colon - spec;
			}
			p = colon + 1;
			pl = strlen(p);
		} else {
			h = spec;
			hl = strlen(spec);
		}
	}
	if (mgc_parse_u64(p, pl, &pv) || pv < 1 || pv > 65535)
		return bad(why, whylen, "port must be a number from 1 to 65535");
	if (copy_part(host, hostlen, h, hl) || copy_part(port, portlen, p, pl))
		return bad(why, whylen, "address too long");
	return 0;
}

/* ---- messages ---- */

/* The '\n' ending the line at p, within the line limit. */
static int find_line(const char *p, size_t len, const char **nl,
		     char *why, size_t whylen)
{
	size_t scan = len > MGC_LINE_MAX ? MGC_LINE_MAX + 1 : len;

	*nl = memchr(p, '\n', scan);
	if (*nl)
		return 1;
	if (len > MGC_LINE_MAX) {
		fail(why, whylen, "line longer than %u bytes", MGC_LINE_MAX);
		return -EMSGSIZE;
	}
	return 0;
}

/* Does the line start with word w, followed by a blank or its end? */
static bool starts_word(const char *s, size_t len, const char *w)
{
	size_t wl = strlen(w);

	return len >= wl && !memcmp(s, w, wl) && (len == wl || is_blank(s[wl]));
}

/* The count word of "B <n>" and "D <n>": exactly two words. */
static int count_line(const char *s, size_t len, __u64 *n)
{
	const char *p = s + 1, *end = s + len, *w, *x;
	size_t wl, xl;

	if (!next_word(&p, end, &w, &wl) || mgc_parse_u64(w, wl, n) ||
	    next_word(&p, end, &x, &xl))
		return -1;
	return 0;
}

ssize_t mgc_frame(const char *buf, size_t len, struct mgc_msg *m,
		  char *why, size_t whylen)
{
	char ex[4 * MGC_EXCERPT + 8];
	const char *nl, *p, *end = buf + len, *w;
	size_t wl, ll, i;
	__u64 lines = 0;
	int r;

	r = find_line(buf, len, &nl, why, whylen);
	if (r <= 0)
		return r;
	ll = nl - buf;
	memset(m, 0, sizeof(*m));
	m->text = buf;
	m->line_len = ll;
	m->all = buf;
	m->body = nl + 1;
	if (starts_word(buf, ll, "OK")) {
		m->kind = MGC_MSG_OK;
		/* A table's OK says how many lines follow: "OK <n> ...". */
		p = buf + 2;
		if (next_word(&p, nl, &w, &wl) && !mgc_parse_u64(w, wl, &lines)) {
			if (lines > MGC_TABLE_MAX) {
				fail(why, whylen, "table of %llu lines (more than %u): '%s'",
				     (unsigned long long)lines, MGC_TABLE_MAX,
				     excerpt(ex, sizeof(ex), buf, ll));
				return -EMSGSIZE;
			}
		}
	} else if (starts_word(buf, ll, "ERR")) {
		m->kind = MGC_MSG_ERR;
	} else if (starts_word(buf, ll, "B")) {
		m->kind = MGC_MSG_FRAME;
		if (count_line(buf, ll, &m->n))
			return fail(why, whylen, "malformed frame header '%s'",
				    excerpt(ex, sizeof(ex), buf, ll));
		if (m->n > MGC_FRAME_MAX) {
			fail(why, whylen, "frame of %llu bytes (more than %u)",
			     (unsigned long long)m->n, MGC_FRAME_MAX);
			return -EMSGSIZE;
		}
		if ((size_t)(end - m->body) < m->n)
			return 0;
		m->body_len = m->n;
		m->all_len = m->body + m->n - buf;
		return m->all_len;
	} else if (starts_word(buf, ll, "D")) {
		m->kind = MGC_MSG_DROP;
		if (count_line(buf, ll, &m->n))
			return fail(why, whylen, "malformed drop line '%s'",
				    excerpt(ex, sizeof(ex), buf, ll));
	} else if (starts_word(buf, ll, "A")) {
		m->kind = MGC_MSG_AGG;
		/* "A <key> <n> ...": the third word counts the entry lines. */
		p = buf + 1;
		if (!next_word(&p, nl, &w, &wl) || !next_word(&p, nl, &w, &wl) ||
		    mgc_parse_u64(w, wl, &lines))
			return fail(why, whylen, "malformed AGG report header '%s'",
				    excerpt(ex, sizeof(ex), buf, ll));
		if (lines > MGC_TABLE_MAX) {
			fail(why, whylen, "AGG report of %llu entries (more than %u)",
			     (unsigned long long)lines, MGC_TABLE_MAX);
			return -EMSGSIZE;
		}
	} else {
		m->kind = MGC_MSG_LINE;
	}

	m->n = m->kind == MGC_MSG_DROP ? m->n : lines;
	p = nl + 1;
	for (i = 0; i < lines; i++) {
		r = find_line(p, end - p, &nl, why, whylen);
		if (r <= 0)
			return r;
		p = nl + 1;
	}
	m->body_len = p - m->body;
	m->all_len = p - buf;
	return m->all_len;
}

/* ---- text helpers ---- */

ssize_t mgc_unescape(const char *in, size_t len, char *out, size_t outlen)
{
	size_t i, o = 0;

	for (i = 0; i < len; i++) {
		char c = in[i];

		if (c == '%') {
			int hi, lo;

			if (len - i < 3)
				return -EINVAL;
			hi = mg_hexval(in[i + 1]);
			lo = mg_hexval(in[i + 2]);
			if (hi < 0 || lo < 0 || (!hi && !lo))
				return -EINVAL;
			c = hi << 4 | lo;
			i += 2;
		} else if (!c) {
			return -EINVAL;
		}
		if (o + 1 >= outlen)
			return -ENOSPC;
		out[o++] = c;
	}
	if (o >= outlen)
		return -ENOSPC;
	out[o] = '\0';
	return o;
}

const char *mgc_escape(char *buf, size_t len, const char *s)
{
	return mg_escape(buf, len, s, MG_ESC_SPACE);
}

/* ---- key=value words ---- */

int mgc_kvs_parse(struct mgc_kvs *kv, const char *s, size_t len,
		  char *why, size_t whylen)
{
	char ex[4 * MGC_EXCERPT + 8];
	const char *p = s, *end = s + len, *w;
	size_t wl, n = 0;

	memset(kv, 0, sizeof(*kv));
	while (next_word(&p, end, &w, &wl))
		n++;
	kv->text = malloc(len + 1);
	kv->v = calloc(n ? n : 1, sizeof(*kv->v));
	if (!kv->text || !kv->v) {
		mgc_kvs_free(kv);
		return -ENOMEM;
	}
	memcpy(kv->text, s, len);
	kv->text[len] = '\0';
	p = kv->text;
	end = kv->text + len;
	while (next_word(&p, end, &w, &wl)) {
		char *word = (char *)w, *eq = memchr(word, '=', wl);

		if (!eq || eq == word) {
			excerpt(ex, sizeof(ex), w, wl);
			mgc_kvs_free(kv);
			return fail(why, whylen, "expected key=value, not '%s'", ex);
		}
		/* In place: the blank after the word (or the end) becomes NUL. */
		word[wl] = '\0';
		*eq = '\0';
		kv->v[kv->n].key = word;
		kv->v[kv->n].value = eq + 1;
		kv->n++;
		if (p < end)
			p++;
	}
	return 0;
}

const char *mgc_kvs_get(const struct mgc_kvs *kv, const char *key)
{
	size_t i;

	for (i = 0; i < kv->n; i++)
		if (!strcmp(kv->v[i].key, key))
			return kv->v[i].value;
	return NULL;
}

void mgc_kvs_free(struct mgc_kvs *kv)
{
	free(kv->text);
	free(kv->v);
	memset(kv, 0, sizeof(*kv));
}

/* A number the table names at an offset of a struct. */
struct field {
	const char *key;
	size_t off;
};

/* Every field of the table must be there, a number: what says what. */
static int take_fields(const struct mgc_kvs *kv, const struct field *f,
		       size_t nf, void *base, const char *what,
		       char *why, size_t whylen)
{
	char ex[4 * MGC_EXCERPT + 8];
	size_t i;

	for (i = 0; i < nf; i++) {
		const char *v = mgc_kvs_get(kv, f[i].key);

		if (!v)
			return fail(why, whylen, "%s: no %s=", what, f[i].key);
		if (mgc_parse_u64(v, strlen(v), (__u64 *)((char *)base + f[i].off)))
			return fail(why, whylen, "%s: %s=%s is not a number",
				    what, f[i].key,
				    excerpt(ex, sizeof(ex), v, strlen(v)));
	}
	return 0;
}

/* A word of a fixed set: its index, or -1. */
static int one_of(const char *v, const char *const *set, size_t n)
{
	size_t i;

	for (i = 0; v && i < n; i++)
		if (!strcmp(v, set[i]))
			return i;
	return -1;
}

static const char *const up_down[] = { "down", "up" };

/* The value of key as a number. 0, or -EINVAL if absent or not one. */
static int kv_u64(const struct mgc_kvs *kv, const char *key, __u64 *v)
{
	const char *s = mgc_kvs_get(kv, key);

	return s ? mgc_parse_u64(s, strlen(s), v) : -EINVAL;
}

/* ---- HELLO ---- */

int mgc_parse_hello(const char *line, size_t len, struct mgc_hello *h,
		    char *why, size_t whylen)
{
	static const char *const orders[] = { "le", "be" };
	char ex[4 * MGC_EXCERPT + 8];
	const char *p = line, *end = line + len, *w;
	const char *order, *module;
	__u64 version, cpus = 0, format = 0;
	size_t wl;
	int r;

	memset(h, 0, sizeof(*h));
	excerpt(ex, sizeof(ex), line, len);
	if (!next_word(&p, end, &w, &wl) || !word_eq(w, wl, "OK") ||
	    !next_word(&p, end, &w, &wl) || !word_eq(w, wl, "magnet") ||
	    !next_word(&p, end, &w, &wl))
		return fail(why, whylen, "not a HELLO reply: '%s'", ex);
	if (mgc_parse_u64(w, wl, &version) || version > UINT32_MAX)
		return fail(why, whylen, "HELLO: bad protocol version in '%s'", ex);
	h->version = version;
	if (version != MGC_PROTO_VERSION)
		return 0;

	r = mgc_kvs_parse(&h->kv, p, end - p, why, whylen);
	if (r)
		return r;
	h->node = mgc_kvs_get(&h->kv, "node");
	h->clock = mgc_kvs_get(&h->kv, "clock");
	order = mgc_kvs_get(&h->kv, "order");
	module = mgc_kvs_get(&h->kv, "module");
	if (!h->node || !*h->node)
		r = fail(why, whylen, "HELLO: no node=");
	else if (!h->clock || !*h->clock)
		r = fail(why, whylen, "HELLO: no clock=");
	else if (one_of(order, orders, 2) < 0)
		r = fail(why, whylen, "HELLO: order= must be le or be");
	else if (one_of(module, up_down, 2) < 0)
		r = fail(why, whylen, "HELLO: module= must be up or down");
	else if (kv_u64(&h->kv, "cpus", &cpus) || !cpus || cpus > UINT32_MAX)
		r = fail(why, whylen, "HELLO: cpus= must be a number from 1");
	else if (kv_u64(&h->kv, "format", &format) || format > UINT32_MAX)
		r = fail(why, whylen, "HELLO: format= must be a number");
	if (r) {
		mgc_hello_free(h);
		return r;
	}
	h->version = version;
	h->cpus = cpus;
	h->format = format;
	h->big_endian = !strcmp(order, "be");
	h->module_up = !strcmp(module, "up");
	return 0;
}

void mgc_hello_free(struct mgc_hello *h)
{
	mgc_kvs_free(&h->kv);
	memset(h, 0, sizeof(*h));
}

/* ---- tables ---- */

/*
 * "OK <n> <noun> ..." and its lines: *n, the first line's rest after the
 * noun, and where the lines start. The lines are then walked with
 * next_line(); their count is checked against n by the caller.
 */
static int table_head(const char *text, size_t len, const char *noun,
		      __u64 *n, const char **rest, size_t *rest_len,
		      const char **lines, char *why, size_t whylen)
{
	char ex[4 * MGC_EXCERPT + 8];
	const char *nl = memchr(text, '\n', len), *end, *p = text, *w;
	size_t wl;

	end = nl ? nl : text + len;
	excerpt(ex, sizeof(ex), text, end - text);
	if (!next_word(&p, end, &w, &wl) || !word_eq(w, wl, "OK") ||
	    !next_word(&p, end, &w, &wl) || mgc_parse_u64(w, wl, n) ||
	    !next_word(&p, end, &w, &wl) || !word_eq(w, wl, noun))
		return fail(why, whylen, "expected 'OK <n> %s', not '%s'", noun, ex);
	*rest = p;
	*rest_len = end - p;
	*lines = nl ? nl + 1 : text + len;
	return 0;
}

/* The next line of [*p, end), without its '\n'; false at the end. */
static bool next_line(const char **p, const char *end, const char **l,
		      size_t *ll)
{
	const char *nl;

	if (*p >= end)
		return false;
	nl = memchr(*p, '\n', end - *p);
	*l = *p;
	*ll = (nl ? nl : end) - *p;
	*p = nl ? nl + 1 : end;
	return true;
}

static int count_mismatch(const char *what, __u64 n, size_t got,
			  char *why, size_t whylen)
{
	return fail(why, whylen, "%s: %llu lines announced, %s", what,
		    (unsigned long long)n,
		    got < n ? "fewer follow" : "more follow");
}

/* ---- PROBES ---- */

struct probe_nums {
	__u64 nargs, hits, missed;
};

static const struct field probe_fields[] = {
	{ "nargs", offsetof(struct probe_nums, nargs) },
	{ "hits", offsetof(struct probe_nums, hits) },
	{ "missed", offsetof(struct probe_nums, missed) },
};

/*
 * A probe name: %XX-decoded. The document escapes bytes outside !..~ but
 * leaves it open whether '%' itself is (kretprobe names such as
 * "vfs_read%return" contain one): a name that does not decode is taken
 * as it is.
 */
static char *probe_name(const char *w, size_t wl)
{
	char *s = malloc(wl + 1);

	if (!s)
		return NULL;
	if (mgc_unescape(w, wl, s, wl + 1) < 0) {
		memcpy(s, w, wl);
		s[wl] = '\0';
	}
	return s;
}

static int probe_line(struct mg_probe *pr, const char *l, size_t ll,
		      size_t i, char *why, size_t whylen)
{
	char ex[4 * MGC_EXCERPT + 8], what[48];
	const char *p = l, *end = l + ll, *idw, *tw, *nw;
	size_t idl, tl, nl;
	struct probe_nums nums;
	struct mgc_kvs kv;
	__u64 id;
	int r;

	snprintf(what, sizeof(what), "PROBES line %zu", i + 1);
	excerpt(ex, sizeof(ex), l, ll);
	if (!next_word(&p, end, &idw, &idl) || !next_word(&p, end, &tw, &tl) ||
	    !next_word(&p, end, &nw, &nl))
		return fail(why, whylen, "%s: expected '<id> <type> <name> ...', not '%s'",
			    what, ex);
	if (mgc_parse_u64(idw, idl, &id) || id > MAGNET_EVENT_MAX)
		return fail(why, whylen, "%s: bad probe id in '%s'", what, ex);
	r = mgc_kvs_parse(&kv, p, end - p, why, whylen);
	if (r)
		return r;
	r = take_fields(&kv, probe_fields, 3, &nums, what, why, whylen);
	mgc_kvs_free(&kv);
	if (r)
		return r;
	if (nums.nargs > MAGNET_ARGS_MAX)
		return fail(why, whylen, "%s: nargs=%llu (at most %u)", what,
			    (unsigned long long)nums.nargs, MAGNET_ARGS_MAX);
	memset(pr, 0, sizeof(*pr));
	pr->id = id;
	pr->nargs = nums.nargs;
	pr->hits = nums.hits;
	pr->missed = nums.missed;
	pr->type = strndup(tw, tl);
	pr->target = probe_name(nw, nl);
	if (!pr->type || !pr->target) {
		free(pr->type);
		free(pr->target);
		return -ENOMEM;
	}
	return 0;
}

int mgc_parse_probes(const char *text, size_t len, struct mg_probe_table *t,
		     char *why, size_t whylen)
{
	const char *rest, *p, *end = text + len, *l;
	size_t rest_len, ll, i = 0;
	__u64 n;
	int r;

	t->n = 0;
	t->v = NULL;
	r = table_head(text, len, "probes", &n, &rest, &rest_len, &p,
		       why, whylen);
	if (r)
		return r;
	if (n > MGC_TABLE_MAX)
		return fail(why, whylen, "PROBES: %llu lines (more than %u)",
			    (unsigned long long)n, MGC_TABLE_MAX);
	t->v = calloc(n ? n : 1, sizeof(*t->v));
	if (!t->v)
		return -ENOMEM;
	while (next_line(&p, end, &l, &ll)) {
		if (i == n) {
			r = count_mismatch("PROBES", n, i + 1, why, whylen);
			break;
		}
		r = probe_line(&t->v[i], l, ll, i, why, whylen);
		if (r)
			break;
		t->n = ++i;
	}
	if (!r && i < n)
		r = count_mismatch("PROBES", n, i, why, whylen);
	if (r)
		mg_probes_free(t);
	return r;
}

/* ---- STATS ---- */

#define SF(k)	{ #k, offsetof(struct mgc_stats, k) }
static const struct field stats_fields[] = {
	SF(uptime), SF(reloads), SF(clients), SF(subscribers),
	SF(aggregators), SF(read), SF(read_bytes), SF(read_lost),
	SF(queue_dropped), SF(sent), SF(client_dropped), SF(cut_off),
	SF(refused), SF(trace_files), SF(trace_bytes), SF(trace_dropped),
	SF(trace_errors),
};
#undef SF

struct cpu_nums {
	__u64 cpu, written, bytes, lost_full, lost_too_big, lost_nesting;
	__u64 overwritten, read, read_lost;
};

#define CF(k)	{ #k, offsetof(struct cpu_nums, k) }
static const struct field cpu_fields[] = {
	CF(cpu), CF(written), CF(bytes), CF(lost_full), CF(lost_too_big),
	CF(lost_nesting), CF(overwritten), CF(read), CF(read_lost),
};
#undef CF

static int stats_cpu_line(struct mgc_stats_cpu *c, const char *l, size_t ll,
			  size_t i, char *why, size_t whylen)
{
	struct cpu_nums v;
	struct mgc_kvs kv;
	char what[48];
	int r;

	snprintf(what, sizeof(what), "STATS line %zu", i + 1);
	r = mgc_kvs_parse(&kv, l, ll, why, whylen);
	if (r)
		return r;
	r = take_fields(&kv, cpu_fields, sizeof(cpu_fields) / sizeof(cpu_fields[0]),
			&v, what, why, whylen);
	mgc_kvs_free(&kv);
	if (r)
		return r;
	if (v.cpu > UINT32_MAX)
		return fail(why, whylen, "%s: cpu=%llu is out of range", what,
			    (unsigned long long)v.cpu);
	c->cpu = v.cpu;
	c->written = v.written;
	c->bytes = v.bytes;
	c->lost_full = v.lost_full;
	c->lost_too_big = v.lost_too_big;
	c->lost_nesting = v.lost_nesting;
	c->overwritten = v.overwritten;
	c->read = v.read;
	c->read_lost = v.read_lost;
	return 0;
}

int mgc_parse_stats(const char *text, size_t len, struct mgc_stats *s,
		    char *why, size_t whylen)
{
	const char *rest, *p, *end = text + len, *l;
	size_t rest_len, ll, i = 0;
	__u64 n;
	int m, r;

	memset(s, 0, sizeof(*s));
	r = table_head(text, len, "cpus", &n, &rest, &rest_len, &p, why, whylen);
	if (r)
		return r;
	if (n > MGC_TABLE_MAX)
		return fail(why, whylen, "STATS: %llu lines (more than %u)",
			    (unsigned long long)n, MGC_TABLE_MAX);
	r = mgc_kvs_parse(&s->kv, rest, rest_len, why, whylen);
	if (r)
		return r;
	r = take_fields(&s->kv, stats_fields,
			sizeof(stats_fields) / sizeof(stats_fields[0]), s,
			"STATS", why, whylen);
	m = one_of(mgc_kvs_get(&s->kv, "module"), up_down, 2);
	if (!r && m < 0)
		r = fail(why, whylen, "STATS: module= must be up or down");
	s->module_up = m == 1;
	if (!r) {
		s->cpu = calloc(n ? n : 1, sizeof(*s->cpu));
		if (!s->cpu)
			r = -ENOMEM;
	}
	while (!r && next_line(&p, end, &l, &ll)) {
		if (i == n) {
			r = count_mismatch("STATS", n, i + 1, why, whylen);
			break;
		}
		r = stats_cpu_line(&s->cpu[i], l, ll, i, why, whylen);
		s->ncpus = ++i;
	}
	if (!r && i < n)
		r = count_mismatch("STATS", n, i, why, whylen);
	if (r)
		mgc_stats_free(s);
	return r;
}

void mgc_stats_free(struct mgc_stats *s)
{
	mgc_kvs_free(&s->kv);
	free(s->cpu);
	memset(s, 0, sizeof(*s));
}

/* ---- AGG ---- */

#define AF(k)	{ #k, offsetof(struct mgc_agg, k) }
static const struct field agg_fields[] = {
	AF(ts), AF(interval), AF(events), AF(bytes), AF(keys), AF(lost),
	AF(evicted), AF(evicted_events), AF(unkeyed), AF(dropped),
};
#undef AF

/* The keys whose values are numbers (all but comm). */
static const char *const numeric_keys[] = { "probe", "pid", "tgid", "cgroup" };

/* "%.1f" as the server prints it: digits, then maybe '.' and digits. */
static int parse_rate(const char *s, size_t len, double *v)
{
	const char *dot = memchr(s, '.', len);
	size_t il = dot ? (size_t)(dot - s) : len, fl = dot ? len - il - 1 : 0;
	__u64 ip, fp = 0;
	double scale = 1;
	size_t i;

	if (mgc_parse_u64(s, il, &ip) || (dot && mgc_parse_u64(dot + 1, fl, &fp)) ||
	    fl > 9)
		return -EINVAL;
	for (i = 0; i < fl; i++)
		scale *= 10;
	*v = (double)ip + (double)fp / scale;
	return 0;
}

/* Unescape a word into the report's string storage. */
static char *agg_string(char **store, const char *w, size_t wl)
{
	char *s = *store;
	ssize_t n = mgc_unescape(w, wl, s, wl + 1);

	if (n < 0)
		return NULL;
	*store += n + 1;
	return s;
}

static int agg_entry(struct mgc_agg *a, struct mgc_agg_entry *e, char **store,
		     const char *l, size_t ll, size_t i, char *why,
		     size_t whylen)
{
	char ex[4 * MGC_EXCERPT + 8];
	const char *p = l, *end = l + ll, *w[5];
	size_t wl[5], k;

	excerpt(ex, sizeof(ex), l, ll);
	for (k = 0; k < 5; k++)
		if (!next_word(&p, end, &w[k], &wl[k]))
			return fail(why, whylen, "AGG entry %zu: expected '<value> <events> <bytes> <rate> <label>', not '%s'",
				    i + 1, ex);
	/* Words added after the label by a later server are ignored. */
	e->value = agg_string(store, w[0], wl[0]);
	if (!e->value)
		return fail(why, whylen, "AGG entry %zu: bad %%XX escape in the value of '%s'",
			    i + 1, ex);
	if (a->numeric && mgc_parse_u64(w[0], wl[0], &e->id))
		return fail(why, whylen, "AGG entry %zu: %s value is not a number: '%s'",
			    i + 1, a->key, ex);
	if (mgc_parse_u64(w[1], wl[1], &e->events) ||
	    mgc_parse_u64(w[2], wl[2], &e->bytes))
		return fail(why, whylen, "AGG entry %zu: bad events or bytes in '%s'",
			    i + 1, ex);
	if (parse_rate(w[3], wl[3], &e->rate))
		return fail(why, whylen, "AGG entry %zu: bad rate in '%s'", i + 1, ex);
	e->label = agg_string(store, w[4], wl[4]);
	if (!e->label)
		return fail(why, whylen, "AGG entry %zu: bad %%XX escape in the label of '%s'",
			    i + 1, ex);
	return 0;
}

static int agg_head(struct mgc_agg *a, const char *l, size_t ll, __u64 *n,
		    char *why, size_t whylen)
{
	char ex[4 * MGC_EXCERPT + 8];
	const char *p = l, *end = l + ll, *w, *kw;
	size_t wl, kl, i;
	int r;

	excerpt(ex, sizeof(ex), l, ll);
	if (!next_word(&p, end, &w, &wl) || !word_eq(w, wl, "A") ||
	    !next_word(&p, end, &kw, &kl) || !next_word(&p, end, &w, &wl) ||
	    mgc_parse_u64(w, wl, n))
		return fail(why, whylen, "expected 'A <key> <n> ...', not '%s'", ex);
	if (kl >= sizeof(a->key))
		return fail(why, whylen, "AGG: key too long in '%s'", ex);
	for (i = 0; i < kl; i++)
		if (kw[i] < 'a' || kw[i] > 'z')
			return fail(why, whylen, "AGG: bad key in '%s'", ex);
	memcpy(a->key, kw, kl);
	a->key[kl] = '\0';
	a->numeric = one_of(a->key, numeric_keys, 4) >= 0;
	if (*n > MGC_TABLE_MAX)
		return fail(why, whylen, "AGG: %llu entries (more than %u)",
			    (unsigned long long)*n, MGC_TABLE_MAX);
	r = mgc_kvs_parse(&a->kv, p, end - p, why, whylen);
	if (r)
		return r;
	return take_fields(&a->kv, agg_fields,
			   sizeof(agg_fields) / sizeof(agg_fields[0]), a,
			   "AGG", why, whylen);
}

int mgc_parse_agg(const char *text, size_t len, struct mgc_agg *a,
		  char *why, size_t whylen)
{
	const char *p = text, *end = text + len, *l;
	size_t ll, i = 0;
	char *store;
	__u64 n = 0;
	int r;

	memset(a, 0, sizeof(*a));
	if (!next_line(&p, end, &l, &ll))
		return fail(why, whylen, "empty AGG report");
	r = agg_head(a, l, ll, &n, why, whylen);
	if (!r) {
		/* Decoding never lengthens a word: the text bounds the strings. */
		a->v = calloc(n ? n : 1, sizeof(*a->v));
		a->strings = malloc(len + 2 * n + 2);
		if (!a->v || !a->strings)
			r = -ENOMEM;
	}
	store = a->strings;
	while (!r && next_line(&p, end, &l, &ll)) {
		if (i == n) {
			r = count_mismatch("AGG", n, i + 1, why, whylen);
			break;
		}
		r = agg_entry(a, &a->v[i], &store, l, ll, i, why, whylen);
		a->n = ++i;
	}
	if (!r && i < n)
		r = count_mismatch("AGG", n, i, why, whylen);
	if (r)
		mgc_agg_free(a);
	return r;
}

void mgc_agg_free(struct mgc_agg *a)
{
	mgc_kvs_free(&a->kv);
	free(a->v);
	free(a->strings);
	memset(a, 0, sizeof(*a));
}

/* ---- JSON records ---- */

/* The unsigned integer after "key": in line, or 0. */
static __u64 json_u64(const char *line, size_t len, const char *key)
{
	const char *p = memmem(line, len, key, strlen(key)), *end = line + len;
	__u64 v = 0;

	if (!p)
		return 0;
	for (p += strlen(key); p < end && *p >= '0' && *p <= '9'; p++)
		v = v * 10 + (*p - '0');
	return v;
}

bool mgc_json_lost(const char *line, size_t len, __u64 *lost)
{
	/*
	 * Inside a JSON string every '"' is escaped, so these bytes can
	 * only be the record's own keys: a probe cannot fake a LOST record.
	 */
	static const char tag[] = "\"id\":1,\"event\":\"lost\",";

	if (!memmem(line, len, tag, sizeof(tag) - 1))
		return false;
	*lost = json_u64(line, len, "\"full\":") +
		json_u64(line, len, "\"too_big\":") +
		json_u64(line, len, "\"nesting\":") +
		json_u64(line, len, "\"overwritten\":");
	return true;
}

/* ---- a connection ---- */

/* Why the connection's last call failed, for the caller to print. */
__attribute__((format(printf, 2, 3)))
static void conn_err(struct mgc_conn *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
}

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Wait for events on fd, up to timeout_ms (-1: forever). poll()'s result. */
static int wait_fd(int fd, short events, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = events };

	return poll(&pfd, 1, timeout_ms);
}

/* Connect one address, waiting up to timeout_ms. 0 or -errno. */
static int connect_one(int fd, const struct addrinfo *ai, int timeout_ms)
{
	socklen_t sl = sizeof(int);
	int e = 0, r;

	if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
		return 0;
	if (errno != EINPROGRESS)
		return -errno;
	r = wait_fd(fd, POLLOUT, timeout_ms);
	if (r < 0)
		return -errno;
	if (!r)
		return -ETIMEDOUT;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl))
		return -errno;
	return -e;
}

int mgc_connect(struct mgc_conn *c, const char *spec, int timeout_ms)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_NUMERICSERV,
	}, *res, *ai;
	char host[MGC_SERVER_MAX - 10], port[8], why[128];
	int e = -ECONNREFUSED, r, one = 1;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	if (mgc_split_addr(spec, host, sizeof(host), port, sizeof(port),
			   why, sizeof(why))) {
		conn_err(c, "bad address '%s': %s", spec, why);
		return -EINVAL;
	}
	snprintf(c->server, sizeof(c->server),
		 strchr(host, ':') ? "[%s]:%s" : "%s:%s", host, port);
	r = getaddrinfo(host, port, &hints, &res);
	if (r) {
		conn_err(c, "cannot resolve '%s': %s", host,
			 r == EAI_SYSTEM ? strerror(errno) : gai_strerror(r));
		return -EHOSTUNREACH;
	}
	/* Every address in turn, as getaddrinfo(3) advises; the last error. */
	for (ai = res; ai; ai = ai->ai_next) {
		c->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
			       SOCK_CLOEXEC, ai->ai_protocol);
		if (c->fd < 0) {
			e = -errno;
			continue;
		}
		e = connect_one(c->fd, ai, timeout_ms);
		if (!e)
			break;
		close(c->fd);
		c->fd = -1;
	}
	freeaddrinfo(res);
	if (e) {
		conn_err(c, "cannot connect to %s: %s%s",
			 c->server, strerror(-e),
			 e == -ECONNREFUSED ? " (is magnetd running?)" : "");
		return e;
	}
	/* Commands are small and each waits for its reply: no Nagle delay. */
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

void mgc_close(struct mgc_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->buf);
	free(c->frame);
	c->fd = -1;
	c->buf = NULL;
	c->frame = NULL;
	c->cap = c->off = c->len = c->frame_cap = 0;
}

int mgc_send(struct mgc_conn *c, const char *lines)
{
	size_t len = strlen(lines), done = 0;
	long long deadline = mono_ms() + MGC_SEND_TIMEOUT_MS;

	while (done < len) {
		ssize_t n = send(c->fd, lines + done, len - done, MSG_NOSIGNAL);
		long long left;

		if (n > 0) {
			done += n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN) {
			int e = errno;

			conn_err(c, "sending to %s: %s",
				 c->server, strerror(e));
			return -e;
		}
		left = deadline - mono_ms();
		if (left <= 0 || wait_fd(c->fd, POLLOUT, left) == 0) {
			conn_err(c, "sending to %s: timed out (the server reads nothing)",
				 c->server);
			return -ETIMEDOUT;
		}
	}
	return 0;
}

ssize_t mgc_fill(struct mgc_conn *c)
{
	ssize_t n;

	if (c->eof)
		return 0;
	/* Pointers handed out by mgc_next are void from here: compact. */
	if (c->off) {
		memmove(c->buf, c->buf + c->off, c->len);
		c->off = 0;
	}
	if (c->len == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : MGC_BUF_MIN;
		char *b;

		if (c->cap >= MGC_BUF_MAX) {
			conn_err(c, "protocol error from %s: a message of more than %u bytes",
				 c->server, MGC_BUF_MAX);
			return -EMSGSIZE;
		}
		if (cap > MGC_BUF_MAX)
			cap = MGC_BUF_MAX;
		b = realloc(c->buf, cap);
		if (!b) {
			conn_err(c, "out of memory");
			return -ENOMEM;
		}
		c->buf = b;
		c->cap = cap;
	}
	n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
	if (n > 0) {
		c->len += n;
		return n;
	}
	if (!n) {
		c->eof = true;
		return 0;
	}
	if (errno == EAGAIN || errno == EINTR)
		return -EAGAIN;
	n = -errno;
	conn_err(c, "reading from %s: %s", c->server,
		 strerror(-n));
	return n;
}

int mgc_next(struct mgc_conn *c, struct mgc_msg *m)
{
	char why[MGC_ERR_MAX - 64];
	ssize_t r;

	if (!c->len)
		return 0;
	r = mgc_frame(c->buf + c->off, c->len, m, why, sizeof(why));
	if (r < 0) {
		conn_err(c, "protocol error from %s: %s",
			 c->server, why);
		return r;
	}
	if (!r) {
		if (!c->eof)
			return 0;
		conn_err(c, "%s closed the connection in the middle of a message",
			 c->server);
		return -EPROTO;
	}
	c->off += r;
	c->len -= r;
	if (m->kind == MGC_MSG_FRAME && m->body_len) {
		/* Records are read in place, which needs 8-byte alignment. */
		if (c->frame_cap < m->body_len) {
			size_t cap = (m->body_len + 7) & ~(size_t)7;
			__u64 *f = realloc(c->frame, cap);

			if (!f) {
				conn_err(c, "out of memory");
				return -ENOMEM;
			}
			c->frame = f;
			c->frame_cap = cap;
		}
		memcpy(c->frame, m->body, m->body_len);
		m->body = (const char *)c->frame;
	}
	return 1;
}

int mgc_recv(struct mgc_conn *c, struct mgc_msg *m, int timeout_ms)
{
	long long deadline = timeout_ms < 0 ? 0 : mono_ms() + timeout_ms;

	for (;;) {
		ssize_t n;
		int r = mgc_next(c, m), left = -1;

		if (r)
			return r;
		if (c->eof) {
			conn_err(c, "%s closed the connection",
				 c->server);
			return 0;
		}
		if (timeout_ms >= 0) {
			long long l = deadline - mono_ms();

			left = l < 0 ? 0 : l;
		}
		r = wait_fd(c->fd, POLLIN, left);
		if (r < 0) {
			r = -errno;
			conn_err(c, "waiting for %s: %s",
				 c->server, strerror(-r));
			return r;
		}
		if (!r) {
			conn_err(c, "no reply from %s within %d ms", c->server,
				 timeout_ms);
			return -ETIMEDOUT;
		}
		n = mgc_fill(c);
		if (n < 0 && n != -EAGAIN)
			return n;
	}
}

int mgc_command(struct mgc_conn *c, const char *cmd, struct mgc_msg *m,
		int timeout_ms)
{
	char line[MGC_CMD_MAX + 2];
	int r;

	if (strlen(cmd) > MGC_CMD_MAX || strchr(cmd, '\n')) {
		conn_err(c, "command longer than %u bytes or with a newline",
			 MGC_CMD_MAX);
		return -EINVAL;
	}
	snprintf(line, sizeof(line), "%s\n", cmd);
	r = mgc_send(c, line);
	if (r) {
		/*
		 * A server that refuses a connection says why and closes
		 * ("ERR too many clients"): that reply may be waiting even
		 * though the send failed, and is the better message.
		 */
		char err[MGC_ERR_MAX];
		struct mgc_msg em;

		memcpy(err, c->err, sizeof(err));
		while (mgc_fill(c) > 0)
			;
		if (mgc_next(c, &em) == 1 && em.kind == MGC_MSG_ERR) {
			*m = em;
			return 1;
		}
		memcpy(c->err, err, sizeof(err));
		return r;
	}
	r = mgc_recv(c, m, timeout_ms);
	if (r == 1 && m->kind != MGC_MSG_OK && m->kind != MGC_MSG_ERR) {
		char ex[4 * MGC_EXCERPT + 8];

		conn_err(c, "protocol error from %s: '%s' before the reply to %s",
			 c->server, excerpt(ex, sizeof(ex), m->text, m->line_len),
			 cmd);
		return -EPROTO;
	}
	return r;
}
