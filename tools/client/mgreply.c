// SPDX-License-Identifier: GPL-2.0
/*
 * mgclient's reply parsers (see mgclient.h): key=value words, and the
 * texts of the HELLO, PROBES, STATS and AGG (and AGG net) replies and of
 * JSON records.
 * Pure functions over bytes, no I/O; mgclient.c frames the messages they
 * take. The protocol is docs/protocol.md; the comments here say only what
 * the document leaves to a client.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/magnet.h>

#include "mgc_int.h"
#include "mgclient.h"

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

	/* kv->v[i] is set for i < kv->n; the analyser cannot tell (calloc'd). */
	for (i = 0; i < kv->n && kv->v[i].key; i++)
		if (!strcmp(kv->v[i].key, key))
			return kv->v[i].value;
	return NULL;
}

void mgc_kvs_free(struct mgc_kvs *kv)
{
	free(kv->text);
	free(kv->v);
	/* Field by field: the analyser does not see a memset() clear them. */
	kv->text = NULL;
	kv->v = NULL;
	kv->n = 0;
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
	/* Set on failure too: the analyser does not see that fail() is nonzero. */
	*n = 0;
	*rest = *lines = end;
	*rest_len = 0;
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
	const char *p = l, *end = l + ll, *idw, *tw, *nw, *sym;
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
	if (r) {
		mgc_kvs_free(&kv);
		return r;
	}
	if (nums.nargs > MAGNET_ARGS_MAX) {
		mgc_kvs_free(&kv);
		return fail(why, whylen, "%s: nargs=%llu (at most %u)", what,
			    (unsigned long long)nums.nargs, MAGNET_ARGS_MAX);
	}
	sym = mgc_kvs_get(&kv, "symbol");
	memset(pr, 0, sizeof(*pr));
	pr->id = id;
	pr->nargs = nums.nargs;
	pr->hits = nums.hits;
	pr->missed = nums.missed;
	pr->type = strndup(tw, tl);
	pr->name = probe_name(nw, nl);
	/* The target: symbol= (a daemon before it named probes by it). */
	pr->target = sym ? probe_name(sym, strlen(sym)) : probe_name(nw, nl);
	mgc_kvs_free(&kv);
	if (!pr->type || !pr->name || !pr->target) {
		mg_probe_clear(pr);
		return -ENOMEM;
	}
	return 0;
}

int mgc_parse_probes(const char *text, size_t len, struct mg_probe_table *t,
		     char *why, size_t whylen)
{
	unsigned char seen[MG_PROBES_MAX / 8] = { 0 };
	const char *rest, *p, *end = text + len, *l;
	size_t rest_len, ll, i = 0;
	unsigned int id;
	__u64 n;
	int r;

	memset(t, 0, sizeof(*t));
	r = table_head(text, len, "probes", &n, &rest, &rest_len, &p,
		       why, whylen);
	if (r)
		return r;
	/* One line per event id at most: a longer table is no probe table. */
	if (n > MG_PROBES_MAX)
		return fail(why, whylen, "PROBES: %llu lines (more than the %u event ids)",
			    (unsigned long long)n, MG_PROBES_MAX);
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
		id = t->v[i - 1].id;
		if (seen[id / 8] & (1U << id % 8)) {
			r = fail(why, whylen, "PROBES line %zu: id %u named twice",
				 i, id);
			break;
		}
		seen[id / 8] |= 1U << id % 8;
	}
	if (!r && i < n)
		r = count_mismatch("PROBES", n, i, why, whylen);
	if (!r)
		r = mg_probes_index(t);
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

