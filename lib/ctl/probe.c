// SPDX-License-Identifier: GPL-2.0
/*
 * magnet-ctl probe: add, del, list, show, enable, disable, notify.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <netlink/attr.h>

#include "ctl.h"

const char *ctl_probe_type_name(__u8 type)
{
	switch (type) {
	case MAGNET_PROBE_KPROBE:
		return "kprobe";
	case MAGNET_PROBE_KRETPROBE:
		return "kretprobe";
	case MAGNET_PROBE_CUSTOM:
		return "custom";
	case MAGNET_PROBE_FENTRY:
		return "fentry";
	case MAGNET_PROBE_TRACEPOINT:
		return "tracepoint";
	}
	return "unknown";
}

/* ---- parsing ---- */

/* probe add set NAME [capture LEN] */
static int parse_add_set(struct ctl_args *a)
{
	static const char *const keys[] = { "capture", NULL };
	struct ctl_req *r = a->req;
	const char *w = ctl_next(a, "SET after 'set'");
	__u64 v;

	if (!w)
		return -1;
	r->set = ctl_set_find(w);
	if (!r->set)
		return ctl_usage_error(a, "no probe set '%s' (sets: %s)", w, ctl_set_names());
	while (ctl_more(a)) {
		if (ctl_output_option(a))
			continue;
		w = a->argv[a->i++];
		if (ctl_keyword(a, w, keys, "keyword") < 0)
			return -1;
		if (r->capture_len)
			return ctl_usage_error(a, "'capture' given twice");
		if (ctl_next_u64(a, "the capture length after 'capture'", "capture",
				 MAGNET_PAYLOAD_MAX - sizeof(struct magnet_skb), &v))
			return -1;
		if (!v)
			return ctl_usage_error(a, "capture 0: leave it out for the default");
		r->capture_len = v;
	}
	return 0;
}

