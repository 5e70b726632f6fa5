// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

static int parse_line(struct mg_kstats *s, const char *line)
{
	unsigned long long v[7];
	const char *p = line;
	char *end;
	int i;

	for (i = 0; i < 7; i++) {
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		errno = 0;
		v[i] = strtoull(p, &end, 10);
		if (errno)
			return -EINVAL;
		p = end;
		if (i < 6) {
			if (*p != '\t')
				return -EINVAL;
			p++;
		}
	}
	/* Tolerate columns a newer module may append. */
	if (*p && *p != '\t')
		return -EINVAL;
	if (v[0] > UINT32_MAX)
		return -EINVAL;
	s->cpu = v[0];
	s->written = v[1];
	s->bytes = v[2];
	s->lost_full = v[3];
	s->lost_too_big = v[4];
	s->lost_nesting = v[5];
	s->overwritten = v[6];
	return 0;
}

int mg_stats_parse(const char *text, size_t len, struct mg_kstats **out,
		   size_t *n)
{
	struct mg_kstats *v = NULL;
	size_t cnt = 0, cap = 0;
	char *copy, *line, *next;
	int err = 0;

	copy = strndup(text, len);
	if (!copy)
		return -ENOMEM;
	for (line = copy; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!isdigit((unsigned char)*line))
			continue;
		if (cnt == cap) {
			struct mg_kstats *nv;

			cap = cap ? 2 * cap : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				err = -ENOMEM;
				break;
			}
			v = nv;
		}
		err = parse_line(&v[cnt], line);
		if (err)
			break;
		cnt++;
	}
	free(copy);
	if (err) {
		free(v);
		return err;
	}
	*out = v;
	*n = cnt;
	return 0;
}

const struct mg_kstats *mg_stats_find(const struct mg_kstats *v, size_t n,
				      __u32 cpu)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i].cpu == cpu)
			return &v[i];
	return NULL;
}