/* Slurm's key=value words in [p, end), each once (docs/protocol.md). */
static int slurm_words(const char *p, const char *end, struct mgc_slurm *s)
{
	static const char step_chars[] = "0123456789abcdefghijklmnopqrstuvwxyz+";
	static const char node_chars[] = "0123456789abcdefghijklmnopqrstuvwxyz"
					 "ABCDEFGHIJKLMNOPQRSTUVWXYZ-._";
	const char *w;
	size_t wl, k;
	__u64 v;

	memset(s, 0, sizeof(*s));
	while (next_word(&p, end, &w, &wl)) {
		const char *eq = memchr(w, '=', wl), *val;
		size_t kl, vl;

		if (!eq)
			continue;
		kl = eq - w;
		val = eq + 1;
		vl = w + wl - val;
		if (word_eq(w, kl, "slurm_job_id")) {
			if (mgc_parse_u64(val, vl, &v) || !v || v > UINT32_MAX)
				return -EINVAL;
			s->is = true;
			s->job = (__u32)v;
		} else if (word_eq(w, kl, "uid")) {
			if (mgc_parse_u64(val, vl, &v) || v > UINT32_MAX)
				return -EINVAL;
			s->has_uid = true;
			s->uid = (__u32)v;
		} else if (word_eq(w, kl, "slurm_stepd")) {
			if (!word_eq(val, vl, "1"))
				return -EINVAL;
			s->stepd = true;
		} else if (word_eq(w, kl, "slurm_step") || word_eq(w, kl, "slurm_node")) {
			bool step = word_eq(w, kl, "slurm_step");
			char *out = step ? s->step : s->node;
			size_t size = step ? sizeof(s->step) : sizeof(s->node);

			if (!vl || vl >= size)
				return -EINVAL;
			for (k = 0; k < vl; k++)
				if (!val[k] || !strchr(step ? step_chars : node_chars, val[k]))
					return -EINVAL;
			memcpy(out, val, vl);
			out[vl] = '\0';
		}
	}
	/* The other words are nothing without the job. */
	if (!s->is)
		memset(s, 0, sizeof(*s));
	return 0;
}

const char *mgc_slurm_name(const struct mgc_slurm *s, char *buf, size_t size)
{
	char uid[24] = "";

	if (s->has_uid)
		snprintf(uid, sizeof(uid), ",uid=%u", s->uid);
	snprintf(buf, size, "slurm=%u%s%s%s%s%s%s", s->job, s->step[0] ? "." : "",
		 s->step, s->stepd ? "/slurmstepd" : "", s->node[0] ? ",node=" : "",
		 s->node, uid);
	return buf;
}