static int parse_add(struct ctl_args *a)
{
	static const char *const types[] = {
		"kprobe", "kretprobe", "fentry", "tracepoint", "set", NULL
	};
	static const __u8 type_of[] = {
		MAGNET_PROBE_KPROBE, MAGNET_PROBE_KRETPROBE, MAGNET_PROBE_FENTRY,
		MAGNET_PROBE_TRACEPOINT
	};
	static const char *const type_article[] = {
		"a kprobe", "a kretprobe", "an fentry probe", "a tracepoint probe"
	};
	static const char *const keys[] = {
		"args", "capture", "name", "handler", "notify", "disabled", NULL
	};
	struct ctl_req *r = a->req;
	const char *w, *target;
	bool has_off, cap_arg = false;
	__u32 seen = 0;
	int k, ret;

	r->genl_cmd = MAGNET_CMD_PROBE_ADD;
	w = ctl_next(a, "kprobe|kretprobe|fentry|tracepoint|set");
	if (!w)
		return -1;
	k = ctl_keyword(a, w, types, "probe type");
	if (k < 0)
		return -1;
	if (k == 4)
		return parse_add_set(a);
	r->type = type_of[k];
	r->probe_attrs |= CTL_BIT(MAGNET_PROBE_A_TYPE);

	target = ctl_next(a, r->type == MAGNET_PROBE_TRACEPOINT ? "SUBSYSTEM:EVENT" : "SYMBOL");
	if (!target)
		return -1;
	if (r->type == MAGNET_PROBE_TRACEPOINT) {
		const char *colon = strchr(target, ':');

		if (!colon || colon == target || !colon[1] || strchr(colon + 1, ':'))
			return ctl_usage_error(a, "bad tracepoint '%s' (expected SUBSYSTEM:EVENT, as in tracefs events/, e.g. sched:sched_switch)",
					       target);
	}
	ret = ctl_parse_target(target, r->sym_buf, sizeof(r->sym_buf),
			       &r->offset, &has_off);
	if (ret == -ERANGE && !strchr(target, '+'))
		return ctl_usage_error(a, "symbol '%s' too long", target);
	if (ret == -ERANGE)
		return ctl_usage_error(a, "offset in '%s' out of range (0..4294967295)",
				       target);
	if (ret)
		return ctl_usage_error(a, "bad target '%s' (expected SYMBOL[+OFFSET])",
				       target);
	if (has_off && r->type != MAGNET_PROBE_KPROBE)
		return ctl_usage_error(a, "%s takes no +OFFSET ('%s')", type_article[k], target);
	r->symbol = r->sym_buf;
	r->probe_attrs |= CTL_BIT(MAGNET_PROBE_A_SYMBOL);
	if (has_off)
		r->probe_attrs |= CTL_BIT(MAGNET_PROBE_A_OFFSET);

	while (ctl_more(a)) {
		__u64 v;

		if (ctl_output_option(a))
			continue;
		w = a->argv[a->i++];
		k = ctl_keyword(a, w, keys, "keyword");
		if (k < 0)
			return -1;
		if (seen & (1U << k))
			return ctl_usage_error(a, "'%s' given twice", keys[k]);
		seen |= 1U << k;
		switch (k) {
		case 0:		/* args N */
			if (ctl_next_u64(a,
					 "the number of arguments after 'args'",
					 "args", MAGNET_ARGS_MAX, &v))
				return -1;
			r->nargs = v;
			r->probe_attrs |= CTL_BIT(MAGNET_PROBE_A_NARGS);
			break;
		case 1:		/* capture LEN[@ARG] */
			w = ctl_next(a, "LEN[@ARG] after 'capture'");
			if (!w)
				return -1;
			ret = ctl_parse_capture(w, &r->capture_len, &r->capture_arg);
			if (ret == -ERANGE)
				return ctl_usage_error(a, "capture %s: out of range (LEN 1..%u, ARG 0..%d)",
						       w, ctl_capture_max(r->type, 0),
						       MAGNET_ARGS_MAX - 1);
			if (ret)
				return ctl_usage_error(a, "capture %s: expected LEN[@ARG]", w);
			r->probe_attrs |= CTL_BIT(MAGNET_PROBE_A_CAPTURE_LEN);
			cap_arg = strchr(w, '@');
			break;
		case 2:		/* name NAME */
			w = ctl_next(a, "NAME after 'name'");
			if (!w)
				return -1;
			if (!*w)
				return ctl_usage_error(a, "empty probe name");
			if (ctl_is_number(w))
				return ctl_usage_error(a, "name %s: a probe name cannot be a number (numbers are ids)",
						       w);
			r->name = w;
			r->probe_attrs |= CTL_BIT(MAGNET_PROBE_A_NAME);
			break;
		case 3:		/* handler NAME */
			w = ctl_next(a, "HANDLER after 'handler'");
			if (!w)
				return -1;
			if (!*w)
				return ctl_usage_error(a, "empty handler name");
			r->handler = w;
			r->probe_attrs |= CTL_BIT(MAGNET_PROBE_A_HANDLER);
			break;
		case 4:
			r->flags |= MAGNET_PROBE_F_NOTIFY;
			r->probe_attrs |= CTL_BIT(MAGNET_PROBE_A_FLAGS);
			break;
		case 5:
			r->flags |= MAGNET_PROBE_F_DISABLED;
			r->probe_attrs |= CTL_BIT(MAGNET_PROBE_A_FLAGS);
			break;
		}
	}
	/*
	 * The generic handler copies from an argument (0 unless @ARG says);
	 * named handlers pick theirs: ARG goes to the kernel only when given.
	 */
	if (r->capture_len && (cap_arg || !r->handler || !strcmp(r->handler, "generic")))
		r->probe_attrs |= CTL_BIT(MAGNET_PROBE_A_CAPTURE_ARG);
	/*
	 * The generic layout must fit one record (PAYLOADS). A tracepoint's
	 * default argument count is the kernel's to know.
	 */
	if (r->capture_len && (!r->handler || !strcmp(r->handler, "generic")) &&
	    (r->type != MAGNET_PROBE_TRACEPOINT || (r->probe_attrs & CTL_BIT(MAGNET_PROBE_A_NARGS))) &&
	    r->capture_len > ctl_capture_max(r->type, r->nargs))
		return ctl_usage_error(a, "capture %u with args %u: at most %u bytes fit one record",
				       r->capture_len, r->nargs,
				       ctl_capture_max(r->type, r->nargs));
	return 0;
}

