// SPDX-License-Identifier: GPL-2.0
/*
 * The generic-netlink control plane (paper §3.5's magnetk, modernised).
 * Every command and attribute is documented in include/uapi/linux/magnet.h.
 * Policies are strict; every refusal says why in the extended ACK.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/kallsyms.h>
#include <net/genetlink.h>
#include "alarm.h"
#include "buffer.h"
#include "compat.h"
#include "filter.h"
#include "netlink.h"
#include "probe.h"

static const struct nla_policy mg_probe_policy[MAGNET_PROBE_A_MAX + 1] = {
	/* (policy bounds are s16: 65535 would read as -1, so no max here) */
	[MAGNET_PROBE_A_ID] = NLA_POLICY_MIN(NLA_U16, MAGNET_EVENT_FIRST_DYNAMIC),
	[MAGNET_PROBE_A_NAME] = { .type = NLA_NUL_STRING, .len = MAGNET_NAME_MAX },
	[MAGNET_PROBE_A_TYPE] = NLA_POLICY_RANGE(NLA_U8, MAGNET_PROBE_KPROBE,
						 MAGNET_PROBE_TRACEPOINT),
	[MAGNET_PROBE_A_SYMBOL] = { .type = NLA_NUL_STRING, .len = KSYM_NAME_LEN - 1 },
	[MAGNET_PROBE_A_OFFSET] = { .type = NLA_U32 },
	[MAGNET_PROBE_A_NARGS] = NLA_POLICY_MAX(NLA_U8, MAGNET_ARGS_MAX),
	[MAGNET_PROBE_A_CAPTURE_LEN] = NLA_POLICY_RANGE(NLA_U16, 1, MAGNET_PAYLOAD_MAX),
	[MAGNET_PROBE_A_CAPTURE_ARG] = NLA_POLICY_MAX(NLA_U8, MAGNET_ARGS_MAX - 1),
	[MAGNET_PROBE_A_HANDLER] = { .type = NLA_NUL_STRING, .len = 15 },
	[MAGNET_PROBE_A_FLAGS] = NLA_POLICY_MASK(NLA_U32, __MAGNET_PROBE_F_ALL),
	[MAGNET_PROBE_A_SAMPLE_EVERY] = { .type = NLA_U32 },
	[MAGNET_PROBE_A_SAMPLE_INTERVAL_NS] = { .type = NLA_U64 },
	[MAGNET_PROBE_A_FILTERS] = { .type = NLA_REJECT },	/* replies only */
	[MAGNET_PROBE_A_STATS] = { .type = NLA_REJECT },
};

static const struct nla_policy mg_filter_policy[MAGNET_FILTER_A_MAX + 1] = {
	[MAGNET_FILTER_A_ID] = NLA_POLICY_MIN(NLA_U32, 1),
	[MAGNET_FILTER_A_KIND] = NLA_POLICY_RANGE(NLA_U8, MAGNET_FILTER_CPU,
						  __MAGNET_FILTER_KIND_LAST - 1),
	[MAGNET_FILTER_A_ACTION] = NLA_POLICY_RANGE(NLA_U8, MAGNET_FILTER_INCLUDE,
						    MAGNET_FILTER_EXCLUDE),
	[MAGNET_FILTER_A_VALUE] = { .type = NLA_U64 },
	[MAGNET_FILTER_A_CPUS] = { .type = NLA_BINARY, .len = 1024 },
};

static const struct nla_policy mg_buffer_policy[MAGNET_BUFFER_A_MAX + 1] = {
	[MAGNET_BUFFER_A_SIZE] = { .type = NLA_U64 },
	[MAGNET_BUFFER_A_MODE] = NLA_POLICY_MAX(NLA_U8, MAGNET_BUFFER_OVERWRITE),
	[MAGNET_BUFFER_A_CPUS] = { .type = NLA_REJECT },
	[MAGNET_BUFFER_A_FAIR_FILL] = NLA_POLICY_MAX(NLA_U8, MAGNET_FAIR_FILL_MAX),
};

static const struct nla_policy mg_policy[MAGNET_A_MAX + 1] = {
	[MAGNET_A_PROBE] = NLA_POLICY_NESTED(mg_probe_policy),
	[MAGNET_A_FILTER] = NLA_POLICY_NESTED(mg_filter_policy),
	[MAGNET_A_BUFFER] = NLA_POLICY_NESTED(mg_buffer_policy),
	[MAGNET_A_CPU_STATS] = { .type = NLA_REJECT },
	[MAGNET_A_ALARM] = { .type = NLA_REJECT },
	[MAGNET_A_GENERATION] = { .type = NLA_REJECT },
	[MAGNET_A_JOB] = { .type = NLA_REJECT },
};

static struct genl_family mg_family;
static bool mg_nl_live;		/* alarms are sent only while registered */

enum { MG_MCGRP_ALARM };

