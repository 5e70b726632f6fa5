// SPDX-License-Identifier: GPL-2.0
/*
 * magnet-ctl filter: add, del, list. A filter keeps or drops a probe's
 * hits by process (tgid), CPU, abstract id or cgroup (and those below it).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "ctl.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC	0x63677270
#endif

static const char *const kinds[] = {
	[MAGNET_FILTER_CPU] = "cpu",
	[MAGNET_FILTER_TGID] = "tgid",
	[MAGNET_FILTER_ABSTRACT_ID] = "abstract",
	[MAGNET_FILTER_CGROUP] = "cgroup",
};

const char *ctl_filter_kind_name(__u8 kind)
{
	if (kind < sizeof(kinds) / sizeof(kinds[0]) && kinds[kind])
		return kinds[kind];
	return "unknown";
}

const char *ctl_filter_action_name(__u8 action)
{
	switch (action) {
	case MAGNET_FILTER_INCLUDE:
		return "include";
	case MAGNET_FILTER_EXCLUDE:
		return "exclude";
	}
	return "unknown";
}

/* The cgroup id of a cgroup2 directory: its inode number. */
static int cgroup_id(struct ctl_args *a, const char *path, __u64 *id)
{
	struct statfs sfs;
	struct stat st;

	*id = 0;	/* set on failure too (ctl_usage_error() is never 0) */
	if (stat(path, &st))
		return ctl_usage_error(a, "cgroup %s: %s", path, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return ctl_usage_error(a, "cgroup %s: not a directory", path);
	if (statfs(path, &sfs))
		return ctl_usage_error(a, "cgroup %s: %s", path, strerror(errno));
	if ((unsigned long)sfs.f_type != CGROUP2_SUPER_MAGIC)
		return ctl_usage_error(a, "cgroup %s: not a cgroup2 directory (mount -t cgroup2 none /sys/fs/cgroup)",
				       path);
	*id = st.st_ino;
	return 0;
}

static int parse_add(struct ctl_args *a)
{
	static const char *const words[] = {
		"include", "exclude", "tgid", "cpu", "abstract", "cgroup", NULL
	};
	static const char *const kind_words[] = {
		"tgid", "cpu", "abstract", "cgroup", NULL
	};
	static const __u8 kind_of[] = {
		MAGNET_FILTER_TGID, MAGNET_FILTER_CPU,
		MAGNET_FILTER_ABSTRACT_ID, MAGNET_FILTER_CGROUP,
	};
	struct ctl_req *r = a->req;
	const char *w;
	__u64 v;
	int k, ret;

	r->genl_cmd = MAGNET_CMD_FILTER_ADD;
	if (ctl_parse_probe_ref(a, "PROBE"))
		return -1;
	w = ctl_next(a, "tgid|cpu|abstract|cgroup");
	if (!w)
		return -1;
	k = ctl_keyword(a, w, words, "keyword");
	if (k < 0)
		return -1;
	r->action = MAGNET_FILTER_INCLUDE;
	if (k <= 1) {
		r->action = k ? MAGNET_FILTER_EXCLUDE : MAGNET_FILTER_INCLUDE;
		w = ctl_next(a, "tgid|cpu|abstract|cgroup");
		if (!w)
			return -1;
		k = ctl_keyword(a, w, kind_words, "filter kind");
		if (k < 0)
			return -1;
	} else {
		k -= 2;
	}
	r->kind = kind_of[k];
	r->filter_attrs = CTL_BIT(MAGNET_FILTER_A_KIND) |
			  CTL_BIT(MAGNET_FILTER_A_ACTION);

	switch (r->kind) {
	case MAGNET_FILTER_TGID:
		if (ctl_next_u64(a, "the process id after 'tgid'", "tgid",
				 CTL_TGID_MAX, &v))
			return -1;
		break;
	case MAGNET_FILTER_ABSTRACT_ID:
		w = ctl_next(a, "the abstract id after 'abstract'");
		if (!w)
			return -1;
		ret = ctl_parse_u64(w, UINT64_MAX, &v);
		if (ret == -ERANGE)
			return ctl_usage_error(a, "abstract %s: out of range (64 bits)", w);
		if (ret)
			return ctl_usage_error(a, "abstract %s: not a number (0xADDR or decimal)", w);
		break;
	case MAGNET_FILTER_CGROUP:
		w = ctl_next(a, "a cgroup2 directory or id after 'cgroup'");
		if (!w)
			return -1;
		/* stat("") would say "No such file or directory". */
		if (!*w)
			return ctl_usage_error(a, "cgroup: the path is empty (a cgroup2 directory or id)");
		if (ctl_is_number(w) || !strncmp(w, "0x", 2)) {
			ret = ctl_parse_u64(w, UINT64_MAX, &v);
			if (ret || !v)
				return ctl_usage_error(a, "cgroup %s: bad cgroup id", w);
		} else if (cgroup_id(a, w, &v)) {
			return -1;
		}
		break;
	case MAGNET_FILTER_CPU:
		w = ctl_next(a, "a CPU list after 'cpu'");
		if (!w)
			return -1;
		ret = ctl_parse_cpus(w, r->cpus, &r->cpu_words);
		if (ret == -ERANGE)
			return ctl_usage_error(a, "cpu %s: out of range (0..%d)",
					       w, CTL_CPUS_MAX - 1);
		if (ret)
			return ctl_usage_error(a, "cpu %s: expected a CPU list such as 0-3,5", w);
		r->filter_attrs |= CTL_BIT(MAGNET_FILTER_A_CPUS);
		return ctl_parse_end(a);
	default:	/* kind_of[] holds only the kinds above */
		return -1;
	}
	r->value = v;
	r->filter_attrs |= CTL_BIT(MAGNET_FILTER_A_VALUE);
	return ctl_parse_end(a);
}

static int parse_del(struct ctl_args *a)
{
	struct ctl_req *r = a->req;
	const char *w;
	__u64 v;
	int ret;

	r->genl_cmd = MAGNET_CMD_FILTER_DEL;
	if (ctl_parse_probe_ref(a, "PROBE"))
		return -1;
	w = ctl_next(a, "FILTER_ID");
	if (!w)
		return -1;
	ret = ctl_parse_u64(w, UINT32_MAX, &v);
	if (ret == -ERANGE)
		return ctl_usage_error(a, "filter id %s: out of range", w);
	if (ret)
		return ctl_usage_error(a, "filter id %s: not a number", w);
	r->filter_id = v;
	r->filter_attrs = CTL_BIT(MAGNET_FILTER_A_ID);
	return ctl_parse_end(a);
}

static int parse_list(struct ctl_args *a)
{
	a->req->genl_cmd = MAGNET_CMD_PROBE_GET;
	if (ctl_parse_probe_ref(a, "PROBE"))
		return -1;
	return ctl_parse_end(a);
}

void ctl_print_filter(__u16 probe, const struct ctl_filter *f)
{
	char buf[CTL_CPUS_MAX * 3];

	switch (f->kind) {
	case MAGNET_FILTER_CPU:
		ctl_format_cpus(buf, sizeof(buf), f->cpus, f->cpu_words);
		break;
	case MAGNET_FILTER_ABSTRACT_ID:
		snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)f->value);
		break;
	default:
		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)f->value);
		break;
	}
	pr_record_open("filter");
	pr_u64("probe", NULL, probe);
	pr_u64("id", "%llu:", f->id);
	pr_str("action", " %s", ctl_filter_action_name(f->action));
	pr_str("kind", " %s", ctl_filter_kind_name(f->kind));
	pr_str("value", " %s\n", buf);
	pr_record_close();
}

