// SPDX-License-Identifier: GPL-2.0
/*
 * magnet-ctl buffer: the per-CPU rings' size, mode and fairness threshold,
 * and which job lost how much (MAGNET_CMD_JOBS_GET).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cgmap.h"
#include "ctl.h"

/* Indexed by enum magnet_buffer_mode. */
static const char *const modes[] = {
	[MAGNET_BUFFER_DISCARD] = "discard",
	[MAGNET_BUFFER_OVERWRITE] = "overwrite",
	NULL
};

static int parse_show(struct ctl_args *a)
{
	a->req->genl_cmd = MAGNET_CMD_BUFFER_GET;
	return ctl_parse_end(a);
}

static int parse_set(struct ctl_args *a)
{
	static const char *const keys[] = { "size", "mode", "fair", NULL };
	static const int attr[] = {
		MAGNET_BUFFER_A_SIZE, MAGNET_BUFFER_A_MODE, MAGNET_BUFFER_A_FAIR_FILL,
	};
	struct ctl_req *r = a->req;
	const char *w;
	int k, ret;
	__u64 v;

	r->genl_cmd = MAGNET_CMD_BUFFER_SET;
	while (ctl_more(a)) {
		if (ctl_output_option(a))
			continue;
		w = a->argv[a->i++];
		k = ctl_keyword(a, w, keys, "keyword");
		if (k < 0)
			return -1;
		if (r->buffer_attrs & CTL_BIT(attr[k]))
			return ctl_usage_error(a, "'%s' given twice", keys[k]);
		if (k == 2) {
			w = ctl_next(a, "PERCENT or 'off' after 'fair'");
			if (!w)
				return -1;
			if (!strcmp(w, "off"))
				v = 0;
			else if (ctl_parse_u64(w, MAGNET_FAIR_FILL_MAX, &v))
				return ctl_usage_error(a, "fair %s: expected a percentage from 0 (off) to %d, or 'off'",
						       w, MAGNET_FAIR_FILL_MAX);
			r->fair_fill = v;
			r->buffer_attrs |= CTL_BIT(MAGNET_BUFFER_A_FAIR_FILL);
		} else if (k == 0) {
			w = ctl_next(a, "SIZE after 'size'");
			if (!w)
				return -1;
			ret = ctl_parse_size(w, &r->size);
			if (ret == -ERANGE)
				return ctl_usage_error(a, "size %s: out of range", w);
			if (ret)
				return ctl_usage_error(a, "size %s: expected bytes, or a number with K, M or G", w);
			if (!r->size || (r->size & (r->size - 1)))
				return ctl_usage_error(a, "size %s: not a power of two", w);
			r->buffer_attrs |= CTL_BIT(MAGNET_BUFFER_A_SIZE);
		} else {
			w = ctl_next(a, "discard|overwrite after 'mode'");
			if (!w)
				return -1;
			k = ctl_keyword(a, w, modes, "mode");
			if (k < 0)
				return -1;
			r->mode_buf = k;
			r->buffer_attrs |= CTL_BIT(MAGNET_BUFFER_A_MODE);
		}
	}
	if (!r->buffer_attrs)
		return ctl_usage_error(a, "missing 'size SIZE', 'mode discard|overwrite' or 'fair PERCENT'");
	return 0;
}

static int show_reply(struct nlattr **tb, void *arg)
{
	struct nlattr *b[MAGNET_BUFFER_A_MAX + 1];
	bool *got = arg;
	const char *mode;
	char size[32];
	__u64 v;

	if (!tb[MAGNET_A_BUFFER])
		return 0;
	if (ctl_nla_nested(b, MAGNET_BUFFER_A_MAX, tb[MAGNET_A_BUFFER]) ||
	    !b[MAGNET_BUFFER_A_SIZE])
		return -1;
	v = b[MAGNET_BUFFER_A_MODE] ? ctl_nla_uint(b[MAGNET_BUFFER_A_MODE]) : MAGNET_BUFFER_DISCARD;
	mode = v <= MAGNET_BUFFER_OVERWRITE ? modes[v] : "unknown";
	v = ctl_nla_uint(b[MAGNET_BUFFER_A_SIZE]);
	ctl_format_size(size, sizeof(size), v);
	pr_record_open("buffer");
	pr_u64("size", NULL, v);
	pr_text("size %s", size);
	pr_str("mode", " mode %s", mode);
	pr_u64("cpus", " cpus %llu",
	       b[MAGNET_BUFFER_A_CPUS] ? ctl_nla_uint(b[MAGNET_BUFFER_A_CPUS]) : 0);
	if (b[MAGNET_BUFFER_A_FAIR_FILL]) {
		v = ctl_nla_uint(b[MAGNET_BUFFER_A_FAIR_FILL]);
		pr_u64("fair", v ? " fair %llu%%" : NULL, v);
		if (!v)
			pr_text(" fair off");
	}
	pr_text("\n");
	*got = true;	/* the record stays open: the jobs go in it */
	return 0;
}

/* One job over every CPU (MAGNET_CMD_JOBS_GET sends one per CPU). */
struct job {
	__u64 cgroup;
	__u64 v[4];	/* job_keys */
};

static const char *const job_keys[4] = {
	"written", "lost_fair", "pending", "lost_ring",
};

struct jobs {
	size_t n, cap;
	struct job *v;
};

static void jobs_reset(void *arg)
{
	struct jobs *js = arg;

	js->n = 0;
}

