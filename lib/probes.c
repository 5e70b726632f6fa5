// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
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

int mg_probes_parse(struct mg_probe_table *t, const char *text, size_t len)
{
	char *copy, *line, *next;
	size_t cap = 0;
	int err = 0;

	t->n = 0;
	t->v = NULL;
	copy = strndup(text, len);
	if (!copy)
		return -ENOMEM;
	for (line = copy; line && *line; line = next) {
		struct mg_probe p;
		int r;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!isdigit((unsigned char)*line))
			continue;
		r = parse_line(&p, line);
		if (r == -ENOMEM) {
			err = r;
			break;
		}
		if (r)
			continue;
		if (t->n == cap) {
			struct mg_probe *v;

			cap = cap ? 2 * cap : 16;
			v = realloc(t->v, cap * sizeof(*v));
			if (!v) {
				mg_probe_clear(&p);
				err = -ENOMEM;
				break;
			}
			t->v = v;
		}
		t->v[t->n++] = p;
	}
	free(copy);
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
	t->v = NULL;
	t->n = 0;
}

const struct mg_probe *mg_probes_find(const struct mg_probe_table *t,
				      unsigned int id)
{
	size_t i;

	/* Tables hold tens of probes: a scan beats keeping an index. */
	for (i = 0; t && i < t->n; i++)
		if (t->v[i].id == id)
			return &t->v[i];
	return NULL;
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