/*
 * Alarms carry pids and abstract ids (kernel pointers, often): joining
 * needs what every command needs. Kernels with the stable backport
 * "genetlink: Use internal flags for multicast groups" (6.1.y among them)
 * check only the GENL_MCAST_CAP_* flags in genl_bind() and ignore
 * GENL_*_PERM there; older ones check GENL_UNS_ADMIN_PERM (CAP_NET_ADMIN
 * in the namespace's user namespace: the family lives in init_net only)
 * and have no way to ask for CAP_SYS_ADMIN.
 */
#ifdef GENL_MCAST_CAP_SYS_ADMIN
#define MG_MCGRP_PERM	(GENL_MCAST_CAP_NET_ADMIN | GENL_MCAST_CAP_SYS_ADMIN)
#else
#define MG_MCGRP_PERM	GENL_UNS_ADMIN_PERM
#endif

static const struct genl_multicast_group mg_mcgrps[] = {
	[MG_MCGRP_ALARM] = { .name = MAGNET_GENL_MCGRP_ALARM, .flags = MG_MCGRP_PERM },
};

/* Parse the MAGNET_A_PROBE nest of a request. */
static int mg_parse_probe(struct genl_info *info, struct nlattr **tb)
{
	if (!info->attrs[MAGNET_A_PROBE]) {
		NL_SET_ERR_MSG(info->extack, "missing MAGNET_A_PROBE");
		return -EINVAL;
	}
	return nla_parse_nested(tb, MAGNET_PROBE_A_MAX, info->attrs[MAGNET_A_PROBE],
				mg_probe_policy, info->extack);
}

/* The probe a request names by id or by name; with mg_probes_lock held. */
static struct mg_probe *mg_lookup(struct genl_info *info, struct nlattr **tb)
{
	struct mg_probe *p;

	if (!tb[MAGNET_PROBE_A_ID] && !tb[MAGNET_PROBE_A_NAME]) {
		NL_SET_ERR_MSG(info->extack, "name the probe: MAGNET_PROBE_A_ID or _NAME");
		return ERR_PTR(-EINVAL);
	}
	p = mg_probe_find(tb[MAGNET_PROBE_A_ID] ? nla_get_u16(tb[MAGNET_PROBE_A_ID]) : -1,
			  tb[MAGNET_PROBE_A_NAME] ? nla_data(tb[MAGNET_PROBE_A_NAME]) : NULL);
	if (!p) {
		NL_SET_ERR_MSG(info->extack, "no such probe");
		return ERR_PTR(-ENOENT);
	}
	return p;
}

static int mg_put_filters(struct sk_buff *skb, const struct mg_probe *p)
{
	const struct mg_filter_set *fs = rcu_dereference_protected(p->filters,
							lockdep_is_held(&mg_probes_lock));
	struct nlattr *all, *one;
	unsigned int i;

	all = nla_nest_start(skb, MAGNET_PROBE_A_FILTERS);
	if (!all)
		return -EMSGSIZE;
	for (i = 0; fs && i < fs->n; i++) {
		const struct mg_filter *f = &fs->f[i];

		one = nla_nest_start(skb, MAGNET_A_FILTER);
		if (!one || nla_put_u32(skb, MAGNET_FILTER_A_ID, f->id) ||
		    nla_put_u8(skb, MAGNET_FILTER_A_KIND, f->kind) ||
		    nla_put_u8(skb, MAGNET_FILTER_A_ACTION, f->action))
			return -EMSGSIZE;
		if (f->kind == MAGNET_FILTER_CPU) {
			unsigned int words = DIV_ROUND_UP(nr_cpu_ids, 64);
			struct nlattr *a = nla_reserve(skb, MAGNET_FILTER_A_CPUS, words * 8);

			if (!a)
				return -EMSGSIZE;
			bitmap_to_arr64(nla_data(a), f->cpus, nr_cpu_ids);
		} else if (nla_put_u64_64bit(skb, MAGNET_FILTER_A_VALUE, f->value, 0)) {
			return -EMSGSIZE;
		}
		nla_nest_end(skb, one);
	}
	nla_nest_end(skb, all);
	return 0;
}