static int agg_entry(struct mgc_agg *a, struct mgc_agg_entry *e, char **store,
		     const char *l, size_t ll, size_t i, char *why,
		     size_t whylen)
{
	char ex[4 * MGC_EXCERPT + 8];
	const char *p = l, *end = l + ll, *w[5], *tag;
	size_t wl[5], k, tl;

	excerpt(ex, sizeof(ex), l, ll);
	/* The tag: no entry line reads as a reply ("OK" is a comm too). */
	if (!next_word(&p, end, &tag, &tl) || !word_eq(tag, tl, "E"))
		return fail(why, whylen, "AGG entry %zu: expected 'E <value> <events> <bytes> <rate> <label>', not '%s'",
			    i + 1, ex);
	for (k = 0; k < 5; k++)
		if (!next_word(&p, end, &w[k], &wl[k]))
			return fail(why, whylen, "AGG entry %zu: expected 'E <value> <events> <bytes> <rate> <label>', not '%s'",
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
	if (slurm_words(p, end, &e->slurm))
		return fail(why, whylen, "AGG entry %zu: bad Slurm word in '%s'", i + 1, ex);
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
	if (!strcmp(a->key, "net"))
		return fail(why, whylen, "AGG: a net report has J and P lines, not entries (mgc_parse_net)");
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

/* ---- AGG net ---- */

#define NF(k)	{ #k, offsetof(struct mgc_net, k) }
static const struct field net_fields[] = {
	NF(ts), NF(interval), NF(packets), NF(bytes), NF(jobs), NF(peers),
	NF(lost), NF(evicted_jobs), NF(evicted_job_bytes), NF(evicted_peers),
	NF(evicted_peer_bytes), NF(unkeyed), NF(dropped), NF(skipped),
};
#undef NF

static const char net_j_form[] =
	"J <job> <proto> <tx_packets> <tx_bytes> <rx_packets> <rx_bytes> <label>";
static const char net_p_form[] =
	"P <job> <proto> <peer> <tx_packets> <tx_bytes> <rx_packets> <rx_bytes> [<local>]";

/* "<tx_packets> <tx_bytes> <rx_packets> <rx_bytes>" of w[0..3]. */
static int net_counts(const char *const *w, const size_t *wl, __u64 *v)
{
	size_t k;

	for (k = 0; k < 4; k++)
		if (mgc_parse_u64(w[k], wl[k], &v[k]))
			return -EINVAL;
	return 0;
}

/* Line i, a J or P line, into the report's next entry of its kind. */
static int net_line(struct mgc_net *a, char **store, const char *l, size_t ll,
		    size_t i, char *why, size_t whylen)
{
	char ex[4 * MGC_EXCERPT + 8];
	const char *p = l, *end = l + ll, *w[8];
	size_t wl[8], k;
	bool peer;
	__u64 job, c[4];
	char **proto, **name;

	excerpt(ex, sizeof(ex), l, ll);
	if (!next_word(&p, end, &w[0], &wl[0]))
		return fail(why, whylen, "AGG net line %zu: empty", i + 1);
	if (word_eq(w[0], wl[0], "J"))
		peer = false;
	else if (word_eq(w[0], wl[0], "P"))
		peer = true;
	else
		return fail(why, whylen, "AGG net line %zu: expected a J or P line, not '%s'",
			    i + 1, ex);
	if (!peer && a->npeers)
		return fail(why, whylen, "AGG net line %zu: a J line after the P lines: '%s'",
			    i + 1, ex);
	for (k = 1; k < 8; k++)
		if (!next_word(&p, end, &w[k], &wl[k]))
			return fail(why, whylen, "AGG net line %zu: expected '%s', not '%s'",
				    i + 1, peer ? net_p_form : net_j_form, ex);
	if (mgc_parse_u64(w[1], wl[1], &job) || job > UINT32_MAX)
		return fail(why, whylen, "AGG net line %zu: bad job (a 32-bit number) in '%s'",
			    i + 1, ex);
	if (net_counts(w + (peer ? 4 : 3), wl + (peer ? 4 : 3), c))
		return fail(why, whylen, "AGG net line %zu: bad packets or bytes in '%s'",
			    i + 1, ex);
	if (peer) {
		struct mgc_net_peer *e = &a->peer[a->npeers];

		proto = &e->proto;
		name = &e->peer;
		e->job = job;
		e->tx_packets = c[0];
		e->tx_bytes = c[1];
		e->rx_packets = c[2];
		e->rx_bytes = c[3];
	} else {
		struct mgc_net_job *e = &a->job[a->njobs];

		proto = &e->proto;
		name = &e->label;
		e->job = job;
		e->tx_packets = c[0];
		e->tx_bytes = c[1];
		e->rx_packets = c[2];
		e->rx_bytes = c[3];
		if (slurm_words(p, end, &e->slurm))
			return fail(why, whylen, "AGG net line %zu: bad Slurm word in '%s'",
				    i + 1, ex);
	}
	*proto = agg_string(store, w[2], wl[2]);
	if (!*proto)
		return fail(why, whylen, "AGG net line %zu: bad %%XX escape in the proto of '%s'",
			    i + 1, ex);
	*name = agg_string(store, w[peer ? 3 : 7], wl[peer ? 3 : 7]);
	if (!*name)
		return fail(why, whylen, "AGG net line %zu: bad %%XX escape in the %s of '%s'",
			    i + 1, peer ? "peer" : "label", ex);
	/* A server before the local end: none (NULL). */
	if (peer && next_word(&p, end, &w[0], &wl[0])) {
		a->peer[a->npeers].local = agg_string(store, w[0], wl[0]);
		if (!a->peer[a->npeers].local)
			return fail(why, whylen, "AGG net line %zu: bad %%XX escape in the local end of '%s'",
				    i + 1, ex);
	}
	if (peer)
		a->npeers++;
	else
		a->njobs++;
	return 0;
}

static int net_head(struct mgc_net *a, const char *l, size_t ll, __u64 *n,
		    char *why, size_t whylen)
{
	char ex[4 * MGC_EXCERPT + 8];
	const char *p = l, *end = l + ll, *w;
	size_t wl;
	int r;

	excerpt(ex, sizeof(ex), l, ll);
	if (!next_word(&p, end, &w, &wl) || !word_eq(w, wl, "A") ||
	    !next_word(&p, end, &w, &wl) || !word_eq(w, wl, "net") ||
	    !next_word(&p, end, &w, &wl) || mgc_parse_u64(w, wl, n))
		return fail(why, whylen, "expected 'A net <n> ...', not '%s'", ex);
	if (*n > MGC_TABLE_MAX)
		return fail(why, whylen, "AGG net: %llu lines (more than %u)",
			    (unsigned long long)*n, MGC_TABLE_MAX);
	r = mgc_kvs_parse(&a->kv, p, end - p, why, whylen);
	if (r)
		return r;
	return take_fields(&a->kv, net_fields,
			   sizeof(net_fields) / sizeof(net_fields[0]), a,
			   "AGG net", why, whylen);
}

int mgc_parse_net(const char *text, size_t len, struct mgc_net *a,
		  char *why, size_t whylen)
{
	const char *p = text, *end = text + len, *l;
	size_t ll, i = 0;
	char *store;
	__u64 n = 0;
	int r;

	memset(a, 0, sizeof(*a));
	if (!next_line(&p, end, &l, &ll))
		return fail(why, whylen, "empty AGG net report");
	r = net_head(a, l, ll, &n, why, whylen);
	if (!r) {
		/*
		 * Decoding never lengthens a word, and each of a line's
		 * (at most 3) strings is followed by a blank or its line's
		 * end: the text and a NUL per string bound the strings.
		 */
		a->job = calloc(n ? n : 1, sizeof(*a->job));
		a->peer = calloc(n ? n : 1, sizeof(*a->peer));
		a->strings = malloc(len + 3 * n + 2);
		if (!a->job || !a->peer || !a->strings)
			r = -ENOMEM;
	}
	store = a->strings;
	while (!r && next_line(&p, end, &l, &ll)) {
		if (i == n) {
			r = count_mismatch("AGG net", n, i + 1, why, whylen);
			break;
		}
		r = net_line(a, &store, l, ll, i, why, whylen);
		i++;
	}
	if (!r && i < n)
		r = count_mismatch("AGG net", n, i, why, whylen);
	if (r)
		mgc_net_free(a);
	return r;
}

void mgc_net_free(struct mgc_net *a)
{
	mgc_kvs_free(&a->kv);
	free(a->job);
	free(a->peer);
	free(a->strings);
	memset(a, 0, sizeof(*a));
}

/* ---- TOTALS ---- */

static const struct field totals_fields[] = {
	{ "ts", offsetof(struct mgc_totals, ts) },
	{ "uptime", offsetof(struct mgc_totals, uptime) },
	{ "records", offsetof(struct mgc_totals, records) },
	{ "bytes", offsetof(struct mgc_totals, bytes) },
	{ "kernel_lost", offsetof(struct mgc_totals, kernel_lost) },
	{ "daemon_dropped", offsetof(struct mgc_totals, daemon_dropped) },
};

static const struct field counts_fields[] = {
	{ "tx_packets", offsetof(struct mgc_counts, tx_packets) },
	{ "tx_bytes", offsetof(struct mgc_counts, tx_bytes) },
	{ "rx_packets", offsetof(struct mgc_counts, rx_packets) },
	{ "rx_bytes", offsetof(struct mgc_counts, rx_bytes) },
};

static const struct field job_fields[] = {
	{ "events", offsetof(struct mgc_totals_job, events) },
	{ "sock_bytes", offsetof(struct mgc_totals_job, sock_bytes) },
};

/* A line's key=value words after its first three, into kv. */
static int totals_kvs(struct mgc_kvs *kv, const char *p, const char *end,
		      const char *what, size_t i, char *why, size_t whylen)
{
	char w2[MGC_ERR_MAX];
	int r = mgc_kvs_parse(kv, p, end - p, w2, sizeof(w2));

	if (r == -EPROTO)
		return fail(why, whylen, "TOTALS line %zu (%s): %s", i + 1, what, w2);
	return r;
}

/* One job, net or peer line (kind: its first word) of a TOTALS reply. */
static int totals_line(struct mgc_totals *t, char **store, const char *l, size_t ll,
		       size_t i, char *why, size_t whylen)
{
	char ex[4 * MGC_EXCERPT + 8], w2[MGC_ERR_MAX];
	const char *p = l, *end = l + ll, *w[3];
	struct mgc_totals_job *j = t->njobs ? &t->job[t->njobs - 1] : NULL;
	struct mgc_kvs kv;
	size_t wl[3], k;
	__u64 cgroup;
	char *name;
	int r;

	excerpt(ex, sizeof(ex), l, ll);
	for (k = 0; k < 3; k++)
		if (!next_word(&p, end, &w[k], &wl[k]))
			return fail(why, whylen, "TOTALS line %zu: too short: '%s'", i + 1, ex);
	if (mgc_parse_u64(w[1], wl[1], &cgroup))
		return fail(why, whylen, "TOTALS line %zu: bad cgroup in '%s'", i + 1, ex);
	name = agg_string(store, w[2], wl[2]);
	if (!name)
		return fail(why, whylen, "TOTALS line %zu: bad %%XX escape in '%s'", i + 1, ex);
	if (!word_eq(w[0], wl[0], "job") && (!j || j->cgroup != cgroup))
		return fail(why, whylen, "TOTALS line %zu: not after its job's line: '%s'",
			    i + 1, ex);
	r = totals_kvs(&kv, p, end, ex, i, why, whylen);
	if (r)
		return r;
	if (word_eq(w[0], wl[0], "job")) {
		__u64 exported = 0;

		j = &t->job[t->njobs];
		j->cgroup = cgroup;
		j->path = name;
		j->net = t->nets + (t->njobs ? t->job[t->njobs - 1].net - t->nets +
					       t->job[t->njobs - 1].nnet : 0);
		j->peer = t->peers + (t->njobs ? t->job[t->njobs - 1].peer - t->peers +
						 t->job[t->njobs - 1].npeers : 0);
		r = take_fields(&kv, job_fields, sizeof(job_fields) / sizeof(job_fields[0]),
				j, "TOTALS job", w2, sizeof(w2));
		if (!r && (kv_u64(&kv, "exported", &exported) || exported > 1))
			r = fail(w2, sizeof(w2), "TOTALS job: no exported=0 or 1");
		if (!r && slurm_words(p, end, &j->slurm))
			r = fail(w2, sizeof(w2), "bad Slurm word");
		j->exported = !r && exported;
		if (!r)
			t->njobs++;
	} else if (!j) {
		r = fail(w2, sizeof(w2), "no job");	/* refused above: for the analyser */
	} else if (word_eq(w[0], wl[0], "net")) {
		struct mgc_totals_net *e = &j->net[j->nnet];

		e->proto = name;
		r = take_fields(&kv, counts_fields, 4, &e->c, "TOTALS net", w2, sizeof(w2));
		j->nnet += !r;
	} else {
		struct mgc_totals_peer *e = &j->peer[j->npeers];

		e->peer = name;
		e->other = !strcmp(name, "other");
		r = take_fields(&kv, counts_fields, 4, &e->c, "TOTALS peer", w2, sizeof(w2));
		if (!r && e->other && kv_u64(&kv, "evictions", &e->evictions))
			r = fail(w2, sizeof(w2), "TOTALS peer: no evictions= on other's");
		j->npeers += !r;
	}
	mgc_kvs_free(&kv);
	if (r == -EPROTO)
		return fail(why, whylen, "TOTALS line %zu: %s in '%s'", i + 1, w2, ex);
	return r;
}

/* The reply's kinds of line that matter here; 0 for any other. */
static int totals_kind(const char *l, size_t ll)
{
	const char *p = l, *end = l + ll, *w;
	size_t wl;

	if (!next_word(&p, end, &w, &wl))
		return 0;
	return word_eq(w, wl, "job") ? 'j' : word_eq(w, wl, "net") ? 'n' :
	       word_eq(w, wl, "peer") ? 'p' : 0;
}

int mgc_parse_totals(const char *text, size_t len, struct mgc_totals *t,
		     char *why, size_t whylen)
{
	const char *rest, *lines, *p, *end = text + len, *l;
	size_t rest_len, ll, i = 0, nj = 0, nn = 0, np = 0;
	__u64 n;
	char *store;
	int r;

	memset(t, 0, sizeof(*t));
	r = table_head(text, len, "totals", &n, &rest, &rest_len, &lines, why, whylen);
	if (r)
		return r;
	if (n > MGC_TABLE_MAX)
		return fail(why, whylen, "TOTALS: %llu lines (more than %u)",
			    (unsigned long long)n, MGC_TABLE_MAX);
	r = mgc_kvs_parse(&t->kv, rest, rest_len, why, whylen);
	if (!r)
		r = take_fields(&t->kv, totals_fields,
				sizeof(totals_fields) / sizeof(totals_fields[0]), t,
				"TOTALS", why, whylen);
	if (r)
		goto failed;
	t->node = mgc_kvs_get(&t->kv, "node");
	if (!t->node) {
		r = fail(why, whylen, "TOTALS: no node=");
		goto failed;
	}
	/* A magnetd before the jobs' traffic has none of these: 0. */
	kv_u64(&t->kv, "net_packets", &t->net_packets);
	kv_u64(&t->kv, "net_bytes", &t->net_bytes);
	kv_u64(&t->kv, "net_unkeyed", &t->net_unkeyed);
	for (p = lines; next_line(&p, end, &l, &ll); ) {
		int k = totals_kind(l, ll);

		nj += k == 'j';
		nn += k == 'n';
		np += k == 'p';
	}
	t->job = calloc(nj ? nj : 1, sizeof(*t->job));
	t->nets = calloc(nn ? nn : 1, sizeof(*t->nets));
	t->peers = calloc(np ? np : 1, sizeof(*t->peers));
	/* Decoding never lengthens a word; one string a line, and its NUL. */
	t->strings = malloc(len + 2);
	if (!t->job || !t->nets || !t->peers || !t->strings) {
		r = -ENOMEM;
		goto failed;
	}
	store = t->strings;
	for (p = lines; !r && next_line(&p, end, &l, &ll); i++) {
		if (i == n) {
			r = count_mismatch("TOTALS", n, i + 1, why, whylen);
			break;
		}
		if (totals_kind(l, ll))
			r = totals_line(t, &store, l, ll, i, why, whylen);
	}
	if (!r && i < n)
		r = count_mismatch("TOTALS", n, i, why, whylen);
	if (!r)
		return 0;
failed:
	mgc_totals_free(t);
	return r;
}

void mgc_totals_free(struct mgc_totals *t)
{
	mgc_kvs_free(&t->kv);
	free(t->job);
	free(t->nets);
	free(t->peers);
	free(t->strings);
	memset(t, 0, sizeof(*t));
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
