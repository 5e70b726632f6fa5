// SPDX-License-Identifier: GPL-2.0
/*
 * magnet-ctl buffer: the per-CPU rings' size and mode.
 */
#include <errno.h>
#include <string.h>

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
	static const char *const keys[] = { "size", "mode", NULL };
	struct ctl_req *r = a->req;
	const char *w;
	int k, ret;

	r->genl_cmd = MAGNET_CMD_BUFFER_SET;
	while (ctl_more(a)) {
		if (ctl_output_option(a))
			continue;
		w = a->argv[a->i++];
		k = ctl_keyword(a, w, keys, "keyword");
		if (k < 0)
			return -1;
		if (r->buffer_attrs & CTL_BIT(k ? MAGNET_BUFFER_A_MODE : MAGNET_BUFFER_A_SIZE))
			return ctl_usage_error(a, "'%s' given twice", keys[k]);
		if (k == 0) {
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
		return ctl_usage_error(a, "missing 'size SIZE' or 'mode discard|overwrite'");
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
	pr_u64("cpus", " cpus %llu\n",
	       b[MAGNET_BUFFER_A_CPUS] ? ctl_nla_uint(b[MAGNET_BUFFER_A_CPUS]) : 0);
	pr_record_close();
	*got = true;
	return 0;
}

static int run_show(struct ctl_nl *nl, struct ctl_req *r)
{
	bool got = false;
	int ret;

	ret = ctl_nl_request(nl, r, "buffer show", show_reply, NULL, &got);
	if (!ret && !got) {
		fprintf(ctl_errf, PROG ": buffer show: the kernel sent no buffer attributes\n");
		return CTL_EXIT_FAIL;
	}
	return ret;
}

static int run_set(struct ctl_nl *nl, struct ctl_req *r)
{
	return ctl_nl_request(nl, r, "buffer set", NULL, NULL, NULL);
}

static const struct ctl_cmd buffer_cmds[] = {
	{ "show", "[-j|-m]", parse_show, run_show },
	{ "set", "[size SIZE] [mode discard|overwrite]", parse_set, run_set },
	{ NULL, NULL, NULL, NULL },
};

const struct ctl_object ctl_buffer_object = {
	.name = "buffer",
	.summary = "the per-CPU rings: show, set",
	.cmds = buffer_cmds,
	.dflt = "show",
	.notes =
"SIZE is bytes per CPU, a power of two, with an optional K, M or G (powers\n"
"of 1024: 4M is 4194304). The kernel refuses sizes out of its range, and any\n"
"change while a reader has a ring open (EBUSY). \"buffer\" alone is\n"
"\"buffer show\".\n",
};