static int mg_put_probe(struct sk_buff *skb, const struct mg_probe *p)
{
	struct nlattr *nest, *st;
	struct mg_probe_pcpu sum;

	nest = nla_nest_start(skb, MAGNET_A_PROBE);
	if (!nest)
		return -EMSGSIZE;
	if (nla_put_u16(skb, MAGNET_PROBE_A_ID, p->id) ||
	    nla_put_string(skb, MAGNET_PROBE_A_NAME, p->name) ||
	    nla_put_u8(skb, MAGNET_PROBE_A_TYPE, p->type) ||
	    nla_put_string(skb, MAGNET_PROBE_A_SYMBOL, p->symbol) ||
	    nla_put_u32(skb, MAGNET_PROBE_A_OFFSET, p->offset) ||
	    nla_put_u8(skb, MAGNET_PROBE_A_NARGS, p->nargs) ||
	    nla_put_u16(skb, MAGNET_PROBE_A_CAPTURE_LEN, p->capture_len) ||
	    nla_put_u8(skb, MAGNET_PROBE_A_CAPTURE_ARG, p->capture_arg) ||
	    nla_put_string(skb, MAGNET_PROBE_A_HANDLER, mg_handler_name(p->handler)) ||
	    nla_put_u32(skb, MAGNET_PROBE_A_FLAGS, p->flags) ||
	    nla_put_u32(skb, MAGNET_PROBE_A_SAMPLE_EVERY, p->sample_every) ||
	    nla_put_u64_64bit(skb, MAGNET_PROBE_A_SAMPLE_INTERVAL_NS, p->sample_interval, 0) ||
	    mg_put_filters(skb, p))
		return -EMSGSIZE;
	mg_probe_sum(p, &sum);
	st = nla_nest_start(skb, MAGNET_PROBE_A_STATS);
	if (!st ||
	    nla_put_u64_64bit(skb, MAGNET_PSTAT_A_HITS, sum.hits, MAGNET_PSTAT_A_PAD) ||
	    nla_put_u64_64bit(skb, MAGNET_PSTAT_A_FILTERED, sum.filtered, MAGNET_PSTAT_A_PAD) ||
	    nla_put_u64_64bit(skb, MAGNET_PSTAT_A_SAMPLED, sum.sampled, MAGNET_PSTAT_A_PAD) ||
	    nla_put_u64_64bit(skb, MAGNET_PSTAT_A_RECORDED, sum.recorded, MAGNET_PSTAT_A_PAD) ||
	    nla_put_u64_64bit(skb, MAGNET_PSTAT_A_LOST, sum.lost, MAGNET_PSTAT_A_PAD) ||
	    nla_put_u64_64bit(skb, MAGNET_PSTAT_A_MISSED, mg_probe_missed(p), MAGNET_PSTAT_A_PAD) ||
	    nla_put_u64_64bit(skb, MAGNET_PSTAT_A_ALARMS, sum.alarms, MAGNET_PSTAT_A_PAD) ||
	    nla_put_u64_64bit(skb, MAGNET_PSTAT_A_ALARMS_DROPPED, sum.alarms_dropped,
			      MAGNET_PSTAT_A_PAD))
		return -EMSGSIZE;
	nla_nest_end(skb, st);
	nla_nest_end(skb, nest);
	return 0;
}

