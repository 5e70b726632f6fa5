// SPDX-License-Identifier: GPL-2.0
/* Whose job is a cgroup: see owners.h. Open addressing, linear probing. */
#include <stdlib.h>
#include <string.h>

#include "owners.h"

#define FIRST_CAP	1024

struct slot {
	__u32 cgroup;	/* 0: free (cgroup 0 is never a job) */
	__u32 owner;
};

struct mg_owners {
	struct slot *v;
	size_t cap, n;
	unsigned long long resets;
};

struct mg_owners *mg_owners_new(void)
{
	struct mg_owners *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->v = calloc(FIRST_CAP, sizeof(*o->v));
	if (!o->v) {
		free(o);
		return NULL;
	}
	o->cap = FIRST_CAP;
	return o;
}

void mg_owners_free(struct mg_owners *o)
{
	if (!o)
		return;
	free(o->v);
	free(o);
}

static size_t hash(__u32 k, size_t cap)
{
	return (k * 0x9e3779b1U) & (cap - 1);
}

static struct slot *find(const struct mg_owners *o, __u32 cgroup)
{
	size_t i = hash(cgroup, o->cap);

	while (o->v[i].cgroup && o->v[i].cgroup != cgroup)
		i = (i + 1) & (o->cap - 1);
	return &o->v[i];
}

/* Half full: double, up to the bound; then start again. */
static void make_room(struct mg_owners *o)
{
	struct slot *old = o->v, *nv;
	size_t i, cap = o->cap;

	if (2 * (o->n + 1) <= o->cap)
		return;
	if (o->cap < 2 * MG_OWNERS_MAX &&
	    (nv = calloc(2 * cap, sizeof(*nv)))) {
		o->v = nv;
		o->cap = 2 * cap;
		for (i = 0; i < cap; i++)
			if (old[i].cgroup)
				*find(o, old[i].cgroup) = old[i];
		free(old);
		return;
	}
	memset(o->v, 0, o->cap * sizeof(*o->v));
	o->n = 0;
	o->resets++;
}

void mg_owners_note(struct mg_owners *o, __u32 cgroup, __u32 uid)
{
	struct slot *s;

	if (!cgroup || uid == MG_OWNER_NONE)
		return;
	/* MIXED: as the second of two users (its uid is no one's). */
	s = find(o, cgroup);
	if (!s->cgroup) {
		make_room(o);
		s = find(o, cgroup);
		s->cgroup = cgroup;
		s->owner = uid;
		o->n++;
		return;
	}
	if (s->owner == uid || s->owner == MG_OWNER_MIXED || uid == 0)
		return;
	s->owner = s->owner == 0 ? uid : MG_OWNER_MIXED;
}

void mg_owners_forget(struct mg_owners *o, __u32 cgroup)
{
	struct slot *s = find(o, cgroup);
	size_t hole, i, home;

	if (!cgroup || !s->cgroup)
		return;
	hole = s - o->v;
	memset(s, 0, sizeof(*s));
	o->n--;
	/* Backward shift: move up every later entry the hole would strand. */
	for (i = (hole + 1) & (o->cap - 1); o->v[i].cgroup;
	     i = (i + 1) & (o->cap - 1)) {
		home = hash(o->v[i].cgroup, o->cap);
		/* It stays if its home lies cyclically in (hole, i]. */
		if (hole <= i ? (hole < home && home <= i) :
				(hole < home || home <= i))
			continue;
		o->v[hole] = o->v[i];
		memset(&o->v[i], 0, sizeof(o->v[i]));
		hole = i;
	}
}

__u32 mg_owners_of(const struct mg_owners *o, __u32 cgroup)
{
	const struct slot *s = find(o, cgroup);

	return s->cgroup ? s->owner : MG_OWNER_NONE;
}

unsigned long long mg_owners_resets(const struct mg_owners *o)
{
	return o->resets;
}