static int parse_ref_only(struct ctl_args *a, __u8 cmd)
{
	a->req->genl_cmd = cmd;
	if (ctl_parse_probe_ref(a, "ID|NAME"))
		return -1;
	return ctl_parse_end(a);
}

static int parse_del(struct ctl_args *a)
{
	const char *w;

	/* "del set NAME"; a probe named "set" alone is still "del set". */
	if (a->i + 1 < a->argc && !strcmp(a->argv[a->i], "set") &&
	    a->argv[a->i + 1][0] != '-') {
		a->i++;
		w = ctl_next(a, "SET after 'set'");
		a->req->set = ctl_set_find(w);
		if (!a->req->set)
			return ctl_usage_error(a, "no probe set '%s' (sets: %s)", w,
					       ctl_set_names());
		return ctl_parse_end(a);
	}
	return parse_ref_only(a, MAGNET_CMD_PROBE_DEL);
}

static int parse_sets(struct ctl_args *a)
{
	a->req->offline = true;		/* the sets are magnet-ctl's own */
	return ctl_parse_end(a);
}

static int parse_show(struct ctl_args *a)
{
	return parse_ref_only(a, MAGNET_CMD_PROBE_GET);
}

static int parse_list(struct ctl_args *a)
{
	a->req->genl_cmd = MAGNET_CMD_PROBE_GET;
	a->req->dump = true;
	return ctl_parse_end(a);
}

static int parse_enable(struct ctl_args *a)
{
	a->req->flags_clear = MAGNET_PROBE_F_DISABLED;
	return parse_ref_only(a, MAGNET_CMD_PROBE_SET);
}

static int parse_disable(struct ctl_args *a)
{
	a->req->flags_set = MAGNET_PROBE_F_DISABLED;
	return parse_ref_only(a, MAGNET_CMD_PROBE_SET);
}

static int parse_notify(struct ctl_args *a)
{
	static const char *const onoff[] = { "on", "off", NULL };
	const char *w;
	int k;

	a->req->genl_cmd = MAGNET_CMD_PROBE_SET;
	if (ctl_parse_probe_ref(a, "ID|NAME"))
		return -1;
	w = ctl_next(a, "on|off");
	if (!w)
		return -1;
	k = ctl_keyword(a, w, onoff, "value");
	if (k < 0)
		return -1;
	if (k == 0)
		a->req->flags_set = MAGNET_PROBE_F_NOTIFY;
	else
		a->req->flags_clear = MAGNET_PROBE_F_NOTIFY;
	return ctl_parse_end(a);
}

/* ---- decoding replies ---- */

static void copy_str(char *dst, size_t len, const struct nlattr *nla)
{
	dst[0] = '\0';
	if (nla)
		nla_strlcpy(dst, (struct nlattr *)nla, len);
}

#define UINT_OR_0(tb, t)	((tb)[t] ? ctl_nla_uint((tb)[t]) : 0)

static int decode_filter(const struct nlattr *nest, struct ctl_filter *f)
{
	struct nlattr *tb[MAGNET_FILTER_A_MAX + 1];

	memset(f, 0, sizeof(*f));
	if (ctl_nla_nested(tb, MAGNET_FILTER_A_MAX, nest))
		return -1;
	f->id = UINT_OR_0(tb, MAGNET_FILTER_A_ID);
	f->kind = UINT_OR_0(tb, MAGNET_FILTER_A_KIND);
	f->action = UINT_OR_0(tb, MAGNET_FILTER_A_ACTION);
	f->value = UINT_OR_0(tb, MAGNET_FILTER_A_VALUE);
	if (tb[MAGNET_FILTER_A_CPUS]) {
		size_t len = nla_len(tb[MAGNET_FILTER_A_CPUS]);

		if (len > sizeof(f->cpus))
			len = sizeof(f->cpus);
		memcpy(f->cpus, nla_data(tb[MAGNET_FILTER_A_CPUS]), len);
		f->cpu_words = (len + 7) / 8;
	}
	return 0;
}