/* A reply to @info carrying what @fill puts in. */
static int mg_reply(struct genl_info *info, u8 cmd,
		    int (*fill)(struct sk_buff *skb, const void *arg), const void *arg)
{
	struct sk_buff *skb = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	void *hdr;

	if (!skb)
		return -ENOMEM;
	hdr = genlmsg_put_reply(skb, info, &mg_family, 0, cmd);
	if (!hdr || fill(skb, arg)) {
		nlmsg_free(skb);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return genlmsg_reply(skb, info);
}

static int mg_fill_probe(struct sk_buff *skb, const void *arg)
{
	return mg_put_probe(skb, arg);
}

static int mg_fill_probe_id(struct sk_buff *skb, const void *arg)
{
	const struct mg_probe *p = arg;
	struct nlattr *nest = nla_nest_start(skb, MAGNET_A_PROBE);

	if (!nest || nla_put_u16(skb, MAGNET_PROBE_A_ID, p->id) ||
	    nla_put_string(skb, MAGNET_PROBE_A_NAME, p->name))
		return -EMSGSIZE;
	nla_nest_end(skb, nest);
	return 0;
}

static int mg_handler_from(struct genl_info *info, struct nlattr *attr, u8 *handler)
{
	if (!attr || !strcmp(nla_data(attr), "generic")) {
		*handler = MAGNET_HANDLER_GENERIC;
	} else if (!strcmp(nla_data(attr), "sock")) {
		*handler = MAGNET_HANDLER_SOCK;
	} else if (!strcmp(nla_data(attr), "skb")) {
		*handler = MAGNET_HANDLER_SKB;
	} else if (!strcmp(nla_data(attr), "switch")) {
		*handler = MAGNET_HANDLER_SWITCH;
	} else {
		NL_SET_ERR_MSG_ATTR(info->extack, attr,
				    "unknown handler: use generic, sock, skb or switch");
		return -EINVAL;
	}
	return 0;
}

static int mg_nl_probe_add(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *tb[MAGNET_PROBE_A_MAX + 1];
	struct mg_probe_spec s = { 0 };
	struct mg_probe *p;
	int ret;

	ret = mg_parse_probe(info, tb);
	if (ret)
		return ret;
	if (!tb[MAGNET_PROBE_A_TYPE] || !tb[MAGNET_PROBE_A_SYMBOL]) {
		NL_SET_ERR_MSG(info->extack, "a probe needs MAGNET_PROBE_A_TYPE and _SYMBOL");
		return -EINVAL;
	}
	if (tb[MAGNET_PROBE_A_ID] || tb[MAGNET_PROBE_A_SAMPLE_EVERY] ||
	    tb[MAGNET_PROBE_A_SAMPLE_INTERVAL_NS]) {
		NL_SET_ERR_MSG(info->extack, "ids are assigned; sampling is set with SAMPLE_SET");
		return -EINVAL;
	}
	s.type = nla_get_u8(tb[MAGNET_PROBE_A_TYPE]);
	if (s.type == MAGNET_PROBE_CUSTOM) {
		NL_SET_ERR_MSG_ATTR(info->extack, tb[MAGNET_PROBE_A_TYPE],
				    "custom events are registered by kernel modules (magnet/kapi.h)");
		return -EINVAL;
	}
	s.symbol = nla_data(tb[MAGNET_PROBE_A_SYMBOL]);
	s.name = tb[MAGNET_PROBE_A_NAME] ? nla_data(tb[MAGNET_PROBE_A_NAME]) : NULL;
	s.offset = tb[MAGNET_PROBE_A_OFFSET] ? nla_get_u32(tb[MAGNET_PROBE_A_OFFSET]) : 0;
	s.nargs = tb[MAGNET_PROBE_A_NARGS] ? nla_get_u8(tb[MAGNET_PROBE_A_NARGS]) : MG_NARGS_ALL;
	s.capture_len = tb[MAGNET_PROBE_A_CAPTURE_LEN] ?
			nla_get_u16(tb[MAGNET_PROBE_A_CAPTURE_LEN]) : 0;
	s.capture_arg = tb[MAGNET_PROBE_A_CAPTURE_ARG] ?
			nla_get_u8(tb[MAGNET_PROBE_A_CAPTURE_ARG]) : 0;
	s.flags = tb[MAGNET_PROBE_A_FLAGS] ? nla_get_u32(tb[MAGNET_PROBE_A_FLAGS]) : 0;
	ret = mg_handler_from(info, tb[MAGNET_PROBE_A_HANDLER], &s.handler);
	if (ret)
		return ret;
	/* Named handlers pick their argument: only generic captures from one. */
	if (s.handler != MAGNET_HANDLER_GENERIC && tb[MAGNET_PROBE_A_CAPTURE_ARG]) {
		NL_SET_ERR_MSG_ATTR(info->extack, tb[MAGNET_PROBE_A_CAPTURE_ARG],
				    "CAPTURE_ARG is the generic handler's (handler skb finds its struct sk_buff * itself)");
		return -EINVAL;
	}
	if (s.handler == MAGNET_HANDLER_GENERIC &&
	    !!tb[MAGNET_PROBE_A_CAPTURE_LEN] != !!tb[MAGNET_PROBE_A_CAPTURE_ARG]) {
		NL_SET_ERR_MSG(info->extack, "a capture needs both CAPTURE_LEN and CAPTURE_ARG");
		return -EINVAL;
	}

	mutex_lock(&mg_probes_lock);
	p = mg_probe_add(&s, info->extack);
	ret = IS_ERR(p) ? PTR_ERR(p) : mg_reply(info, MAGNET_CMD_PROBE_ADD, mg_fill_probe_id, p);
	mutex_unlock(&mg_probes_lock);
	return ret;
}

/*
 * The shape of every command that acts on one probe: parse its nest, take
 * the lock, find the probe by id or name, act.
 */
static int mg_with_probe(struct genl_info *info,
			 int (*act)(struct genl_info *info, struct nlattr **tb, struct mg_probe *p))
{
	struct nlattr *tb[MAGNET_PROBE_A_MAX + 1];
	struct mg_probe *p;
	int ret;

	ret = mg_parse_probe(info, tb);
	if (ret)
		return ret;
	mutex_lock(&mg_probes_lock);
	p = mg_lookup(info, tb);
	ret = IS_ERR(p) ? PTR_ERR(p) : act(info, tb, p);
	mutex_unlock(&mg_probes_lock);
	return ret;
}

static int mg_act_del(struct genl_info *info, struct nlattr **tb, struct mg_probe *p)
{
	if (p->type == MAGNET_PROBE_CUSTOM) {
		NL_SET_ERR_MSG(info->extack,
			       "a kernel module's event: only that module removes it");
		return -EPERM;
	}
	return mg_probe_del(p);
}

static int mg_nl_probe_del(struct sk_buff *skb, struct genl_info *info)
{
	return mg_with_probe(info, mg_act_del);
}

static int mg_act_get(struct genl_info *info, struct nlattr **tb, struct mg_probe *p)
{
	return mg_reply(info, MAGNET_CMD_PROBE_GET, mg_fill_probe, p);
}

static int mg_nl_probe_get(struct sk_buff *skb, struct genl_info *info)
{
	return mg_with_probe(info, mg_act_get);
}

static int mg_dump_start(struct netlink_callback *cb)
{
	/* Dumps skip pre_doit: the same capability rule applies. */
	if (!netlink_capable(cb->skb, CAP_SYS_ADMIN)) {
		NL_SET_ERR_MSG(cb->extack, "magnet needs CAP_SYS_ADMIN");
		return -EPERM;
	}
	return 0;
}

/* cb->args[0]: probes already sent. */
static int mg_nl_probe_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct mg_probe *p;
	long idx = 0;
	void *hdr;

	mutex_lock(&mg_probes_lock);
	cb->seq = mg_probes_generation;
	list_for_each_entry(p, &mg_probes, node) {
		if (idx++ < cb->args[0])
			continue;
		hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
				  &mg_family, NLM_F_MULTI, MAGNET_CMD_PROBE_GET);
		if (!hdr)
			break;
		genl_dump_check_consistent(cb, hdr);
		if (nla_put_u32(skb, MAGNET_A_GENERATION, mg_probes_generation) ||
		    mg_put_probe(skb, p)) {
			genlmsg_cancel(skb, hdr);
			break;
		}
		genlmsg_end(skb, hdr);
		cb->args[0] = idx;
	}
	mutex_unlock(&mg_probes_lock);
	return skb->len;
}

