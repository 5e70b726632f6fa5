// SPDX-License-Identifier: GPL-2.0
/*
 * Slurm's cgroup layouts; see slurm.h. A path is walked one directory at
 * a time, each compared whole: a layout is a fixed sequence of names, so
 * nothing is searched for and nothing longer than a name is copied.
 */
#include <stdio.h>
#include <string.h>

#include "slurm.h"

#define STEPD_SCOPE	"slurmstepd.scope"

/* The directories of a path, one at a time. */
struct walk {
	const char *p, *end;
	const char *name;	/* the current one */
	size_t len;
};

/*
 * The next directory; false at the end, and at an empty name ("//", a
 * trailing '/'), where the walk then stays: never at_end().
 */
static bool next(struct walk *w)
{
	const char *name = w->p + 1, *q;

	if (w->p >= w->end || *w->p != '/')
		return false;
	q = memchr(name, '/', w->end - name);
	if (!q)
		q = w->end;
	if (q == name)
		return false;
	w->name = name;
	w->len = q - name;
	w->p = q;
	return true;
}

static bool at_end(const struct walk *w)
{
	return w->p == w->end;
}

static bool is(const struct walk *w, const char *name)
{
	return w->len == strlen(name) && !memcmp(w->name, name, w->len);
}

/*
 * A decimal number as Slurm prints one (%u: no sign, no leading zero) of
 * all of s (len bytes), at most max; no overflow whatever its length.
 */
static bool number(const char *s, size_t len, __u32 max, __u32 *out)
{
	__u64 v = 0;
	size_t i;

	if (!len || len > 10 || (len > 1 && s[0] == '0'))
		return false;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (__u64)(s[i] - '0');
	}
	if (v > max)
		return false;
	*out = (__u32)v;
	return true;
}

/* "prefix" and a number after it, the whole name. */
static bool numbered(const struct walk *w, const char *prefix, __u32 max,
		     __u32 *out)
{
	size_t pl = strlen(prefix);

	return w->len > pl && !memcmp(w->name, prefix, pl) &&
	       number(w->name + pl, w->len - pl, max, out);
}

/* A node's name as Slurm puts it in a scope or prefix. */
static bool node_name(const char *s, size_t len)
{
	size_t i;

	if (!len || len >= MG_SLURM_NODE_MAX)
		return false;
	for (i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '.' ||
		      s[i] == '_'))
			return false;
	return true;
}

/* "step_S" with S a number, batch, extern or interactive, then "+N". */
static bool step_of(const struct walk *w, struct mg_slurm *s)
{
	static const struct {
		const char *name;
		__u32 id;
	} named[] = {
		{ "batch", MG_SLURM_BATCH }, { "extern", MG_SLURM_EXTERN },
		{ "interactive", MG_SLURM_INTERACTIVE },
	};
	const char *id = w->name + 5, *plus;
	size_t len, i;

	if (w->len <= 5 || memcmp(w->name, "step_", 5))
		return false;
	len = w->len - 5;
	plus = memchr(id, '+', len);
	if (plus) {
		/* NO_VAL (0xfffffffe) means none in Slurm: never printed. */
		if (!number(plus + 1, id + len - plus - 1, 0xfffffffdU, &s->het))
			return false;
		len = plus - id;
	} else {
		s->het = MG_SLURM_NONE;
	}
	for (i = 0; i < sizeof(named) / sizeof(named[0]); i++)
		if (len == strlen(named[i].name) && !memcmp(id, named[i].name, len)) {
			s->step = named[i].id;
			return true;
		}
	return number(id, len, MG_SLURM_STEP_MAX, &s->step);
}

/* The path's bytes up to the end of the current directory. */
static __u16 upto(const struct walk *w, const char *path)
{
	return (__u16)(w->p - path);
}

/* v2: /system.slice/[NODE_]slurmstepd.scope/job_J/... */
static bool parse_v2(const char *path, struct walk *w, struct mg_slurm *s)
{
	size_t sl = strlen(STEPD_SCOPE);

	if (!next(w))
		return false;
	if (!is(w, STEPD_SCOPE)) {
		if (w->len <= sl + 1 || memcmp(w->name + w->len - sl, STEPD_SCOPE, sl) ||
		    w->name[w->len - sl - 1] != '_' ||
		    !node_name(w->name, w->len - sl - 1))
			return false;
		s->node_off = (__u8)(w->name - path);
		s->node_len = (__u8)(w->len - sl - 1);
	}
	if (!next(w) || !numbered(w, "job_", 0xffffffffU, &s->job) || !s->job)
		return false;
	s->part = MG_SLURM_JOB;
	s->series_len = upto(w, path);
	if (at_end(w))
		return true;
	if (!next(w) || !step_of(w, s))
		return false;
	s->part = MG_SLURM_STEP;
	s->series_len = upto(w, path);
	s->step_len = s->series_len;
	if (at_end(w))
		return true;
	if (!next(w))
		return false;
	if (is(w, "slurm")) {
		s->part = MG_SLURM_STEPD;
		s->series_len = upto(w, path);
		return at_end(w);
	}
	if (!is(w, "user"))
		return false;
	if (at_end(w))
		return true;	/* the tasks' parent: the step's */
	if (!next(w))
		return false;
	if (is(w, "task_special"))
		s->task = MG_SLURM_TASK_SPECIAL;
	else if (!numbered(w, "task_", MG_SLURM_TASK_MAX, &s->task))
		return false;
	s->part = MG_SLURM_TASK;
	/* Below it: the user's own (Slurm gives task_T to the job's user). */
	while (next(w))
		;
	return at_end(w);
}