int ctl_probe_decode(const struct nlattr *nest, struct ctl_probe *p)
{
	struct nlattr *tb[MAGNET_PROBE_A_MAX + 1];

	memset(p, 0, sizeof(*p));
	if (ctl_nla_nested(tb, MAGNET_PROBE_A_MAX, nest) ||
	    !tb[MAGNET_PROBE_A_ID])
		return -1;
	p->id = ctl_nla_uint(tb[MAGNET_PROBE_A_ID]);
	copy_str(p->name, sizeof(p->name), tb[MAGNET_PROBE_A_NAME]);
	p->type = UINT_OR_0(tb, MAGNET_PROBE_A_TYPE);
	copy_str(p->symbol, sizeof(p->symbol), tb[MAGNET_PROBE_A_SYMBOL]);
	p->offset = UINT_OR_0(tb, MAGNET_PROBE_A_OFFSET);
	p->nargs = UINT_OR_0(tb, MAGNET_PROBE_A_NARGS);
	p->capture_len = UINT_OR_0(tb, MAGNET_PROBE_A_CAPTURE_LEN);
	p->capture_arg = UINT_OR_0(tb, MAGNET_PROBE_A_CAPTURE_ARG);
	copy_str(p->handler, sizeof(p->handler), tb[MAGNET_PROBE_A_HANDLER]);
	if (!p->handler[0])
		strcpy(p->handler, "generic");
	p->flags = UINT_OR_0(tb, MAGNET_PROBE_A_FLAGS);
	p->sample_every = UINT_OR_0(tb, MAGNET_PROBE_A_SAMPLE_EVERY);
	p->sample_interval_ns = UINT_OR_0(tb, MAGNET_PROBE_A_SAMPLE_INTERVAL_NS);

	if (tb[MAGNET_PROBE_A_STATS]) {
		struct nlattr *st[MAGNET_PSTAT_A_MAX + 1];
		struct ctl_pstats *s = &p->stats;

		if (ctl_nla_nested(st, MAGNET_PSTAT_A_MAX, tb[MAGNET_PROBE_A_STATS]))
			return -1;
		s->hits = UINT_OR_0(st, MAGNET_PSTAT_A_HITS);
		s->filtered = UINT_OR_0(st, MAGNET_PSTAT_A_FILTERED);
		s->sampled = UINT_OR_0(st, MAGNET_PSTAT_A_SAMPLED);
		s->recorded = UINT_OR_0(st, MAGNET_PSTAT_A_RECORDED);
		s->lost = UINT_OR_0(st, MAGNET_PSTAT_A_LOST);
		s->missed = UINT_OR_0(st, MAGNET_PSTAT_A_MISSED);
		s->alarms = UINT_OR_0(st, MAGNET_PSTAT_A_ALARMS);
		s->alarms_dropped = UINT_OR_0(st, MAGNET_PSTAT_A_ALARMS_DROPPED);
	}

	if (tb[MAGNET_PROBE_A_FILTERS]) {
		struct nlattr *f;
		unsigned int n = 0;
		int rem;

		nla_for_each_nested(f, tb[MAGNET_PROBE_A_FILTERS], rem)
			n++;
		p->filters = calloc(n ? n : 1, sizeof(*p->filters));
		if (!p->filters)
			return -1;
		nla_for_each_nested(f, tb[MAGNET_PROBE_A_FILTERS], rem) {
			if (decode_filter(f, &p->filters[p->nfilters]))
				return -1;
			p->nfilters++;
		}
	}
	return 0;
}

static void probe_free(struct ctl_probe *p)
{
	free(p->filters);
	p->filters = NULL;
	p->nfilters = 0;
}

void ctl_probes_free(struct ctl_probes *ps)
{
	size_t i;

	for (i = 0; i < ps->n; i++)
		probe_free(&ps->v[i]);
	free(ps->v);
	memset(ps, 0, sizeof(*ps));
}