static int mg_act_set(struct genl_info *info, struct nlattr **tb, struct mg_probe *p)
{
	if (!tb[MAGNET_PROBE_A_FLAGS]) {
		NL_SET_ERR_MSG(info->extack, "PROBE_SET changes MAGNET_PROBE_A_FLAGS: give it");
		return -EINVAL;
	}
	return mg_probe_set_flags(p, nla_get_u32(tb[MAGNET_PROBE_A_FLAGS]));
}

static int mg_nl_probe_set(struct sk_buff *skb, struct genl_info *info)
{
	return mg_with_probe(info, mg_act_set);
}

static int mg_fill_filter_id(struct sk_buff *skb, const void *arg)
{
	struct nlattr *nest = nla_nest_start(skb, MAGNET_A_FILTER);

	if (!nest || nla_put_u32(skb, MAGNET_FILTER_A_ID, *(const u32 *)arg))
		return -EMSGSIZE;
	nla_nest_end(skb, nest);
	return 0;
}

/* The MAGNET_A_FILTER nest of a request. */
static int mg_parse_filter(struct genl_info *info, struct nlattr **ft)
{
	if (!info->attrs[MAGNET_A_FILTER]) {
		NL_SET_ERR_MSG(info->extack, "missing MAGNET_A_FILTER");
		return -EINVAL;
	}
	return nla_parse_nested(ft, MAGNET_FILTER_A_MAX, info->attrs[MAGNET_A_FILTER],
				mg_filter_policy, info->extack);
}

static int mg_act_filter_add(struct genl_info *info, struct nlattr **tb, struct mg_probe *p)
{
	struct nlattr *ft[MAGNET_FILTER_A_MAX + 1];
	struct mg_filter f = { 0 };
	u32 id;
	int ret;

	ret = mg_parse_filter(info, ft);
	if (ret)
		return ret;
	if (!ft[MAGNET_FILTER_A_KIND] || !ft[MAGNET_FILTER_A_ACTION] || ft[MAGNET_FILTER_A_ID]) {
		NL_SET_ERR_MSG(info->extack, "a filter needs KIND and ACTION (and no ID)");
		return -EINVAL;
	}
	f.kind = nla_get_u8(ft[MAGNET_FILTER_A_KIND]);
	f.action = nla_get_u8(ft[MAGNET_FILTER_A_ACTION]);
	if (f.kind == MAGNET_FILTER_CPU) {
		struct nlattr *a = ft[MAGNET_FILTER_A_CPUS];

		if (!a || ft[MAGNET_FILTER_A_VALUE] || nla_len(a) % sizeof(u64)) {
			NL_SET_ERR_MSG(info->extack,
				       "a cpu filter needs CPUS, a bitmap of u64 words");
			return -EINVAL;
		}
		f.cpus = bitmap_zalloc(nr_cpu_ids, GFP_KERNEL);
		if (!f.cpus)
			return -ENOMEM;
		bitmap_from_arr64(f.cpus, nla_data(a),
				  min_t(unsigned int, nla_len(a) * 8, nr_cpu_ids));
		if (bitmap_empty(f.cpus, nr_cpu_ids)) {
			NL_SET_ERR_MSG_ATTR(info->extack, a,
					    "the CPU set names no CPU of this machine");
			ret = -EINVAL;
			goto out;
		}
	} else {
		if (!ft[MAGNET_FILTER_A_VALUE] || ft[MAGNET_FILTER_A_CPUS]) {
			NL_SET_ERR_MSG(info->extack, "this filter kind needs VALUE (and no CPUS)");
			return -EINVAL;
		}
		f.value = nla_get_u64(ft[MAGNET_FILTER_A_VALUE]);
	}
	ret = mg_filter_add(p, &f, &id);
	if (ret == -ENOSPC)
		NL_SET_ERR_MSG(info->extack, "this probe has the most filters allowed ("
			       __stringify(MAGNET_FILTERS_MAX) ")");
	if (!ret) {
		mg_probes_generation++;
		ret = mg_reply(info, MAGNET_CMD_FILTER_ADD, mg_fill_filter_id, &id);
	}
out:
	bitmap_free(f.cpus);
	return ret;
}

static int mg_nl_filter_add(struct sk_buff *skb, struct genl_info *info)
{
	return mg_with_probe(info, mg_act_filter_add);
}