/* v1: /slurm[_NODE]/uid_U/job_J/... */
static bool parse_v1(const char *path, struct walk *w, struct mg_slurm *s)
{
	if (!next(w) || !numbered(w, "uid_", 0xffffffffU, &s->uid))
		return false;
	if (!next(w) || !numbered(w, "job_", 0xffffffffU, &s->job) || !s->job)
		return false;
	s->part = MG_SLURM_JOB;
	s->series_len = upto(w, path);
	if (at_end(w))
		return true;
	if (!next(w) || !step_of(w, s))
		return false;
	s->part = MG_SLURM_STEP;
	s->series_len = upto(w, path);
	s->step_len = s->series_len;
	if (at_end(w))
		return true;
	/* step_S is the job's user's: whatever is below it is the step's. */
	if (!next(w))
		return false;
	if (numbered(w, "task_", MG_SLURM_TASK_MAX, &s->task))
		s->part = MG_SLURM_TASK;
	while (next(w))
		;
	return at_end(w);
}

bool mg_slurm_parse(const char *path, size_t len, struct mg_slurm *out)
{
	struct walk w = { .p = path, .end = path + len };
	struct mg_slurm s = { .step = MG_SLURM_NONE, .het = MG_SLURM_NONE,
			      .task = MG_SLURM_NONE, .uid = MG_SLURM_NONE };
	bool ok;

	/* Paths longer than a u16 are longer than the kernel takes. */
	if (len > 0xffff || !next(&w))
		return false;
	if (is(&w, "system.slice")) {
		ok = parse_v2(path, &w, &s);
	} else if (is(&w, "slurm") ||
		   (w.len > 6 && !memcmp(w.name, "slurm_", 6) &&
		    node_name(w.name + 6, w.len - 6))) {
		if (w.len > 5) {
			s.node_off = (__u8)(w.name + 6 - path);
			s.node_len = (__u8)(w.len - 6);
		}
		ok = parse_v1(path, &w, &s);
	} else {
		ok = false;
	}
	if (ok)
		*out = s;
	return ok;
}

const char *mg_slurm_step(const struct mg_slurm *s, char *buf, size_t size)
{
	const char *name = s->step == MG_SLURM_BATCH ? "batch" :
			   s->step == MG_SLURM_EXTERN ? "extern" :
			   s->step == MG_SLURM_INTERACTIVE ? "interactive" : NULL;
	int n;

	if (s->step == MG_SLURM_NONE) {
		snprintf(buf, size, "%s", "");
		return buf;
	}
	n = name ? snprintf(buf, size, "%s", name) :
		   snprintf(buf, size, "%u", s->step);
	if (s->het != MG_SLURM_NONE && n >= 0 && (size_t)n < size)
		snprintf(buf + n, size - n, "+%u", s->het);
	return buf;
}

const char *mg_slurm_node(const struct mg_slurm *s, const char *path,
			  char buf[MG_SLURM_NODE_MAX])
{
	memcpy(buf, path + s->node_off, s->node_len);
	buf[s->node_len] = '\0';
	return buf;
}

const char *mg_slurm_words(const struct mg_slurm *s, const char *node,
			   __u32 uid, char *buf, size_t size)
{
	char step[24];
	size_t n;

	snprintf(buf, size, " slurm_job_id=%u", s->job);
	n = strlen(buf);
	if (s->step != MG_SLURM_NONE && n < size)
		snprintf(buf + n, size - n, " slurm_step=%s%s",
			 mg_slurm_step(s, step, sizeof(step)),
			 s->part == MG_SLURM_STEPD ? " slurm_stepd=1" : "");
	n = strlen(buf);
	if (node[0] && n < size)
		snprintf(buf + n, size - n, " slurm_node=%s", node);
	n = strlen(buf);
	if (uid != MG_SLURM_NONE && n < size)
		snprintf(buf + n, size - n, " uid=%u", uid);
	return buf;
}

const char *mg_slurm_name(const struct mg_slurm *s, char *buf, size_t size)
{
	char step[24];

	if (s->step == MG_SLURM_NONE)
		snprintf(buf, size, "%u", s->job);
	else
		snprintf(buf, size, "%u.%s%s", s->job,
			 mg_slurm_step(s, step, sizeof(step)),
			 s->part == MG_SLURM_STEPD ? "/slurmstepd" : "");
	return buf;
}