static void probes_reset(void *arg)
{
	ctl_probes_free(arg);
}

static int probes_add(struct nlattr **tb, void *arg)
{
	struct ctl_probes *ps = arg;

	if (!tb[MAGNET_A_PROBE])
		return 0;
	if (ps->n == ps->cap) {
		size_t cap = ps->cap ? 2 * ps->cap : 16;
		struct ctl_probe *v = realloc(ps->v, cap * sizeof(*v));

		if (!v)
			return -1;
		ps->v = v;
		ps->cap = cap;
	}
	if (ctl_probe_decode(tb[MAGNET_A_PROBE], &ps->v[ps->n])) {
		probe_free(&ps->v[ps->n]);
		return -1;
	}
	ps->n++;
	return 0;
}

static int by_id(const void *a, const void *b)
{
	const struct ctl_probe *x = a, *y = b;

	return (int)x->id - (int)y->id;
}

int ctl_probes_get(struct ctl_nl *nl, struct ctl_probes *ps, const char *op)
{
	struct ctl_req r;
	int ret;

	memset(&r, 0, sizeof(r));
	memset(ps, 0, sizeof(*ps));
	r.genl_cmd = MAGNET_CMD_PROBE_GET;
	r.dump = true;
	ret = ctl_nl_request(nl, &r, op, probes_add, probes_reset, ps);
	if (ret) {
		ctl_probes_free(ps);
		return ret;
	}
	if (ps->n)
		qsort(ps->v, ps->n, sizeof(*ps->v), by_id);
	return 0;
}

struct one {
	struct ctl_probe *p;
	bool got;
};

static int one_add(struct nlattr **tb, void *arg)
{
	struct one *o = arg;

	if (!tb[MAGNET_A_PROBE] || o->got)
		return 0;
	if (ctl_probe_decode(tb[MAGNET_A_PROBE], o->p)) {
		probe_free(o->p);
		return -1;
	}
	o->got = true;
	return 0;
}

int ctl_probe_get_one(struct ctl_nl *nl, const struct ctl_req *req,
		      struct ctl_probe *p, const char *op)
{
	struct one o = { .p = p };
	struct ctl_req r;
	int ret;

	memset(&r, 0, sizeof(r));
	memset(p, 0, sizeof(*p));
	r.genl_cmd = MAGNET_CMD_PROBE_GET;
	r.probe_attrs = req->probe_attrs &
		(CTL_BIT(MAGNET_PROBE_A_ID) | CTL_BIT(MAGNET_PROBE_A_NAME));
	r.id = req->id;
	r.name = req->name;
	ret = ctl_nl_request(nl, &r, op, one_add, NULL, &o);
	if (ret) {
		/* An error after the probe came: its filters are ours to free. */
		probe_free(p);
		return ret;
	}
	if (!o.got) {
		fprintf(ctl_errf, PROG ": %s: the kernel sent no probe\n", op);
		return CTL_EXIT_FAIL;
	}
	return 0;
}

/* ---- printing ---- */

void ctl_print_pstats(const struct ctl_pstats *s,
		      const char *const text[CTL_PSTATS])
{
	pr_u64("hits", text[0], s->hits);
	pr_u64("filtered", text[1], s->filtered);
	pr_u64("sampled", text[2], s->sampled);
	pr_u64("recorded", text[3], s->recorded);
	pr_u64("lost", text[4], s->lost);
	pr_u64("missed", text[5], s->missed);
	pr_u64("alarms", text[6], s->alarms);
	pr_u64("alarms_dropped", text[7], s->alarms_dropped);
}