static int mg_act_filter_del(struct genl_info *info, struct nlattr **tb, struct mg_probe *p)
{
	struct nlattr *ft[MAGNET_FILTER_A_MAX + 1];
	int ret;

	ret = mg_parse_filter(info, ft);
	if (ret)
		return ret;
	if (!ft[MAGNET_FILTER_A_ID]) {
		NL_SET_ERR_MSG(info->extack, "name the filter: MAGNET_FILTER_A_ID");
		return -EINVAL;
	}
	ret = mg_filter_del(p, nla_get_u32(ft[MAGNET_FILTER_A_ID]));
	if (ret == -ENOENT)
		NL_SET_ERR_MSG(info->extack, "this probe has no filter with that id");
	else if (!ret)
		mg_probes_generation++;
	return ret;
}

static int mg_nl_filter_del(struct sk_buff *skb, struct genl_info *info)
{
	return mg_with_probe(info, mg_act_filter_del);
}

static int mg_act_sample_set(struct genl_info *info, struct nlattr **tb, struct mg_probe *p)
{
	if (!tb[MAGNET_PROBE_A_SAMPLE_EVERY] && !tb[MAGNET_PROBE_A_SAMPLE_INTERVAL_NS]) {
		NL_SET_ERR_MSG(info->extack, "give SAMPLE_EVERY and/or SAMPLE_INTERVAL_NS");
		return -EINVAL;
	}
	if (tb[MAGNET_PROBE_A_SAMPLE_EVERY])
		WRITE_ONCE(p->sample_every, nla_get_u32(tb[MAGNET_PROBE_A_SAMPLE_EVERY]));
	if (tb[MAGNET_PROBE_A_SAMPLE_INTERVAL_NS]) {
		u64 interval = nla_get_u64(tb[MAGNET_PROBE_A_SAMPLE_INTERVAL_NS]);

		/*
		 * As if the last hit taken were one interval ago: the next hit
		 * passes. (0 would hold every hit back until the clock, which
		 * counts from boot, passed the interval; the sum wraps harmlessly.)
		 */
		atomic64_set(&p->sample_last, ktime_get_mono_fast_ns() - interval);
		WRITE_ONCE(p->sample_interval, interval);
	}
	mg_probes_generation++;
	return 0;
}

static int mg_nl_sample_set(struct sk_buff *skb, struct genl_info *info)
{
	return mg_with_probe(info, mg_act_sample_set);
}

static int mg_fill_buffer(struct sk_buff *skb, const void *arg)
{
	struct nlattr *nest = nla_nest_start(skb, MAGNET_A_BUFFER);

	if (!nest ||
	    nla_put_u64_64bit(skb, MAGNET_BUFFER_A_SIZE, mg_buffers_size(), 0) ||
	    nla_put_u8(skb, MAGNET_BUFFER_A_MODE, mg_buffers_mode()) ||
	    nla_put_u32(skb, MAGNET_BUFFER_A_CPUS, num_possible_cpus()) ||
	    nla_put_u8(skb, MAGNET_BUFFER_A_FAIR_FILL, mg_fair_get_fill()))
		return -EMSGSIZE;
	nla_nest_end(skb, nest);
	return 0;
}

static int mg_nl_buffer_get(struct sk_buff *skb, struct genl_info *info)
{
	return mg_reply(info, MAGNET_CMD_BUFFER_GET, mg_fill_buffer, NULL);
}

static int mg_nl_buffer_set(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *bt[MAGNET_BUFFER_A_MAX + 1];
	unsigned long size;
	int mode;
	int ret;

	if (!info->attrs[MAGNET_A_BUFFER]) {
		NL_SET_ERR_MSG(info->extack, "missing MAGNET_A_BUFFER");
		return -EINVAL;
	}
	ret = nla_parse_nested(bt, MAGNET_BUFFER_A_MAX, info->attrs[MAGNET_A_BUFFER],
			       mg_buffer_policy, info->extack);
	if (ret)
		return ret;
	/* The threshold alone keeps the rings: no reader needs to let go. */
	if (!bt[MAGNET_BUFFER_A_SIZE] && !bt[MAGNET_BUFFER_A_MODE]) {
		if (bt[MAGNET_BUFFER_A_FAIR_FILL])
			mg_fair_set_fill(nla_get_u8(bt[MAGNET_BUFFER_A_FAIR_FILL]));
		return 0;
	}
	/* What is not given stays: mg_buffers_resize() reads it under its lock. */
	size = bt[MAGNET_BUFFER_A_SIZE] ? nla_get_u64(bt[MAGNET_BUFFER_A_SIZE]) : 0;
	mode = bt[MAGNET_BUFFER_A_MODE] ? nla_get_u8(bt[MAGNET_BUFFER_A_MODE]) : -1;
	if (bt[MAGNET_BUFFER_A_SIZE] &&
	    (size < MAGNET_BUFFER_SIZE_MIN || size > MAGNET_BUFFER_SIZE_MAX ||
	     !is_power_of_2(size))) {
		NL_SET_ERR_MSG_ATTR(info->extack, bt[MAGNET_BUFFER_A_SIZE],
				    "the size must be a power of two from MAGNET_BUFFER_SIZE_MIN ("
				    __stringify(MAGNET_BUFFER_SIZE_MIN_KIB) " KiB) to _MAX ("
				    __stringify(MAGNET_BUFFER_SIZE_MAX_MIB) " MiB)");
		return -EINVAL;
	}
	ret = mg_buffers_resize(size, mode);
	if (ret == -EBUSY)
		NL_SET_ERR_MSG(info->extack, "a reader is attached to a ring: close it first");
	else if (ret == -ENOMEM)
		NL_SET_ERR_MSG(info->extack, "not enough memory for rings of this size");
	else if (!ret && bt[MAGNET_BUFFER_A_FAIR_FILL])
		mg_fair_set_fill(nla_get_u8(bt[MAGNET_BUFFER_A_FAIR_FILL]));
	return ret;
}

