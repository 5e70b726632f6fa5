// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <linux/magnet.h>

#include "probes.h"

/* Split s at tabs into at most max fields, in place. */
static size_t split_tabs(char *s, char **f, size_t max)
{
	size_t n = 0;

	while (n < max) {
		f[n++] = s;
		s = strchr(s, '\t');
		if (!s)
			break;
		*s++ = '\0';
	}
	return n;
}

static int parse_u64(const char *s, __u64 *v)
{
	char *end;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return (errno || *end) ? -1 : 0;
}

/* "LEN@ARG": the 7th column of a capturing probe. */
static int parse_capture(char *s, unsigned int *len, unsigned int *arg)
{
	char *at = strchr(s, '@');
	__u64 l, a;

	if (!at)
		return -1;
	*at++ = '\0';
	if (parse_u64(s, &l) || parse_u64(at, &a) || !l ||
	    l > MAGNET_PAYLOAD_MAX || a >= MAGNET_ARGS_MAX)
		return -1;
	*len = l;
	*arg = a;
	return 0;
}

static char *concat(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *s = malloc(la + lb + 1);

	if (s) {
		memcpy(s, a, la);
		memcpy(s + la, b, lb + 1);
	}
	return s;
}

void mg_probe_clear(struct mg_probe *p)
{
	free(p->type);
	free(p->target);
	free(p->name);
}

static int parse_line(struct mg_probe *p, char *line)
{
	char *f[9];		/* a 9th holds any columns added later */
	__u64 id, nargs, hits = 0, missed = 0;
	unsigned int cap_len = 0, cap_arg = 0;
	size_t n = split_tabs(line, f, 9);

	/*
	 * The type is not checked: kprobe, kretprobe and custom (a kernel
	 * module's event, target its name, nargs 0) all name events alike.
	 */
	if (n < 4 || parse_u64(f[0], &id) || parse_u64(f[3], &nargs) ||
	    id > MAGNET_EVENT_MAX || nargs > MAGNET_ARGS_MAX || !*f[2])
		return -1;
	/* hits and missed are counters; a table without them still names. */
	if (n > 4 && parse_u64(f[4], &hits))
		hits = 0;
	if (n > 5 && parse_u64(f[5], &missed))
		missed = 0;
	if (n > 6 && parse_capture(f[6], &cap_len, &cap_arg))
		cap_len = cap_arg = 0;
	p->id = id;
	p->nargs = nargs;
	p->hits = hits;
	p->missed = missed;
	p->capture_len = cap_len;
	p->capture_arg = cap_arg;
	p->type = strdup(f[1]);
	p->target = strdup(f[2]);
	/*
	 * The name column came after the capture column ("-" without one);
	 * a table without it (an older module's, in a trace) gets the
	 * names that module gave: SYMBOL[+OFFSET], SYMBOL%return.
	 */
	if (n > 7 && *f[7])
		p->name = strdup(f[7]);
	else if (!strcmp(f[1], "kretprobe"))
		p->name = concat(f[2], "%return");
	else
		p->name = strdup(f[2]);
	if (!p->type || !p->target || !p->name) {
		mg_probe_clear(p);
		return -ENOMEM;
	}
	return 0;
}

/* The index: every id absent. */
static int alloc_index(struct mg_probe_table *t)
{
	if (!t->at)
		t->at = calloc(MG_PROBES_MAX, sizeof(*t->at));
	return t->at ? 0 : -ENOMEM;
}

/* p at the end of t (its index allocated), unless t names p's id. */
static int append(struct mg_probe_table *t, struct mg_probe *p)
{
	if (t->at[p->id]) {
		mg_probe_clear(p);
		return 0;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;
		struct mg_probe *v = realloc(t->v, cap * sizeof(*v));

		if (!v) {
			mg_probe_clear(p);
			return -ENOMEM;
		}
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n++] = *p;
	t->at[p->id] = t->n;
	return 0;
}

int mg_probes_parse_more(struct mg_probe_table *t, const char *text,
			 size_t len)
{
	char *copy, *line, *next;
	size_t lines = 0;
	int err;

	err = alloc_index(t);
	if (err)
		return err;
	copy = strndup(text, len);
	if (!copy)
		return -ENOMEM;
	for (line = copy; line && *line; line = next) {
		struct mg_probe p;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!isdigit((unsigned char)*line))
			continue;
		if (++lines > MG_PROBES_MAX) {
			err = -E2BIG;
			break;
		}
		err = parse_line(&p, line);
		if (err == -ENOMEM)
			break;
		err = err ? 0 : append(t, &p);
		if (err)
			break;
	}
	free(copy);
	return err;
}

int mg_probes_parse(struct mg_probe_table *t, const char *text, size_t len)
{
	int err;

	memset(t, 0, sizeof(*t));
	err = mg_probes_parse_more(t, text, len);
	if (err)
		mg_probes_free(t);
	return err;
}

void mg_probes_free(struct mg_probe_table *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		mg_probe_clear(&t->v[i]);
	free(t->v);
	free(t->at);
	memset(t, 0, sizeof(*t));
}

int mg_probes_index(struct mg_probe_table *t)
{
	size_t i;

	if (t->n >= UINT32_MAX)
		return -E2BIG;
	for (i = 0; i < t->n; i++)
		if (t->v[i].id > MAGNET_EVENT_MAX)
			return -EINVAL;
	free(t->at);
	t->at = NULL;
	if (alloc_index(t))
		return -ENOMEM;
	for (i = t->n; i-- > 0;)	/* backwards: the first place wins */
		t->at[t->v[i].id] = i + 1;
	if (t->cap < t->n)
		t->cap = t->n;
	return 0;
}

const struct mg_probe *mg_probes_find(const struct mg_probe_table *t,
				      unsigned int id)
{
	if (!t || !t->at || id > MAGNET_EVENT_MAX || !t->at[id])
		return NULL;
	return &t->v[t->at[id] - 1];
}

const char *mg_event_name(const struct mg_probe_table *t, unsigned int id)
{
	const struct mg_probe *p;

	if (id == MAGNET_EVENT_LOST)
		return "lost";
	if (id == MAGNET_EVENT_JOB_LOST)
		return "job_lost";
	p = mg_probes_find(t, id);
	return p ? p->name : "unknown";
}

const struct mg_probe *mg_probes_find_name(const struct mg_probe_table *t,
					   const char *name, size_t len)
{
	size_t i;

	for (i = 0; t && i < t->n; i++)
		if (strlen(t->v[i].name) == len &&
		    !memcmp(t->v[i].name, name, len))
			return &t->v[i];
	return NULL;
}