void ctl_print_probe(const struct ctl_probe *p)
{
	static const char *const stats_text[CTL_PSTATS] = {
		"\thits %llu", " filtered %llu", " sampled %llu",
		" recorded %llu", " lost %llu", " missed %llu", " alarms %llu",
		" alarms_dropped %llu\n",
	};
	char buf[64];
	unsigned int i;

	pr_record_open("probe");
	pr_u64("id", "%llu:", p->id);
	pr_str("name", " %s", p->name);
	pr_str("type", " %s", ctl_probe_type_name(p->type));
	pr_str("symbol", p->symbol[0] ? " %s" : NULL, p->symbol);
	pr_u64("offset", p->offset ? "+%llu" : NULL, p->offset);
	pr_u64("nargs", " args %llu", p->nargs);
	pr_u64("capture_len", p->capture_len ? " capture %llu" : NULL,
	       p->capture_len);
	/* Only the generic handler captures from an argument. */
	pr_u64("capture_arg", p->capture_len && !strcmp(p->handler, "generic") ? "@%llu" : NULL,
	       p->capture_arg);
	pr_str("handler", " handler %s", p->handler);
	pr_bool("notify", " notify", p->flags & MAGNET_PROBE_F_NOTIFY);
	pr_bool("disabled", " disabled", p->flags & MAGNET_PROBE_F_DISABLED);
	pr_text("\n");

	pr_u64("sample_every", NULL, p->sample_every);
	pr_u64("sample_interval_ns", NULL, p->sample_interval_ns);
	if (p->sample_every > 1 || p->sample_interval_ns) {
		pr_text("\tsample");
		if (p->sample_every > 1)
			pr_text(" every %u", p->sample_every);
		if (p->sample_interval_ns) {
			ctl_format_duration(buf, sizeof(buf), p->sample_interval_ns);
			pr_text(" interval %s", buf);
		}
		pr_text("\n");
	}

	pr_object_open("stats");
	ctl_print_pstats(&p->stats, stats_text);
	pr_object_close();

	pr_array_open("filters");
	for (i = 0; i < p->nfilters; i++) {
		pr_text("\tfilter ");
		ctl_print_filter(p->id, &p->filters[i]);
	}
	pr_array_close();
	pr_record_close();
}

/* ---- running ---- */

struct added {
	bool got;
	__u16 id;
	char name[sizeof(((struct ctl_probe *)0)->name)];
};

static int add_reply(struct nlattr **tb, void *arg)
{
	struct nlattr *p[MAGNET_PROBE_A_MAX + 1];
	struct added *out = arg;

	if (!tb[MAGNET_A_PROBE])
		return 0;
	if (ctl_nla_nested(p, MAGNET_PROBE_A_MAX, tb[MAGNET_A_PROBE]) ||
	    !p[MAGNET_PROBE_A_ID])
		return -1;
	out->id = ctl_nla_uint(p[MAGNET_PROBE_A_ID]);
	copy_str(out->name, sizeof(out->name), p[MAGNET_PROBE_A_NAME]);
	out->got = true;
	return 0;
}

static int run_add(struct ctl_nl *nl, struct ctl_req *r)
{
	struct added out = { .got = false };
	int ret;

	if (r->set)
		return ctl_set_add(nl, r);
	ret = ctl_nl_request(nl, r, "probe add", add_reply, NULL, &out);
	if (ret)
		return ret;
	if (!out.got) {
		fprintf(ctl_errf, PROG ": probe add: the kernel sent no id\n");
		return CTL_EXIT_FAIL;
	}
	pr_record_open("probe_added");
	pr_u64("id", "%llu", out.id);
	pr_str("name", " %s\n", out.name);
	pr_record_close();
	return 0;
}

static int run_simple(struct ctl_nl *nl, struct ctl_req *r)
{
	char op[64];

	if (r->set)
		return ctl_set_del(nl, r);
	snprintf(op, sizeof(op), "probe %s", r->cmd->name);
	return ctl_nl_request(nl, r, op, NULL, NULL, NULL);
}

/* "list" and "show" print the same document: an array, even of one. */
static void print_probes(const struct ctl_probe *v, size_t n)
{
	size_t i;

	pr_array_open(NULL);
	for (i = 0; i < n; i++)
		ctl_print_probe(&v[i]);
	pr_array_close();
	pr_end();
}

static int run_list(struct ctl_nl *nl, struct ctl_req *r)
{
	struct ctl_probes ps;
	int ret;

	ret = ctl_probes_get(nl, &ps, "probe list");
	if (ret)
		return ret;
	print_probes(ps.v, ps.n);
	ctl_probes_free(&ps);
	return 0;
}