/* cb->args[0]: next CPU. */
static int mg_nl_stats_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	unsigned int cpu;
	void *hdr;

	for (cpu = cb->args[0]; cpu < nr_cpu_ids; cpu++) {
		struct mg_ring_stats st;
		struct nlattr *nest;

		if (!cpu_possible(cpu))
			continue;
		mg_buffer_stats(mg_bufs[cpu], &st);
		hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
				  &mg_family, NLM_F_MULTI, MAGNET_CMD_STATS_GET);
		if (!hdr)
			break;
		nest = nla_nest_start(skb, MAGNET_A_CPU_STATS);
		if (!nest || nla_put_u32(skb, MAGNET_CSTAT_A_CPU, cpu) ||
		    nla_put_u64_64bit(skb, MAGNET_CSTAT_A_WRITTEN, st.written,
				      MAGNET_CSTAT_A_PAD) ||
		    nla_put_u64_64bit(skb, MAGNET_CSTAT_A_BYTES, st.bytes, MAGNET_CSTAT_A_PAD) ||
		    nla_put_u64_64bit(skb, MAGNET_CSTAT_A_LOST_FULL, st.lost_full,
				      MAGNET_CSTAT_A_PAD) ||
		    nla_put_u64_64bit(skb, MAGNET_CSTAT_A_LOST_TOO_BIG, st.lost_too_big,
				      MAGNET_CSTAT_A_PAD) ||
		    nla_put_u64_64bit(skb, MAGNET_CSTAT_A_LOST_NESTING, st.lost_nesting,
				      MAGNET_CSTAT_A_PAD) ||
		    nla_put_u64_64bit(skb, MAGNET_CSTAT_A_OVERWRITTEN, st.overwritten,
				      MAGNET_CSTAT_A_PAD) ||
		    nla_put_u64_64bit(skb, MAGNET_CSTAT_A_DISCARDED, st.discarded,
				      MAGNET_CSTAT_A_PAD) ||
		    nla_put_u64_64bit(skb, MAGNET_CSTAT_A_LOST_FAIR,
				      mg_fair_lost(&mg_bufs[cpu]->fair), MAGNET_CSTAT_A_PAD)) {
			genlmsg_cancel(skb, hdr);
			break;
		}
		nla_nest_end(skb, nest);
		genlmsg_end(skb, hdr);
	}
	cb->args[0] = cpu;
	return skb->len;
}

static int mg_put_job(struct sk_buff *skb, unsigned int cpu, const struct mg_fair_stat *st)
{
	struct nlattr *nest = nla_nest_start(skb, MAGNET_A_JOB);

	if (!nest || nla_put_u32(skb, MAGNET_JOB_A_CPU, cpu) ||
	    nla_put_u64_64bit(skb, MAGNET_JOB_A_CGROUP, st->cgroup, MAGNET_JOB_A_PAD) ||
	    nla_put_u64_64bit(skb, MAGNET_JOB_A_WRITTEN, st->written, MAGNET_JOB_A_PAD) ||
	    nla_put_u64_64bit(skb, MAGNET_JOB_A_LOST_FAIR, st->lost_fair, MAGNET_JOB_A_PAD) ||
	    nla_put_u64_64bit(skb, MAGNET_JOB_A_PENDING, st->pending, MAGNET_JOB_A_PAD) ||
	    nla_put_u64_64bit(skb, MAGNET_JOB_A_LOST_RING, st->lost_ring, MAGNET_JOB_A_PAD))
		return -EMSGSIZE;
	nla_nest_end(skb, nest);
	return 0;
}

/* cb->args[0]: the CPU, cb->args[1]: the next entry of its table. */
static int mg_nl_jobs_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	unsigned int cpu = cb->args[0], idx = cb->args[1];
	struct mg_fair_stat st;
	void *hdr;

	for (; cpu < nr_cpu_ids; cpu++, idx = 0) {
		if (!cpu_possible(cpu))
			continue;
		for (; idx < MG_FAIR_ENTRIES; idx++) {
			if (mg_fair_entry(&mg_bufs[cpu]->fair, idx, &st))
				continue;
			hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
					  &mg_family, NLM_F_MULTI, MAGNET_CMD_JOBS_GET);
			if (!hdr)
				goto out;
			if (mg_put_job(skb, cpu, &st)) {
				genlmsg_cancel(skb, hdr);
				goto out;
			}
			genlmsg_end(skb, hdr);
		}
	}