static int jobs_add(struct nlattr **tb, void *arg)
{
	struct nlattr *a[MAGNET_JOB_A_MAX + 1];
	struct jobs *js = arg;
	struct job *j = NULL;
	__u64 id;
	size_t i;

	if (!tb[MAGNET_A_JOB])
		return 0;
	if (ctl_nla_nested(a, MAGNET_JOB_A_MAX, tb[MAGNET_A_JOB]) || !a[MAGNET_JOB_A_CGROUP])
		return -1;
	id = ctl_nla_uint(a[MAGNET_JOB_A_CGROUP]);
	for (i = 0; i < js->n && !j; i++)
		if (js->v[i].cgroup == id)
			j = &js->v[i];
	if (!j) {
		if (js->n == js->cap) {
			size_t cap = js->cap ? 2 * js->cap : 64;
			struct job *v = realloc(js->v, cap * sizeof(*v));

			if (!v)
				return -1;
			js->v = v;
			js->cap = cap;
		}
		j = &js->v[js->n++];
		memset(j, 0, sizeof(*j));
		j->cgroup = id;
	}
	for (i = 0; i < 4; i++) {
		/* WRITTEN..LOST_RING are consecutive, in job_keys' order. */
		struct nlattr *x = a[MAGNET_JOB_A_WRITTEN + i];

		j->v[i] += x ? ctl_nla_uint(x) : 0;
	}
	return 0;
}

/* Most lost first, then most written: who lost how much, at the top. */
static int by_loss(const void *a, const void *b)
{
	const struct job *x = a, *y = b;
	__u64 lx = x->v[1] + x->v[3], ly = y->v[1] + y->v[3];

	if (lx != ly)
		return lx > ly ? -1 : 1;
	if (x->v[0] != y->v[0])
		return x->v[0] > y->v[0] ? -1 : 1;
	return x->cgroup < y->cgroup ? -1 : x->cgroup > y->cgroup;
}

static void print_jobs(struct jobs *js)
{
	struct mg_cgmap *map = NULL;
	struct timespec ts;
	char name[64];
	size_t i;
	int k;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (js->n)
		qsort(js->v, js->n, sizeof(*js->v), by_loss);
	mg_cgmap_open(NULL, 0, &map);	/* no map: jobs are "cgroup:<id>" */
	pr_array_open("jobs");
	if (js->n)
		pr_text("%-32s %12s %12s %10s %12s\n", "job", "written", "lost_fair", "pending",
			"lost_ring");
	for (i = 0; i < js->n; i++) {
		static const char *const fmt[4] = {
			" %12llu", " %12llu", " %10llu", " %12llu\n",
		};
		const struct job *j = &js->v[i];
		const char *job;

		if (!j->cgroup)
			job = "(shared)";	/* interrupts, jobs without a slot */
		else if (map && (__u32)j->cgroup == j->cgroup)
			job = mg_cgmap_name(map, j->cgroup,
					    ts.tv_sec * 1000000000ULL + ts.tv_nsec, name,
					    sizeof(name));
		else
			job = (snprintf(name, sizeof(name), "cgroup:%llu",
					(unsigned long long)j->cgroup), name);
		pr_record_open("job");
		pr_u64("cgroup", NULL, j->cgroup);
		pr_str("job", "%-32s", job);
		for (k = 0; k < 4; k++)
			pr_u64(job_keys[k], fmt[k], j->v[k]);
		pr_record_close();
	}
	pr_array_close();
	if (map)
		mg_cgmap_free(map);
}

static int run_show(struct ctl_nl *nl, struct ctl_req *r)
{
	struct ctl_req jr = { .genl_cmd = MAGNET_CMD_JOBS_GET, .dump = true, .mode = r->mode };
	struct jobs js = { 0 };
	bool got = false;
	int ret;

	ret = ctl_nl_request(nl, r, "buffer show", show_reply, NULL, &got);
	if (!ret && !got) {
		fprintf(ctl_errf, PROG ": buffer show: the kernel sent no buffer attributes\n");
		ret = CTL_EXIT_FAIL;
	}
	if (!ret)
		ret = ctl_nl_request(nl, &jr, "buffer show (jobs)", jobs_add, jobs_reset, &js);
	if (!ret)
		print_jobs(&js);
	if (got)
		pr_record_close();
	free(js.v);
	return ret;
}

static int run_set(struct ctl_nl *nl, struct ctl_req *r)
{
	return ctl_nl_request(nl, r, "buffer set", NULL, NULL, NULL);
}

static const struct ctl_cmd buffer_cmds[] = {
	{ "show", "[-j|-m]", parse_show, run_show },
	{ "set", "[size SIZE] [mode discard|overwrite] [fair PERCENT|off]", parse_set, run_set },
	{ NULL, NULL, NULL, NULL },
};

const struct ctl_object ctl_buffer_object = {
	.name = "buffer",
	.summary = "the per-CPU rings and their jobs: show, set",
	.cmds = buffer_cmds,
	.dflt = "show",
	.notes =
"SIZE is bytes per CPU, a power of two, with an optional K, M or G (powers\n"
"of 1024: 4M is 4194304). The kernel refuses sizes out of its range, and a\n"
"new size or mode while a reader has a ring open (EBUSY). fair PERCENT\n"
"(0 to 99; 0 or off: no rule) is the ring fill above which a job (cgroup)\n"
"over its share of the ring loses its records first; it applies at once,\n"
"readers or not. \"buffer show\" lists every job the rings count, most lost\n"
"first: records written, lost to the fairness rule (pending: not yet\n"
"reported in the stream) and lost to the ring itself (full, too big).\n"
"\"buffer\" alone is \"buffer show\".\n",
};