static int run_show(struct ctl_nl *nl, struct ctl_req *r)
{
	struct ctl_probe p;
	int ret;

	ret = ctl_probe_get_one(nl, r, &p, "probe show");
	if (ret)
		return ret;
	print_probes(&p, 1);
	probe_free(&p);
	return 0;
}

/* PROBE_SET replaces the flags: read them, then write the new word. */
static int run_flags(struct ctl_nl *nl, struct ctl_req *r)
{
	struct ctl_probe p;
	char op[64];
	int ret;

	snprintf(op, sizeof(op), "probe %s", r->cmd->name);
	ret = ctl_probe_get_one(nl, r, &p, op);
	if (ret)
		return ret;
	probe_free(&p);
	r->flags = (p.flags & ~r->flags_clear) | r->flags_set;
	r->probe_attrs |= CTL_BIT(MAGNET_PROBE_A_FLAGS);
	return ctl_nl_request(nl, r, op, NULL, NULL, NULL);
}

static const struct ctl_cmd probe_cmds[] = {
	{ "add", "kprobe|kretprobe|fentry SYMBOL[+OFFSET] [args N] [capture LEN[@ARG]]\n"
		 "                            [name NAME] [handler generic|sock|skb] [notify] [disabled]\n"
		 "                  tracepoint SUBSYSTEM:EVENT [args N] [capture LEN[@ARG]]\n"
		 "                            [name NAME] [handler generic|skb|switch] [notify] [disabled]\n"
		 "                  set SET [capture LEN]",
	  parse_add, run_add },
	{ "del", "ID|NAME | set SET", parse_del, run_simple },
	{ "sets", "[-j|-m]", parse_sets, ctl_set_list },
	{ "list", "[-j|-m]", parse_list, run_list },
	{ "show", "ID|NAME [-j|-m]", parse_show, run_show },
	{ "enable", "ID|NAME", parse_enable, run_flags },
	{ "disable", "ID|NAME", parse_disable, run_flags },
	{ "notify", "ID|NAME on|off", parse_notify, run_flags },
	{ NULL, NULL, NULL, NULL },
};

const struct ctl_object ctl_probe_object = {
	.name = "probe",
	.summary = "kprobes, kretprobes, fentry and tracepoint probes: add, del, list, show, enable, disable, notify",
	.cmds = probe_cmds,
	.dflt = "list",
	.notes =
"A probe is named by its id (a number) or its name. \"probe add\" prints the\n"
"new probe's id and name; the default name is SYMBOL[+OFFSET] for a kprobe,\n"
"SYMBOL%return for a kretprobe, SYMBOL for an fentry probe, SUBSYSTEM:EVENT\n"
"for a tracepoint. fentry: at function entry through ftrace (a kprobe's\n"
"record, at less cost per hit; functions in tracefs\n"
"available_filter_functions only, no +OFFSET). tracepoint: the kernel's\n"
"stable events (tracefs events/SUBSYSTEM/EVENT), whatever a kernel version\n"
"renames or inlines; records the tracepoint's arguments (all, up to 6).\n"
"args N: record the first N (0..6) arguments.\n"
"capture LEN[@ARG]: copy LEN bytes from the address in argument ARG (0..5,\n"
"default 0); args and capture must fit one record (4096 bytes of payload).\n"
"handler skb: capture LEN (no @ARG) bytes of the packet in the sk_buff *\n"
"(functions, and tracepoints such as net:net_dev_queue, net:netif_receive_skb).\n"
"handler switch: tracepoint sched:sched_switch, one record per task switch\n"
"(prev and next task, prev's state, next's job).\n"
"notify: send an alarm for each recorded hit (see monitor). disabled: add\n"
"the probe disarmed. \"probe\" alone is \"probe list\".\n"
"set SET: add a named set of probes (udp-journey, tcp-traffic, net-rx; see\n"
"\"probe sets\"), each named SET/FUNCTION, all or none; capture LEN: packet\n"
"bytes for its skb probes (default 128). \"probe del set SET\" removes them.\n",
};