out:
	cb->args[0] = cpu;
	cb->args[1] = idx;
	return skb->len;
}

/* From the alarm worker (process context). */
void mg_netlink_alarm(const struct mg_alarm *a)
{
	struct sk_buff *skb;
	struct nlattr *nest;
	void *hdr;

	if (!READ_ONCE(mg_nl_live))
		return;
	skb = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!skb)
		return;
	hdr = genlmsg_put(skb, 0, 0, &mg_family, 0, MAGNET_CMD_ALARM);
	if (!hdr)
		goto err;
	nest = nla_nest_start(skb, MAGNET_A_ALARM);
	if (!nest || nla_put_u16(skb, MAGNET_ALARM_A_PROBE_ID, a->probe_id) ||
	    nla_put_u32(skb, MAGNET_ALARM_A_CPU, a->cpu) ||
	    nla_put_u32(skb, MAGNET_ALARM_A_PID, a->pid) ||
	    nla_put_u32(skb, MAGNET_ALARM_A_TGID, a->tgid) ||
	    nla_put_u64_64bit(skb, MAGNET_ALARM_A_TIMESTAMP, a->timestamp, MAGNET_ALARM_A_PAD) ||
	    nla_put_u64_64bit(skb, MAGNET_ALARM_A_ABSTRACT_ID, a->abstract_id, MAGNET_ALARM_A_PAD))
		goto err;
	nla_nest_end(skb, nest);
	genlmsg_end(skb, hdr);
	genlmsg_multicast(&mg_family, skb, 0, MG_MCGRP_ALARM, GFP_KERNEL);
	return;
err:
	nlmsg_free(skb);
}

static int mg_pre_doit(const struct mg_genl_op *ops, struct sk_buff *skb, struct genl_info *info)
{
	if (!netlink_capable(skb, CAP_SYS_ADMIN)) {
		NL_SET_ERR_MSG(info->extack, "magnet needs CAP_SYS_ADMIN");
		return -EPERM;
	}
	return 0;
}

static const struct genl_ops mg_ops[] = {
	{ .cmd = MAGNET_CMD_PROBE_ADD, .doit = mg_nl_probe_add, .flags = GENL_ADMIN_PERM },
	{ .cmd = MAGNET_CMD_PROBE_DEL, .doit = mg_nl_probe_del, .flags = GENL_ADMIN_PERM },
	{
		.cmd = MAGNET_CMD_PROBE_GET,
		.doit = mg_nl_probe_get,
		.start = mg_dump_start,
		.dumpit = mg_nl_probe_dump,
		.flags = GENL_ADMIN_PERM,
	},
	{ .cmd = MAGNET_CMD_PROBE_SET, .doit = mg_nl_probe_set, .flags = GENL_ADMIN_PERM },
	{ .cmd = MAGNET_CMD_FILTER_ADD, .doit = mg_nl_filter_add, .flags = GENL_ADMIN_PERM },
	{ .cmd = MAGNET_CMD_FILTER_DEL, .doit = mg_nl_filter_del, .flags = GENL_ADMIN_PERM },
	{ .cmd = MAGNET_CMD_SAMPLE_SET, .doit = mg_nl_sample_set, .flags = GENL_ADMIN_PERM },
	{ .cmd = MAGNET_CMD_BUFFER_GET, .doit = mg_nl_buffer_get, .flags = GENL_ADMIN_PERM },
	{ .cmd = MAGNET_CMD_BUFFER_SET, .doit = mg_nl_buffer_set, .flags = GENL_ADMIN_PERM },
	{
		.cmd = MAGNET_CMD_STATS_GET,
		.start = mg_dump_start,
		.dumpit = mg_nl_stats_dump,
		.flags = GENL_ADMIN_PERM,
	},
	{
		.cmd = MAGNET_CMD_JOBS_GET,
		.start = mg_dump_start,
		.dumpit = mg_nl_jobs_dump,
		.flags = GENL_ADMIN_PERM,
	},
};

static struct genl_family mg_family __ro_after_init = {
	.name = MAGNET_GENL_NAME,
	.version = MAGNET_GENL_VERSION,
	.maxattr = MAGNET_A_MAX,
	.policy = mg_policy,
	.module = THIS_MODULE,
	.ops = mg_ops,
	.n_ops = ARRAY_SIZE(mg_ops),
	.mcgrps = mg_mcgrps,
	.n_mcgrps = ARRAY_SIZE(mg_mcgrps),
	.pre_doit = mg_pre_doit,
};

int __init mg_netlink_init(void)
{
	int ret = genl_register_family(&mg_family);

	WRITE_ONCE(mg_nl_live, !ret);
	return ret;
}

void mg_netlink_exit(void)
{
	WRITE_ONCE(mg_nl_live, false);
	mg_alarm_flush();	/* no alarm goes out on an unregistered family */
	genl_unregister_family(&mg_family);
}
