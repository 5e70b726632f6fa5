// SPDX-License-Identifier: GPL-2.0
/*
 * magnet-ctl sample: record one hit in N (per CPU) and/or at most one per
 * interval (across CPUs), of the hits that pass the filters.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "ctl.h"

static int parse_set(struct ctl_args *a)
{
	static const char *const keys[] = { "every", "interval", NULL };
	struct ctl_req *r = a->req;
	const char *w;
	int k, ret;

	r->genl_cmd = MAGNET_CMD_SAMPLE_SET;
	if (ctl_parse_probe_ref(a, "PROBE"))
		return -1;
	while (ctl_more(a)) {
		__u64 v;

		if (ctl_output_option(a))
			continue;
		w = a->argv[a->i++];
		k = ctl_keyword(a, w, keys, "keyword");
		if (k < 0)
			return -1;
		if (k == 0) {
			if (r->probe_attrs & CTL_BIT(MAGNET_PROBE_A_SAMPLE_EVERY))
				return ctl_usage_error(a, "'every' given twice");
			if (ctl_next_u64(a, "N after 'every'", "every",
					 UINT32_MAX, &v))
				return -1;
			r->sample_every = v;
			r->probe_attrs |= CTL_BIT(MAGNET_PROBE_A_SAMPLE_EVERY);
		} else {
			if (r->probe_attrs & CTL_BIT(MAGNET_PROBE_A_SAMPLE_INTERVAL_NS))
				return ctl_usage_error(a, "'interval' given twice");
			w = ctl_next(a, "a duration after 'interval'");
			if (!w)
				return -1;
			ret = ctl_parse_duration(w, &v);
			if (ret == -ERANGE)
				return ctl_usage_error(a, "interval %s: out of range", w);
			if (ret)
				return ctl_usage_error(a, "interval %s: expected a duration such as 1ms (units ns, us, ms, s)",
						       w);
			r->sample_interval_ns = v;
			r->probe_attrs |= CTL_BIT(MAGNET_PROBE_A_SAMPLE_INTERVAL_NS);
		}
	}
	if (!(r->probe_attrs & (CTL_BIT(MAGNET_PROBE_A_SAMPLE_EVERY) |
				CTL_BIT(MAGNET_PROBE_A_SAMPLE_INTERVAL_NS))))
		return ctl_usage_error(a, "missing 'every N' or 'interval DURATION'");
	return 0;
}

static int parse_clear(struct ctl_args *a)
{
	struct ctl_req *r = a->req;

	r->genl_cmd = MAGNET_CMD_SAMPLE_SET;
	if (ctl_parse_probe_ref(a, "PROBE"))
		return -1;
	r->sample_every = 1;
	r->sample_interval_ns = 0;
	r->probe_attrs |= CTL_BIT(MAGNET_PROBE_A_SAMPLE_EVERY) |
			  CTL_BIT(MAGNET_PROBE_A_SAMPLE_INTERVAL_NS);
	return ctl_parse_end(a);
}

static int run_set(struct ctl_nl *nl, struct ctl_req *r)
{
	char op[64];

	snprintf(op, sizeof(op), "sample %s", r->cmd->name);
	return ctl_nl_request(nl, r, op, NULL, NULL, NULL);
}

static const struct ctl_cmd sample_cmds[] = {
	{ "set", "PROBE [every N] [interval DURATION]", parse_set, run_set },
	{ "clear", "PROBE", parse_clear, run_set },
	{ NULL, NULL, NULL, NULL },
};

const struct ctl_object ctl_sample_object = {
	.name = "sample",
	.summary = "record a fraction of a probe's hits: set, clear",
	.cmds = sample_cmds,
	.notes =
"Of the hits that pass the filters, record one in N per CPU (every 0 or 1:\n"
"all) and at most one per DURATION across CPUs (interval 0: no limit).\n"
"Either or both may be given; what is not given is left as it was.\n"
"DURATION has a unit: ns, us, ms or s (1.5ms is 1500us). \"sample clear\"\n"
"is \"sample set PROBE every 1 interval 0\".\n",
};
