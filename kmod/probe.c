// SPDX-License-Identifier: GPL-2.0
/*
 * Probes: kprobes and kretprobes whose generic handlers write one record per
 * hit. A probe that does not exist costs nothing: nothing is registered.
 *
 * Spec syntax (the probes= module parameter; the netlink control plane
 * takes the same fields):
 *
 *   kprobe:SYMBOL[+OFFSET][:NARGS[:LEN@ARG]]   record at SYMBOL+OFFSET
 *   kretprobe:SYMBOL[:NARGS[:LEN@ARG]]         record at return: retval,
 *                                              latency
 *
 * NARGS (0..6, default 0) function arguments are recorded, read from the
 * registers with regs_get_kernel_argument(); they are meaningful at function
 * entry (OFFSET 0), which is where a kretprobe captures them too.
 * LEN@ARG also copies LEN bytes from the address in argument ARG (user or
 * kernel memory, without faulting: a non-resident page records length 0);
 * a kretprobe copies at return, so a read's buffer holds what was read.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/idr.h>
#include <linux/kallsyms.h>
#include <linux/kprobes.h>
#include <linux/percpu.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include "buffer.h"
#include "probe.h"

enum mg_probe_type { MG_KPROBE, MG_KRETPROBE };

struct mg_probe {
	struct list_head node;
	u16 id;
	u8 type;
	u8 nargs;
	u8 capture_arg;
	u16 capture_len;	/* 0: no capture */
	unsigned int offset;
	unsigned long __percpu *hits;
	char symbol[KSYM_NAME_LEN];
	union {
		struct kprobe kp;
		struct kretprobe rp;
	};
};

/* What a kretprobe keeps from entry to return, per instance. */
struct mg_ret_data {
	u64 start;
	u64 abstract_id;
	u64 capture_from;
	u64 args[MAGNET_ARGS_MAX];
};

static LIST_HEAD(mg_probes);
static DEFINE_MUTEX(mg_probes_lock);
static DEFINE_IDA(mg_ids);

static u16 mg_flags(const struct mg_probe *p)
{
	return p->nargs << MAGNET_REC_NARGS_SHIFT | (p->capture_len ? MAGNET_REC_CAPTURE : 0) |
	       (p->type == MG_KRETPROBE ? MAGNET_REC_RETURN : 0);
}

static u32 mg_payload_len(const struct mg_probe *p)
{
	u32 len = p->nargs * sizeof(u64);

	if (p->type == MG_KRETPROBE)
		len += 2 * sizeof(u64);
	if (p->capture_len)
		len += sizeof(struct magnet_capture) + p->capture_len;
	return len;
}

/* Copy the capture without faulting: probes may run with interrupts off. */
static void mg_capture(const struct mg_probe *p, void *to, unsigned long from)
{
	struct magnet_capture *cap = to;
	long ret;

	if (from < TASK_SIZE_MAX)
		ret = copy_from_user_nofault(cap->data, (const void __user *)from, p->capture_len);
	else
		ret = copy_from_kernel_nofault(cap->data, (const void *)from, p->capture_len);
	cap->len = ret ? 0 : p->capture_len;
	cap->arg = p->capture_arg;
	if (ret)
		memset(cap->data, 0, p->capture_len);	/* never leak ring bytes */
}
NOKPROBE_SYMBOL(mg_capture);

static int mg_kprobe_pre(struct kprobe *kp, struct pt_regs *regs)
{
	struct mg_probe *p = container_of(kp, struct mg_probe, kp);
	struct magnet_record *rec;
	struct mg_ring *rb;
	u64 *args;
	unsigned int i;

	this_cpu_inc(*p->hits);
	rec = magnet_reserve(&rb, p->id, mg_flags(p), regs_get_kernel_argument(regs, 0),
			     mg_payload_len(p));
	if (!rec)
		return 0;
	args = (u64 *)rec->payload;
	for (i = 0; i < p->nargs; i++)
		args[i] = regs_get_kernel_argument(regs, i);
	if (p->capture_len)
		mg_capture(p, &args[p->nargs], regs_get_kernel_argument(regs, p->capture_arg));
	magnet_commit(rb, rec);
	return 0;
}
NOKPROBE_SYMBOL(mg_kprobe_pre);

static int mg_kret_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct mg_probe *p = container_of(get_kretprobe(ri), struct mg_probe, rp);
	struct mg_ret_data *d = (struct mg_ret_data *)ri->data;
	unsigned int i;

	d->abstract_id = regs_get_kernel_argument(regs, 0);
	d->capture_from = regs_get_kernel_argument(regs, p->capture_arg);
	for (i = 0; i < p->nargs; i++)
		d->args[i] = regs_get_kernel_argument(regs, i);
	/* Latency is always in ns, whatever the record clock. */
	d->start = ktime_get_mono_fast_ns();
	return 0;
}
NOKPROBE_SYMBOL(mg_kret_entry);

