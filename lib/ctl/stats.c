// SPDX-License-Identifier: GPL-2.0
/*
 * magnet-ctl stats: the rings' per-CPU counters (MAGNET_CMD_STATS_GET) and
 * every probe's counters (MAGNET_CMD_PROBE_GET).
 */
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

struct cstat {
	__u32 cpu;
	__u64 v[8];	/* written ... overwritten discarded lost_fair: cstat_keys */
};

static const char *const cstat_keys[8] = {
	"written", "bytes", "lost_full", "lost_too_big", "lost_nesting",
	"overwritten", "discarded", "lost_fair",
};

struct cstats {
	size_t n, cap;
	struct cstat *v;
};

static void cstats_reset(void *arg)
{
	struct cstats *cs = arg;

	cs->n = 0;
}

static int cstats_add(struct nlattr **tb, void *arg)
{
	struct nlattr *st[MAGNET_CSTAT_A_MAX + 1];
	struct cstats *cs = arg;
	struct cstat *c;
	int i;

	if (!tb[MAGNET_A_CPU_STATS])
		return 0;
	if (ctl_nla_nested(st, MAGNET_CSTAT_A_MAX, tb[MAGNET_A_CPU_STATS]) ||
	    !st[MAGNET_CSTAT_A_CPU])
		return -1;
	if (cs->n == cs->cap) {
		size_t cap = cs->cap ? 2 * cs->cap : 64;
		struct cstat *v = realloc(cs->v, cap * sizeof(*v));

		if (!v)
			return -1;
		cs->v = v;
		cs->cap = cap;
	}
	c = &cs->v[cs->n++];
	c->cpu = ctl_nla_uint(st[MAGNET_CSTAT_A_CPU]);
	for (i = 0; i < 8; i++) {
		/* WRITTEN..OVERWRITTEN are consecutive; DISCARDED, LOST_FAIR came later. */
		struct nlattr *a = st[i < 6 ? MAGNET_CSTAT_A_WRITTEN + i :
				      i == 6 ? MAGNET_CSTAT_A_DISCARDED : MAGNET_CSTAT_A_LOST_FAIR];

		c->v[i] = a ? ctl_nla_uint(a) : 0;
	}
	return 0;
}

static int by_cpu(const void *a, const void *b)
{
	const struct cstat *x = a, *y = b;

	return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
}

static int parse_stats(struct ctl_args *a)
{
	a->req->genl_cmd = MAGNET_CMD_STATS_GET;
	a->req->dump = true;
	return ctl_parse_end(a);
}

static int run_stats(struct ctl_nl *nl, struct ctl_req *r)
{
	struct cstats cs = { 0 };
	struct cstat sum = { 0 };
	struct ctl_probes ps;
	size_t i;
	int ret, k;

	ret = ctl_nl_request(nl, r, "stats", cstats_add, cstats_reset, &cs);
	if (ret)
		goto out;
	ret = ctl_probes_get(nl, &ps, "stats");
	if (ret)
		goto out;
	if (cs.n)
		qsort(cs.v, cs.n, sizeof(*cs.v), by_cpu);

	pr_object_open(NULL);
	pr_array_open("cpus");
	pr_text("%-5s %14s %16s %12s %12s %12s %12s %12s %12s\n", "cpu", "written",
		"bytes", "lost_full", "lost_too_big", "lost_nesting",
		"overwritten", "discarded", "lost_fair");
	for (i = 0; i < cs.n; i++) {
		pr_record_open("cpu");
		pr_u64("cpu", "%-5llu", cs.v[i].cpu);
		for (k = 0; k < 8; k++) {
			static const char *const fmt[8] = {
				" %14llu", " %16llu", " %12llu", " %12llu",
				" %12llu", " %12llu", " %12llu", " %12llu\n",
			};

			pr_u64(cstat_keys[k], fmt[k], cs.v[i].v[k]);
			sum.v[k] += cs.v[i].v[k];
		}
		pr_record_close();
	}
	pr_text("%-5s %14llu %16llu %12llu %12llu %12llu %12llu %12llu %12llu\n", "all",
		(unsigned long long)sum.v[0], (unsigned long long)sum.v[1],
		(unsigned long long)sum.v[2], (unsigned long long)sum.v[3],
		(unsigned long long)sum.v[4], (unsigned long long)sum.v[5],
		(unsigned long long)sum.v[6], (unsigned long long)sum.v[7]);
	pr_array_close();

	pr_array_open("probes");
	if (ps.n)
		pr_text("\n%-5s %-24s %12s %10s %10s %12s %10s %10s %10s %10s\n",
			"id", "name", "hits", "filtered", "sampled", "recorded",
			"lost", "missed", "alarms", "dropped");
	for (i = 0; i < ps.n; i++) {
		/* The columns under the header above. */
		static const char *const text[CTL_PSTATS] = {
			" %12llu", " %10llu", " %10llu", " %12llu", " %10llu",
			" %10llu", " %10llu", " %10llu\n",
		};
		const struct ctl_probe *p = &ps.v[i];

		pr_record_open("pstat");
		pr_u64("id", "%-5llu", p->id);
		pr_str("name", " %-24s", p->name);
		ctl_print_pstats(&p->stats, text);
		pr_record_close();
	}
	pr_array_close();
	pr_object_close();
	ctl_probes_free(&ps);
out:
	free(cs.v);
	return ret;
}

static const struct ctl_cmd stats_cmds[] = {
	{ NULL, "[-j|-m]", parse_stats, run_stats },
	{ NULL, NULL, NULL, NULL },
};

const struct ctl_object ctl_stats_object = {
	.name = "stats",
	.summary = "per-CPU ring counters and per-probe counters",
	.cmds = stats_cmds,
	.notes =
"Per CPU: records written, their bytes, and records lost because the ring\n"
"was full, the record too big, writers nested too deep, (overwrite mode)\n"
"overwritten before they were read, or (lost_fair) their job was over its\n"
"share of a filling ring (per job: \"buffer show\"). Per probe: hits = filtered + sampled +\n"
"recorded + lost; missed counts hits the kprobes core skipped; alarms and\n"
"alarms_dropped (over the rate limit) count notifications.\n",
};