static int add_reply(struct nlattr **tb, void *arg)
{
	struct nlattr *f[MAGNET_FILTER_A_MAX + 1];
	long long *id = arg;

	if (!tb[MAGNET_A_FILTER])
		return 0;
	if (ctl_nla_nested(f, MAGNET_FILTER_A_MAX, tb[MAGNET_A_FILTER]) ||
	    !f[MAGNET_FILTER_A_ID])
		return -1;
	*id = ctl_nla_uint(f[MAGNET_FILTER_A_ID]);
	return 0;
}

static int run_add(struct ctl_nl *nl, struct ctl_req *r)
{
	long long id = -1;
	int ret;

	ret = ctl_nl_request(nl, r, "filter add", add_reply, NULL, &id);
	if (ret)
		return ret;
	if (id < 0) {
		fprintf(ctl_errf, PROG ": filter add: the kernel sent no filter id\n");
		return CTL_EXIT_FAIL;
	}
	pr_record_open("filter_added");
	pr_u64("id", "%llu\n", id);
	pr_record_close();
	return 0;
}

static int run_del(struct ctl_nl *nl, struct ctl_req *r)
{
	return ctl_nl_request(nl, r, "filter del", NULL, NULL, NULL);
}

static int run_list(struct ctl_nl *nl, struct ctl_req *r)
{
	struct ctl_probe p;
	unsigned int i;
	int ret;

	ret = ctl_probe_get_one(nl, r, &p, "filter list");
	if (ret)
		return ret;
	pr_array_open(NULL);
	for (i = 0; i < p.nfilters; i++)
		ctl_print_filter(p.id, &p.filters[i]);
	pr_array_close();
	free(p.filters);
	return 0;
}

static const struct ctl_cmd filter_cmds[] = {
	{ "add", "PROBE [include|exclude] tgid PID | cpu LIST | abstract ADDR | cgroup PATH|ID",
	  parse_add, run_add },
	{ "del", "PROBE FILTER_ID", parse_del, run_del },
	{ "list", "PROBE [-j|-m]", parse_list, run_list },
	{ NULL, NULL, NULL, NULL },
};

const struct ctl_object ctl_filter_object = {
	.name = "filter",
	.summary = "which hits of a probe are recorded: add, del, list",
	.cmds = filter_cmds,
	.notes =
"PROBE is an id or a name. The action defaults to include. A hit is recorded\n"
"iff it matches no exclude filter and, for each kind that has include\n"
"filters, at least one of them. LIST is CPUs and ranges: 0-3,5. ADDR is\n"
"0x-hex or decimal. cgroup takes a cgroup2 directory (its inode number is\n"
"the cgroup id) or the id itself; it covers the cgroups below too.\n"
"\"filter add\" prints the new filter's id.\n",
};