static int mg_kret_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	u64 now = ktime_get_mono_fast_ns();
	struct mg_probe *p = container_of(get_kretprobe(ri), struct mg_probe, rp);
	struct mg_ret_data *d = (struct mg_ret_data *)ri->data;
	struct magnet_record *rec;
	struct mg_ring *rb;
	u64 *payload;

	this_cpu_inc(*p->hits);
	rec = magnet_reserve(&rb, p->id, mg_flags(p), d->abstract_id, mg_payload_len(p));
	if (!rec)
		return 0;
	payload = (u64 *)rec->payload;
	payload[0] = regs_return_value(regs);
	payload[1] = now - d->start;
	memcpy(&payload[2], d->args, p->nargs * sizeof(u64));
	if (p->capture_len)
		mg_capture(p, &payload[2 + p->nargs], d->capture_from);
	magnet_commit(rb, rec);
	return 0;
}
NOKPROBE_SYMBOL(mg_kret_return);

static void mg_probe_free(struct mg_probe *p)
{
	if (p->id)
		ida_free(&mg_ids, p->id);
	free_percpu(p->hits);
	kfree(p);
}

/* Parse one spec; the error message names it, so the operator can fix it. */
static struct mg_probe *mg_probe_parse(char *spec)
{
	struct mg_probe *p;
	char *target, *colon, *plus;
	unsigned int nargs = 0;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return ERR_PTR(-ENOMEM);
	target = strchr(spec, ':');
	if (!target)
		goto bad;
	*target++ = '\0';
	if (!strcmp(spec, "kprobe"))
		p->type = MG_KPROBE;
	else if (!strcmp(spec, "kretprobe"))
		p->type = MG_KRETPROBE;
	else
		goto bad;
	colon = strchr(target, ':');
	if (colon) {
		char *cap;

		*colon++ = '\0';
		cap = strchr(colon, ':');
		if (cap) {
			unsigned int len, arg;
			char *at;

			*cap++ = '\0';
			at = strchr(cap, '@');
			if (!at)
				goto bad;
			*at++ = '\0';
			if (kstrtouint(cap, 10, &len) || kstrtouint(at, 10, &arg) ||
			    !len || arg >= MAGNET_ARGS_MAX)
				goto bad;
			p->capture_len = min_t(unsigned int, len, MAGNET_PAYLOAD_MAX);
			p->capture_arg = arg;
			if (len > MAGNET_PAYLOAD_MAX)
				goto bad;
		}
		if (kstrtouint(colon, 10, &nargs) || nargs > MAGNET_ARGS_MAX)
			goto bad;
	}
	p->nargs = nargs;
	plus = strchr(target, '+');
	if (plus) {
		*plus++ = '\0';
		if (p->type == MG_KRETPROBE || kstrtouint(plus, 0, &p->offset))
			goto bad;
	}
	if (!*target || strscpy(p->symbol, target, sizeof(p->symbol)) < 0)
		goto bad;
	if (mg_payload_len(p) > MAGNET_PAYLOAD_MAX)
		goto bad;	/* args + capture must fit one record */
	return p;
bad:
	kfree(p);
	return ERR_PTR(-EINVAL);
}

static const char *mg_register_error(int err)
{
	switch (err) {
	case -ENOENT:
		return "no such symbol";
	case -EINVAL:
		return "refused by kprobes (blacklisted, or not a probeable address)";
	case -EILSEQ:
		return "offset is not on an instruction boundary";
	case -EBUSY:
		return "address already in use by another kind of probe";
	default:
		return "registration failed";
	}
}

/* kprobe structs are consumed by registration: fill them afresh each time. */
static int mg_probe_register(struct mg_probe *p)
{
	if (p->type == MG_KPROBE) {
		memset(&p->kp, 0, sizeof(p->kp));
		p->kp.symbol_name = p->symbol;
		p->kp.offset = p->offset;
		p->kp.pre_handler = mg_kprobe_pre;
		return register_kprobe(&p->kp);
	}
	memset(&p->rp, 0, sizeof(p->rp));
	p->rp.kp.symbol_name = p->symbol;
	p->rp.entry_handler = mg_kret_entry;
	p->rp.handler = mg_kret_return;
	p->rp.data_size = sizeof(struct mg_ret_data);
	/* Functions that sleep (vfs_read) have many calls in flight. */
	p->rp.maxactive = max_t(int, 64, 4 * num_possible_cpus());
	return register_kretprobe(&p->rp);
}

static const char *mg_type_name(const struct mg_probe *p)
{
	return p->type == MG_KPROBE ? "kprobe" : "kretprobe";
}

/* Register every probe of a comma-separated list; all or nothing. */
int mg_probes_add_list(const char *list)
{
	char *copy, *cur, *spec;
	LIST_HEAD(added);
	struct mg_probe *p, *tmp;
	int ret = 0;

	copy = kstrdup(list, GFP_KERNEL);
	if (!copy)
		return -ENOMEM;
	mutex_lock(&mg_probes_lock);
	cur = copy;
	while ((spec = strsep(&cur, ",")) != NULL) {
		char shown[KSYM_NAME_LEN + 32];
		int id;

		if (!*spec)
			continue;
		strscpy(shown, spec, sizeof(shown));
		p = mg_probe_parse(spec);
		if (IS_ERR(p)) {
			pr_err("probe '%s': bad spec, expected kprobe:SYMBOL[+OFFSET][:NARGS[:LEN@ARG]] or kretprobe:SYMBOL[:NARGS[:LEN@ARG]], NARGS and ARG 0..%d, args and capture within %d bytes\n",
			       shown, MAGNET_ARGS_MAX, MAGNET_PAYLOAD_MAX);
			ret = PTR_ERR(p);
			goto err;
		}
		p->hits = alloc_percpu(unsigned long);
		id = ida_alloc_range(&mg_ids, MAGNET_EVENT_FIRST_DYNAMIC, MAGNET_EVENT_MAX,
				     GFP_KERNEL);
		if (!p->hits || id < 0) {
			ret = -ENOMEM;
			mg_probe_free(p);
			goto err;
		}
		p->id = id;
		ret = mg_probe_register(p);
		if (ret) {
			pr_err("probe '%s': %s (%d)\n", shown, mg_register_error(ret), ret);
			mg_probe_free(p);
			goto err;
		}
		list_add_tail(&p->node, &added);
	}
	list_splice_tail(&added, &mg_probes);
	mutex_unlock(&mg_probes_lock);
	kfree(copy);
	return 0;
err:
	list_for_each_entry_safe(p, tmp, &added, node) {
		if (p->type == MG_KPROBE)
			unregister_kprobe(&p->kp);
		else
			unregister_kretprobe(&p->rp);
		list_del(&p->node);
		mg_probe_free(p);
	}
	mutex_unlock(&mg_probes_lock);
	kfree(copy);
	return ret;
}

/* Unregister everything in two batches: one grace period each, not one per probe. */
void mg_probes_exit(void)
{
	struct kretprobe **rps;
	struct kprobe **kps;
	struct mg_probe *p, *tmp;
	int nk = 0, nr = 0, n = 0;

	mutex_lock(&mg_probes_lock);
	list_for_each_entry(p, &mg_probes, node)
		n++;
	kps = kcalloc(n ? n : 1, sizeof(*kps), GFP_KERNEL);
	rps = kcalloc(n ? n : 1, sizeof(*rps), GFP_KERNEL);
	list_for_each_entry(p, &mg_probes, node) {
		if (!kps || !rps) {	/* no memory for batching: one by one */
			if (p->type == MG_KPROBE)
				unregister_kprobe(&p->kp);
			else
				unregister_kretprobe(&p->rp);
		} else if (p->type == MG_KPROBE) {
			kps[nk++] = &p->kp;
		} else {
			rps[nr++] = &p->rp;
		}
	}
	if (nk)
		unregister_kprobes(kps, nk);
	if (nr)
		unregister_kretprobes(rps, nr);
	list_for_each_entry_safe(p, tmp, &mg_probes, node) {
		list_del(&p->node);
		mg_probe_free(p);
	}
	mutex_unlock(&mg_probes_lock);
	kfree(kps);
	kfree(rps);
}

int mg_probes_show(struct seq_file *m, void *v)
{
	struct mg_probe *p;

	mutex_lock(&mg_probes_lock);
	list_for_each_entry(p, &mg_probes, node) {
		unsigned long hits = 0, missed;
		unsigned int cpu;

		for_each_possible_cpu(cpu)
			hits += *per_cpu_ptr(p->hits, cpu);
		missed = p->type == MG_KPROBE ? p->kp.nmissed : p->rp.kp.nmissed + p->rp.nmissed;
		seq_printf(m, "%u\t%s\t%s", p->id, mg_type_name(p), p->symbol);
		if (p->offset)
			seq_printf(m, "+%u", p->offset);
		seq_printf(m, "\t%u\t%lu\t%lu", p->nargs, hits, missed);
		if (p->capture_len)
			seq_printf(m, "\t%u@%u", p->capture_len, p->capture_arg);
		seq_putc(m, '\n');
	}
	mutex_unlock(&mg_probes_lock);
	return 0;
}
