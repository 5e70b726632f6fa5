// SPDX-License-Identifier: GPL-2.0
/*
 * Probes: kprobes, kretprobes, fentry probes (ftrace_ops), tracepoints and
 * events of other kernel modules, and the path every hit takes: filters, sampling,
 * the record, the alarm.
 *
 * A probe that does not exist costs nothing: nothing is registered. A
 * disabled probe stays registered but disarmed. Control operations hold
 * mg_probes_lock; handlers take no lock at all. The filter set is published
 * under RCU (filter.c); everything else a handler reads is fixed for the
 * probe's lifetime or a single word (flags, sampling).
 *
 * Spec syntax of the probes= module parameter (netlink takes the same
 * fields as attributes):
 *
 *   kprobe:SYMBOL[+OFFSET][:NARGS[:LEN@ARG]]   record at SYMBOL+OFFSET
 *   kretprobe:SYMBOL[:NARGS[:LEN@ARG]]         record at return: retval,
 *                                              latency
 *   fentry:SYMBOL[:NARGS[:LEN@ARG]]            record at entry, through
 *                                              ftrace (a kprobe's record)
 *   tracepoint:SUBSYS:EVENT[:NARGS[:LEN@ARG]]  record the tracepoint's
 *                                              arguments (default: all)
 *
 * NARGS (0..6, default 0) function arguments are recorded, read from the
 * registers with regs_get_kernel_argument(); they are meaningful at function
 * entry (OFFSET 0), which is where a kretprobe captures them too.
 * LEN@ARG also copies LEN bytes from the address in argument ARG (user or
 * kernel memory, without faulting: a non-resident page records length 0);
 * a kretprobe copies at return, so a read's buffer holds what was read.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cgroup.h>
#include <linux/idr.h>
#include <linux/kallsyms.h>
#include <linux/kprobes.h>
#include <linux/percpu.h>
#include <linux/security.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/trace_events.h>
#include <linux/tracepoint.h>
#include <linux/uaccess.h>
#include <net/inet_sock.h>
#include <net/sock.h>
#include "alarm.h"
#include "btf.h"
#include "buffer.h"
#include "filter.h"
#include "probe.h"

/* Guards mg_probes, its generation and every change to a probe. */
DEFINE_MUTEX(mg_probes_lock);
LIST_HEAD(mg_probes);
unsigned int mg_probes_generation = 1;
static DEFINE_IDA(mg_ids);
DEFINE_PER_CPU(unsigned int, mg_handler_levels);

/* What a kretprobe keeps from entry to return, per instance. */
struct mg_ret_data {
	u64 start;
	u64 abstract_id;
	u64 capture_from;
	u64 args[MAGNET_ARGS_MAX];
};

const char *mg_handler_name(u8 handler)
{
	switch (handler) {
	case MAGNET_HANDLER_GENERIC:
		return "generic";
	case MAGNET_HANDLER_SOCK:
		return "sock";
	case MAGNET_HANDLER_RAW:
		return "raw";
	case MAGNET_HANDLER_SKB:
		return "skb";
	case MAGNET_HANDLER_SWITCH:
		return "switch";
	}
	return "?";
}

/* The record layout is fixed per probe: computed once, at add. */
static u16 mg_rec_flags(const struct mg_probe_spec *s)
{
	/* A named handler's payload says all; generic flags describe the layout. */
	if (s->handler == MAGNET_HANDLER_SKB || s->handler == MAGNET_HANDLER_SWITCH)
		return s->handler << MAGNET_REC_HANDLER_SHIFT;
	return s->nargs << MAGNET_REC_NARGS_SHIFT | (s->capture_len ? MAGNET_REC_CAPTURE : 0) |
	       (s->type == MAGNET_PROBE_KRETPROBE ? MAGNET_REC_RETURN : 0) |
	       s->handler << MAGNET_REC_HANDLER_SHIFT;
}

static u32 mg_payload_len(const struct mg_probe_spec *s)
{
	u32 len = s->nargs * sizeof(u64);

	if (s->handler == MAGNET_HANDLER_SOCK)
		return sizeof(struct magnet_sock);
	if (s->handler == MAGNET_HANDLER_SWITCH)
		return sizeof(struct magnet_switch);
	if (s->handler == MAGNET_HANDLER_SKB)	/* as mg_record_skb_size() */
		return sizeof(struct magnet_skb) + round_up(s->capture_len, 8);
	if (s->type == MAGNET_PROBE_KRETPROBE)
		len += 2 * sizeof(u64);
	if (s->capture_len)
		len += sizeof(struct magnet_capture) + s->capture_len;
	return len;
}

/* ---- the hit path ---- */

bool mg_probe_pass(struct mg_probe *p, u64 abstract_id)
{
	struct mg_filter_set *fs = rcu_dereference_sched(p->filters);
	u32 every = READ_ONCE(p->sample_every);
	u64 interval = READ_ONCE(p->sample_interval);

	if (fs && !mg_filter_match(fs, abstract_id)) {
		this_cpu_inc(p->pc->filtered);
		return false;
	}
	if (every > 1 && this_cpu_inc_return(p->pc->sample_count) % every) {
		this_cpu_inc(p->pc->sampled);
		return false;
	}
	if (interval) {
		u64 now = ktime_get_mono_fast_ns();
		s64 last = atomic64_read(&p->sample_last);

		if (now - last < interval || atomic64_cmpxchg(&p->sample_last, last, now) != last) {
			this_cpu_inc(p->pc->sampled);
			return false;
		}
	}
	return true;
}

NOKPROBE_SYMBOL(mg_probe_pass);

void mg_probe_alarm(struct mg_probe *p, u64 abstract_id, u64 ts)
{
	if (mg_alarm_queue(p->id, abstract_id, ts))
		this_cpu_inc(p->pc->alarms);
	else
		this_cpu_inc(p->pc->alarms_dropped);
}

NOKPROBE_SYMBOL(mg_probe_alarm);

void mg_probe_done(struct mg_probe *p, struct mg_ring *rb, struct magnet_record *rec)
{
	u64 abstract_id = rec->abstract_id, ts = rec->timestamp;

	magnet_commit(rb, rec);
	this_cpu_inc(p->pc->recorded);
	if (READ_ONCE(p->flags) & MAGNET_PROBE_F_NOTIFY)
		mg_probe_alarm(p, abstract_id, ts);
}

NOKPROBE_SYMBOL(mg_probe_done);

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

/*
 * "sock": who talks to whom, from the struct sock in the first argument.
 * The probe was only accepted for functions whose BTF says so, and still
 * nothing is dereferenced directly: a socket freed under us or a caller
 * that passes something else must cost a record, never the kernel. What
 * cannot be read leaves family 0.
 */
static void mg_fill_sock(struct magnet_sock *ms, const struct sock *sk, u64 size)
{
	struct sock_common skc;
	__be16 sport;
	u16 protocol;

	memset(ms, 0, sizeof(*ms));
	ms->size = size;
	if (!sk || copy_from_kernel_nofault(&skc, &sk->__sk_common, sizeof(skc)))
		return;
	if (skc.skc_family != AF_INET && skc.skc_family != AF_INET6)
		return;
	/*
	 * Timewait and request socks are only a struct sock_common and a
	 * little more: sk_protocol and inet_sport lie beyond them, in the
	 * next slab object. Their local port is skc_num; their protocol
	 * (TCP or DCCP) is nowhere in them: 0.
	 */
	if ((1 << skc.skc_state) & (TCPF_TIME_WAIT | TCPF_NEW_SYN_RECV)) {
		protocol = 0;
		sport = htons(skc.skc_num);
	} else if (get_kernel_nofault(protocol, &sk->sk_protocol) ||
		   get_kernel_nofault(sport, &inet_sk(sk)->inet_sport)) {
		return;
	}
	ms->protocol = protocol;
	ms->state = skc.skc_state;
	ms->sport = sport;
	ms->dport = skc.skc_dport;
	if (skc.skc_family == AF_INET) {
		memcpy(ms->saddr, &skc.skc_rcv_saddr, 4);
		memcpy(ms->daddr, &skc.skc_daddr, 4);
#if IS_ENABLED(CONFIG_IPV6)
	} else {
		memcpy(ms->saddr, &skc.skc_v6_rcv_saddr, 16);
		memcpy(ms->daddr, &skc.skc_v6_daddr, 16);
#else
	} else {
		return;
#endif
	}
	ms->family = skc.skc_family;
}

NOKPROBE_SYMBOL(mg_fill_sock);

/*
 * "skb": one packet as the probed function sees it. The skb is the
 * caller's at function entry, but nothing in it is trusted: every field,
 * the linear area and each fragment are read without faulting, so a
 * pointer that is no sk_buff (or one freed under a buggy caller) costs a
 * record with len 0, never the kernel. skb_copy_bits() is no option: it
 * dereferences the skb directly and WARNs on inconsistent lengths (a
 * panic with panic_on_warn). The copy below walks the linear part, the
 * paged fragments and one level of frag_list the way it does, bounded by
 * the capture. Fields are offsets from head on 64-bit (NET_SKBUFF_DATA_
 * USES_OFFSET), pointers elsewhere: MG_SKB_OFF() makes them offsets.
 */
#ifdef NET_SKBUFF_DATA_USES_OFFSET
#define MG_SKB_OFF(head, x)	((unsigned long)(x))
#else
#define MG_SKB_OFF(head, x)	((unsigned long)((x) - (head)))
#endif
/* The most a record holds: MAGNET_PAYLOAD_MAX - sizeof(struct magnet_skb). */
#define MG_SKB_CAPTURE_MAX	4072
#define MG_SKB_FRAGLIST_MAX	64	/* frag_list members walked, at most */

/* @want bytes of @sh's fragments from their start; false if one faulted. */
static bool mg_skb_copy_frags(const struct skb_shared_info *sh, u8 *to, u32 want, u32 *done)
{
	unsigned int i;
	u8 nr;

	*done = 0;
	if (get_kernel_nofault(nr, &sh->nr_frags) || nr > MAX_SKB_FRAGS)
		return false;
	/*
	 * A fragment's page is reached through the direct map: pure address
	 * arithmetic, any context. Highmem pages would need kmap: not copied.
	 */
	if (IS_ENABLED(CONFIG_HIGHMEM) && nr)
		return false;
	for (i = 0; i < nr && *done < want; i++) {
		skb_frag_t f;
		u32 n;

		if (copy_from_kernel_nofault(&f, &sh->frags[i], sizeof(f)) || !skb_frag_page(&f))
			return false;
		n = min_t(u32, skb_frag_size(&f), want - *done);
		if (copy_from_kernel_nofault(to + *done, page_address(skb_frag_page(&f)) +
					     skb_frag_off(&f), n))
			return false;
		*done += n;
	}
	return true;
}

NOKPROBE_SYMBOL(mg_skb_copy_frags);

/*
 * Up to @want bytes of one skb: @lin_len linear bytes at @lin, then its
 * fragments. Returns the bytes copied; *sh gets its shared info (NULL if
 * unreadable), *whole whether the copy stopped only for lack of bytes.
 */
static u32 mg_skb_copy_one(const struct sk_buff *skb, const u8 *lin, u32 lin_len, u8 *to,
			   u32 want, const struct skb_shared_info **shp, bool *whole)
{
	sk_buff_data_t end;
	unsigned char *head;
	u32 done = min(lin_len, want), more;

	*shp = NULL;
	*whole = false;
	if (done && copy_from_kernel_nofault(to, lin, done))
		return 0;
	if (get_kernel_nofault(head, &skb->head) || get_kernel_nofault(end, &skb->end))
		return done;
	*shp = (const struct skb_shared_info *)(head + MG_SKB_OFF(head, end));
	if (done == want) {
		*whole = true;
		return done;
	}
	*whole = mg_skb_copy_frags(*shp, to + done, want - done, &more);
	return done + more;
}

NOKPROBE_SYMBOL(mg_skb_copy_one);

/* @want bytes from @hdr (an offset from head) on: linear, frags, frag_list. */
static u32 mg_skb_copy(const struct sk_buff *skb, const u8 *head, unsigned long hdr,
		       unsigned long tail, u32 want, u8 *to)
{
	const struct skb_shared_info *sh;
	struct sk_buff *m;
	u32 done, n, mlen, mdlen;
	unsigned int i;
	u8 *mdata;
	bool whole;

	done = mg_skb_copy_one(skb, head + hdr, tail - hdr, to, want, &sh, &whole);
	if (done == want || !whole || get_kernel_nofault(m, &sh->frag_list))
		return done;
	/* Members are whole packets' worth of bytes each, in order. */
	for (i = 0; m && i < MG_SKB_FRAGLIST_MAX && done < want; i++) {
		if (get_kernel_nofault(mdata, &m->data) || get_kernel_nofault(mlen, &m->len) ||
		    get_kernel_nofault(mdlen, &m->data_len) || mdlen > mlen)
			break;
		n = mg_skb_copy_one(m, mdata, mlen - mdlen, to + done, want - done, &sh, &whole);
		/* Short of this member's bytes: what follows would be misplaced. */
		if (n < min(mlen, want - done))
			return done + n;
		done += n;
		if (get_kernel_nofault(m, &m->next))
			break;
	}
	return done;
}

NOKPROBE_SYMBOL(mg_skb_copy);

/*
 * The job a packet belongs to: the cgroup v2 id of its socket, set when the
 * socket was made (accepted ones inherit the listener's), which is what the
 * kernel's own per-cgroup packet hooks (cgroup-bpf ingress/egress) use. The
 * task that runs the probe is no answer: receive processing runs in softirq
 * on whatever task was interrupted, on lo in the sender's. Request and
 * timewait socks are smaller than a struct sock and have no cgroup data
 * (sk_fullsock()); a socket that cannot be read has no job either.
 */
static u64 mg_sock_cgroup(const struct sock *sk)
{
#ifdef CONFIG_SOCK_CGROUP_DATA
	struct kernfs_node *kn;
	struct cgroup *cgrp;
	u8 state;
	u64 id;

	/* skc_state is volatile; read its byte as plain memory */
	if (!sk || copy_from_kernel_nofault(&state, (const void *)&sk->sk_state, sizeof(state)) ||
	    (1 << state) & (TCPF_TIME_WAIT | TCPF_NEW_SYN_RECV))
		return 0;
	cgrp = mg_sock_cgroup_nofault(sk);
	if (!cgrp ||
	    get_kernel_nofault(kn, &cgrp->kn) || !kn || get_kernel_nofault(id, &kn->id))
		return 0;
	return id;
#else
	return 0;
#endif
}

NOKPROBE_SYMBOL(mg_sock_cgroup);

static void mg_fill_skb(struct magnet_skb *ms, const struct sk_buff *skb, const struct sock *fsk,
			u32 cap)
{
	unsigned long data_off, tail_off, hdr;
	struct net_device *dev;
	sk_buff_data_t tail;
	unsigned char *head, *data;
	u32 len, data_len, want = 0;
	u16 nh, mh;
	__be16 protocol;
	struct sock *sk;
	int iif, ifindex = 0;
	u8 layer = MAGNET_SKB_LAYER_DATA;

	memset(ms, 0, sizeof(*ms));
	if (!skb || get_kernel_nofault(head, &skb->head) || get_kernel_nofault(data, &skb->data) ||
	    get_kernel_nofault(tail, &skb->tail) || get_kernel_nofault(len, &skb->len) ||
	    get_kernel_nofault(data_len, &skb->data_len) ||
	    get_kernel_nofault(nh, &skb->network_header) ||
	    get_kernel_nofault(mh, &skb->mac_header) || get_kernel_nofault(iif, &skb->skb_iif) ||
	    get_kernel_nofault(sk, &skb->sk) || get_kernel_nofault(dev, &skb->dev) ||
	    get_kernel_nofault(protocol, &skb->protocol))
		goto out;
	if (dev && get_kernel_nofault(ifindex, &dev->ifindex))
		ifindex = 0;
	/* The function's own socket argument, else the skb's owner. */
	ms->sk_cgroup = mg_sock_cgroup(fsk ?: sk);
	ms->len = len;
	ms->ifindex = ifindex;
	ms->protocol = protocol;
	/*
	 * In: the stack took it from an interface (skb_iif, set when
	 * __netif_receive_skb_core() starts), or, before that (driver,
	 * netif_rx, backlog), a driver pulled its link header (eth_type_trans)
	 * and no socket owns it. Out: a socket owns it, nothing says it came
	 * in. The send path leaves the mac header unset until __dev_queue_xmit()
	 * puts it at data.
	 */
	data_off = data - head;
	tail_off = MG_SKB_OFF(head, tail);
	if (iif || (!sk && mh != (u16)~0U && mh < data_off && data >= head))
		ms->direction = MAGNET_SKB_DIR_IN;
	else if (sk)
		ms->direction = MAGNET_SKB_DIR_OUT;

	/* Only a consistent skb is copied: headlen = tail - data. */
	if (data < head || data_off > tail_off || data_len > len ||
	    tail_off - data_off != len - data_len)
		goto out;
	/*
	 * 6.1 marks an unset mac header with ~0 but has no mark for the
	 * network header: 0 from head is unset (every path that sets one
	 * leaves headroom before it). A header beyond the linear part is not
	 * a header.
	 */
	if (nh && nh <= tail_off) {
		layer = MAGNET_SKB_LAYER_NETWORK;
		hdr = nh;
	} else if (mh != (u16)~0U && mh <= tail_off) {
		layer = MAGNET_SKB_LAYER_LINK;
		hdr = mh;
	} else {
		hdr = data_off;
	}
	/* The header may lie before data (pulled) or after it (not yet). */
	want = min_t(u64, cap, (u64)len + data_off - hdr);
	ms->layer = layer;
	if (want)
		ms->caplen = mg_skb_copy(skb, head, hdr, tail_off, want, ms->data);
out:
	memset(ms->data + ms->caplen, 0, round_up(cap, 8) - ms->caplen);
}

NOKPROBE_SYMBOL(mg_fill_skb);

/*
 * "switch": one task switch, from sched_switch's arguments (preempt, prev,
 * next[, prev_state]; mg_switch_check() made sure). The scheduler holds
 * both tasks: read them directly.
 */
static void mg_fill_switch(struct magnet_switch *ms, const struct mg_probe *p, const u64 *args)
{
	struct task_struct *prev = (struct task_struct *)args[1];
	struct task_struct *next = (struct task_struct *)args[2];

	memset(ms, 0, sizeof(*ms));
	ms->prev_pid = prev->pid;
	ms->prev_tgid = prev->tgid;
	ms->next_pid = next->pid;
	ms->next_tgid = next->tgid;
	/* Before 5.18 the tracepoint has no prev_state: read it as it did. */
	ms->prev_state = p->tp_nargs > 3 ? (u32)args[3] : mg_task_state(prev);
	ms->preempt = !!args[0];
	/* Preemption is off: an RCU-sched read side, as task_css_set() accepts. */
	ms->next_cgroup = cgroup_id(task_dfl_cgroup(next));
	memcpy(ms->prev_comm, prev->comm, sizeof(ms->prev_comm));
	memcpy(ms->next_comm, next->comm, sizeof(ms->next_comm));
}

NOKPROBE_SYMBOL(mg_fill_switch);

/*
 * A hit with the function's (or tracepoint's) first MAGNET_ARGS_MAX
 * arguments at hand: kprobes, fentry probes and tracepoints.
 * @intr: MAGNET_REC_INTR if the hit interrupted task context.
 */
static void mg_args_hit(struct mg_probe *p, const u64 *args, u16 intr)
{
	u64 abstract_id = p->handler == MAGNET_HANDLER_SWITCH ?
			  ((struct task_struct *)args[2])->pid : args[p->skb_arg];
	struct magnet_record *rec;
	struct mg_ring *rb;

	if (!mg_probe_pass(p, abstract_id))
		return;
	rec = magnet_reserve(&rb, p->id, p->rec_flags | intr, abstract_id, p->payload_len);
	if (!rec) {
		this_cpu_inc(p->pc->lost);
		return;
	}
	switch (p->handler) {
	case MAGNET_HANDLER_SOCK:
		mg_fill_sock((struct magnet_sock *)rec->payload, (const struct sock *)abstract_id,
			     p->sock_size_arg ? args[2] : 0);
		break;
	case MAGNET_HANDLER_SKB:
		mg_fill_skb((struct magnet_skb *)rec->payload, (const struct sk_buff *)abstract_id,
			    p->skb_sock_arg ? (const struct sock *)args[p->skb_sock_arg - 1] : NULL,
			    p->capture_len);
		break;
	case MAGNET_HANDLER_SWITCH:
		mg_fill_switch((struct magnet_switch *)rec->payload, p, args);
		break;
	default:
		memcpy(rec->payload, args, p->nargs * sizeof(u64));
		if (p->capture_len)
			mg_capture(p, rec->payload + p->nargs * sizeof(u64), args[p->capture_arg]);
	}
	mg_probe_done(p, rb, rec);
}

NOKPROBE_SYMBOL(mg_args_hit);

/* A hit at function entry (or SYMBOL+OFFSET): kprobes and fentry probes. */
static __always_inline void mg_entry_hit(struct mg_probe *p, struct pt_regs *regs, u16 intr)
{
	u64 args[MAGNET_ARGS_MAX];
	unsigned int i;

	for (i = 0; i < MAGNET_ARGS_MAX; i++)
		args[i] = regs_get_kernel_argument(regs, i);
	mg_args_hit(p, args, intr);
}

/*
 * The context a kprobe hit interrupted. Through ftrace (KPROBES_ON_FTRACE:
 * function entry) the handler runs in the probed function's own context.
 * A kprobe that traps runs inside the trap's nmi_enter(), which adds
 * NMI_OFFSET + HARDIRQ_OFFSET to the preempt count whatever the trap
 * interrupted (in_task() is false even in a syscall): take them off again.
 * Such kprobes are kept from jump optimization (mg_probe_register()), so
 * every hit that is not through ftrace is such a trap.
 */
static __always_inline u16 mg_kprobe_intr(struct kprobe *kp)
{
	unsigned long pc = preempt_count();

	if (!kprobe_ftrace(kp))
		pc -= NMI_OFFSET + HARDIRQ_OFFSET;
	return (pc & (NMI_MASK | HARDIRQ_MASK)) || in_serving_softirq() ? MAGNET_REC_INTR : 0;
}

static int mg_kprobe_pre(struct kprobe *kp, struct pt_regs *regs)
{
	struct mg_probe *p = container_of(kp, struct mg_probe, kp);
	unsigned int busy = mg_handler_enter(p);

	if (busy) {
		mg_entry_hit(p, regs, mg_kprobe_intr(kp));
		mg_handler_leave(busy);
	}
	return 0;
}

NOKPROBE_SYMBOL(mg_kprobe_pre);

/*
 * Nothing to do after the probed instruction; its presence keeps the
 * kprobes optimizer from turning a trapping kprobe into a jump (kprobes
 * with a post_handler are never optimized), whose callback runs in the
 * interrupted context without an nmi_enter(): mg_kprobe_intr() could not
 * tell the two apart inside a real NMI.
 */
static void mg_kprobe_post(struct kprobe *kp, struct pt_regs *regs, unsigned long flags)
{
}

NOKPROBE_SYMBOL(mg_kprobe_post);

#ifdef CONFIG_DYNAMIC_FTRACE
/*
 * fentry: the call to __fentry__ that every traceable function starts
 * with, patched by ftrace to a trampoline that calls this probe's own
 * ftrace_ops. A kprobe at function entry goes through the same call site
 * on x86 (KPROBES_ON_FTRACE), but through kprobes' one shared ops: every
 * register saved, the kprobe looked up by address, kprobes' per-CPU state
 * set and cleared. Here the trampoline saves the argument registers and
 * calls us: the same record for less work.
 */
#if defined(CONFIG_X86_64) && defined(CONFIG_DYNAMIC_FTRACE_WITH_ARGS)
/* x86_64's ftrace_caller saves the argument registers in fregs->regs. */
#define MG_FENTRY_FLAGS		0
static __always_inline struct pt_regs *mg_fentry_regs(struct mg_fregs *fregs)
{
	return mg_fregs_args(fregs);
}
#else
#define MG_FENTRY_FLAGS		FTRACE_OPS_FL_SAVE_REGS
static __always_inline struct pt_regs *mg_fentry_regs(struct mg_fregs *fregs)
{
	return mg_fregs_full(fregs);
}
#endif

static void mg_fentry_hit(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *ops,
			  struct mg_fregs *fregs)
{
	struct mg_probe *p = container_of(ops, struct mg_probe, fops);
	unsigned int busy;
	int bit;

	/*
	 * ftrace's guard (no FTRACE_OPS_FL_RECURSION: that would put ftrace's
	 * assist function between the trampoline and us) disables preemption,
	 * which the ring and the filter set's RCU need. It lets one recursion
	 * through (its TRANSITION bit); mg_handler_enter() does not. (Before
	 * 5.11 the assist function is ftrace's guard, and this one is empty:
	 * compat.h.)
	 */
	bit = ftrace_test_recursion_trylock(ip, parent_ip);
	if (bit < 0) {
		this_cpu_inc(p->pc->missed);
		return;
	}
	busy = mg_handler_enter(p);
	if (busy) {
		mg_entry_hit(p, mg_fentry_regs(fregs), in_task() ? 0 : MAGNET_REC_INTR);
		mg_handler_leave(busy);
	}
	ftrace_test_recursion_unlock(bit);
}

NOKPROBE_SYMBOL(mg_fentry_hit);

/* The function, by name: ftrace_set_filter() takes a pattern, ours has none. */
static int mg_fentry_init(struct mg_probe *p)
{
	char *name;
	int ret;

	name = kstrdup(p->symbol, GFP_KERNEL);
	if (!name)
		return -ENOMEM;
	p->fops.func = mg_fentry_hit;
	p->fops.flags = MG_FENTRY_FLAGS;
	ret = ftrace_set_filter(&p->fops, name, strlen(name), 1);
	kfree(name);
	if (ret == -EINVAL)
		return -ENOENT;	/* nothing matched: not a traceable function */
	return ret;
}

static int mg_fentry_register(struct mg_probe *p)
{
	int ret;

	memset(&p->fops, 0, sizeof(p->fops));
	ret = mg_fentry_init(p);
	if (ret)
		goto err_filter;
	if (p->flags & MAGNET_PROBE_F_DISABLED)
		return 0;
	ret = register_ftrace_function(&p->fops);
	if (ret)
		goto err_filter;
	return 0;
err_filter:
	mg_ftrace_free_filter(&p->fops);
	return ret;
}

/* Waits for every CPU to leave the trampoline and mg_fentry_hit(). */
static void mg_fentry_unregister(struct mg_probe *p)
{
	if (!(p->flags & MAGNET_PROBE_F_DISABLED))
		unregister_ftrace_function(&p->fops);
	mg_ftrace_free_filter(&p->fops);
}

static int mg_fentry_arm(struct mg_probe *p, bool on)
{
	return on ? register_ftrace_function(&p->fops) : unregister_ftrace_function(&p->fops);
}
#else
static int mg_fentry_register(struct mg_probe *p)
{
	return -EOPNOTSUPP;
}

static void mg_fentry_unregister(struct mg_probe *p)
{
}

static int mg_fentry_arm(struct mg_probe *p, bool on)
{
	return -EOPNOTSUPP;
}
#endif

static int mg_kret_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct mg_probe *p = container_of(get_kretprobe(ri), struct mg_probe, rp);
	struct mg_ret_data *d = (struct mg_ret_data *)ri->data;
	unsigned int i;

	/* No instance where the return could not be recorded (mg_handler_enter()). */
	if (unlikely(!rcu_is_watching())) {
		this_cpu_inc(p->pc->missed);
		return 1;
	}
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
	unsigned int busy;
	struct mg_ring *rb;
	u64 *payload;

	busy = mg_handler_enter(p);
	if (!busy)
		return 0;
	if (!mg_probe_pass(p, d->abstract_id))
		goto out;
	/* The return trampoline is a plain return: in_task() is the truth. */
	rec = magnet_reserve(&rb, p->id, p->rec_flags | (in_task() ? 0 : MAGNET_REC_INTR),
			     d->abstract_id, p->payload_len);
	if (!rec) {
		this_cpu_inc(p->pc->lost);
		goto out;
	}
	payload = (u64 *)rec->payload;
	payload[0] = regs_return_value(regs);
	payload[1] = now - d->start;
	memcpy(&payload[2], d->args, p->nargs * sizeof(u64));
	if (p->capture_len)
		mg_capture(p, &payload[2 + p->nargs], d->capture_from);
	mg_probe_done(p, rb, rec);
out:
	mg_handler_leave(busy);
	return 0;
}

NOKPROBE_SYMBOL(mg_kret_return);

/*
 * Tracepoints: the kernel calls each registered probe with its own
 * arguments after a void *data, ours being the probe. One stub per argument
 * count takes them as u64s (BPF puts a typed wrapper per event before its
 * bpf_trace_run1..12, generated where the events are defined; a module
 * cannot). On x86_64 every argument of the kernel's tracepoints is an
 * integer or a pointer (BPF's CAST_TO_U64 would not build otherwise), in a
 * register or, from the sixth on, a stack slot the caller fills, so a stub
 * with as many parameters reads them all. A narrower integer's upper bits
 * are undefined: mg_tp_hit() extends it as BTF says. The stub is picked
 * from the count BTF gives (tp_nargs): never more parameters than passed.
 * A kernel with kCFI (clang's CONFIG_CFI_CLANG) checks the probe's type at
 * every call: refused there.
 */
#define MG_TP_ARG_SIGNED	0x80	/* tp_argw: sign-extend */
#define MG_TP_ARG_BYTES		0x0f	/* tp_argw: bytes; 0 or 8: the whole word */

#ifdef CONFIG_EVENT_TRACING
static void mg_tp_hit(struct mg_probe *p, u64 *args)
{
	unsigned int busy, i;

	/* Tracepoints call with preemption off; nothing of ours may rely on a caller. */
	preempt_disable_notrace();
	busy = mg_handler_enter(p);
	if (busy) {
		for (i = 0; i < p->tp_nargs; i++) {
			unsigned int bits = (p->tp_argw[i] & MG_TP_ARG_BYTES) * 8;

			if (!bits || bits >= 64)
				continue;
			if (p->tp_argw[i] & MG_TP_ARG_SIGNED)
				args[i] = sign_extend64(args[i], bits - 1);
			else
				args[i] &= GENMASK_ULL(bits - 1, 0);
		}
		mg_args_hit(p, args, in_task() ? 0 : MAGNET_REC_INTR);
		mg_handler_leave(busy);
	}
	preempt_enable_notrace();
}

NOKPROBE_SYMBOL(mg_tp_hit);

#define MG_TP_STUB(n, params, ...)				\
static void mg_tp_stub##n params				\
{								\
	u64 args[MAGNET_ARGS_MAX] = { __VA_ARGS__ };		\
								\
	mg_tp_hit(data, args);					\
}								\
NOKPROBE_SYMBOL(mg_tp_stub##n)

MG_TP_STUB(0, (void *data), 0);
MG_TP_STUB(1, (void *data, u64 a0), a0);
MG_TP_STUB(2, (void *data, u64 a0, u64 a1), a0, a1);
MG_TP_STUB(3, (void *data, u64 a0, u64 a1, u64 a2), a0, a1, a2);
MG_TP_STUB(4, (void *data, u64 a0, u64 a1, u64 a2, u64 a3), a0, a1, a2, a3);
MG_TP_STUB(5, (void *data, u64 a0, u64 a1, u64 a2, u64 a3, u64 a4), a0, a1, a2, a3, a4);
MG_TP_STUB(6, (void *data, u64 a0, u64 a1, u64 a2, u64 a3, u64 a4, u64 a5),
	   a0, a1, a2, a3, a4, a5);

static void *const mg_tp_stubs[MAGNET_ARGS_MAX + 1] = {
	(void *)mg_tp_stub0, (void *)mg_tp_stub1, (void *)mg_tp_stub2, (void *)mg_tp_stub3,
	(void *)mg_tp_stub4, (void *)mg_tp_stub5, (void *)mg_tp_stub6,
};

struct mg_tp_find {
	struct tracepoint *tp;
	bool found;
};

static void mg_tp_match(struct tracepoint *tp, void *priv)
{
	struct mg_tp_find *f = priv;

	f->found |= tp == f->tp;
}

/*
 * SUBSYSTEM:EVENT, as tracefs names it: the event file says which
 * tracepoint that is. Only the kernel's own: their argument lists are in
 * the kernel's BTF (a module's would be in its own), and they never go
 * away (a module's event can be found while the module is still coming,
 * and freed if its init fails, whatever references it has).
 */
static int mg_tp_lookup(struct mg_probe *p, struct netlink_ext_ack *extack)
{
	char system[KSYM_NAME_LEN], *event;
	struct trace_event_file *file;
	struct mg_tp_find find = { };
	bool tracepoint;

	if (IS_ENABLED(CONFIG_CFI_CLANG)) {
		NL_SET_ERR_MSG(extack,
			       "this kernel checks tracepoint probes' types (kCFI): not supported");
		return -EOPNOTSUPP;
	}

	strscpy(system, p->symbol, sizeof(system));
	event = strchr(system, ':');
	if (!event || event == system || !event[1] || strchr(event + 1, ':')) {
		NL_SET_ERR_MSG(extack,
			       "a tracepoint is named SUBSYSTEM:EVENT (sched:sched_switch)");
		return -EINVAL;
	}
	*event++ = '\0';
	file = trace_get_event_file(NULL, system, event);
	/* At that level the kernel sets up no trace array, and no event list. */
	if (PTR_ERR_OR_ZERO(file) == -ENODEV && security_locked_down(LOCKDOWN_TRACEFS)) {
		NL_SET_ERR_MSG(extack,
			       "lockdown=confidentiality: the kernel set up no event list to find tracepoints in");
		return -EPERM;
	}
	if (PTR_ERR_OR_ZERO(file) == -EINVAL) {
		NL_SET_ERR_MSG(extack, "no such event (tracefs: events/SUBSYSTEM/EVENT)");
		return -ENOENT;
	}
	if (IS_ERR(file)) {
		NL_SET_ERR_MSG(extack, "the event cannot be had now (its module leaving?)");
		return PTR_ERR(file);
	}
	tracepoint = file->event_call->flags & TRACE_EVENT_FL_TRACEPOINT;
	if (tracepoint) {
		find.tp = file->event_call->tp;
		for_each_kernel_tracepoint(mg_tp_match, &find);
	}
	trace_put_event_file(file);
	if (!tracepoint) {
		NL_SET_ERR_MSG(extack,
			       "this event is no tracepoint (syscalls:* are raw_syscalls:sys_enter/sys_exit; kprobe and uprobe events have probes of their own)");
		return -EINVAL;
	}
	if (!find.found) {
		NL_SET_ERR_MSG(extack,
			       "a module's tracepoint: only the kernel's own are supported");
		return -EOPNOTSUPP;
	}
	p->tpt.tp = find.tp;
	return 0;
}

static int mg_tp_arm(struct mg_probe *p, bool on)
{
	if (on)
		return tracepoint_probe_register(p->tpt.tp, p->tpt.stub, p);
	return tracepoint_probe_unregister(p->tpt.tp, p->tpt.stub, p);
}

/* The stub is chosen and the event held by mg_tp_prepare(), at add. */
static int mg_tp_register(struct mg_probe *p)
{
	return p->flags & MAGNET_PROBE_F_DISABLED ? 0 : mg_tp_arm(p, true);
}

/* Waits for every CPU to leave the stub (and the probe's handler). */
static void mg_tp_unregister(struct mg_probe *p)
{
	if (!(p->flags & MAGNET_PROBE_F_DISABLED))
		mg_tp_arm(p, false);
	tracepoint_synchronize_unregister();
}
#else
static int mg_tp_lookup(struct mg_probe *p, struct netlink_ext_ack *extack)
{
	NL_SET_ERR_MSG(extack, "tracepoint probes need a kernel with CONFIG_EVENT_TRACING");
	return -EOPNOTSUPP;
}

static int mg_tp_arm(struct mg_probe *p, bool on)
{
	return -EOPNOTSUPP;
}

static int mg_tp_register(struct mg_probe *p)
{
	return -EOPNOTSUPP;
}

static void mg_tp_unregister(struct mg_probe *p)
{
}
#endif

/* ---- the registry ---- */

/*
 * Event ids go round the whole id space before one is reused: records of a
 * removed probe may still sit unread in a ring, and must not be taken for
 * the next probe's. Under mg_probes_lock.
 */
static unsigned int mg_next_id = MAGNET_EVENT_FIRST_DYNAMIC;

static int mg_id_alloc(void)
{
	int id;

	lockdep_assert_held(&mg_probes_lock);
	id = ida_alloc_range(&mg_ids, mg_next_id, MAGNET_EVENT_MAX, GFP_KERNEL);
	if (id == -ENOSPC && mg_next_id > MAGNET_EVENT_FIRST_DYNAMIC)
		id = ida_alloc_range(&mg_ids, MAGNET_EVENT_FIRST_DYNAMIC, MAGNET_EVENT_MAX,
				     GFP_KERNEL);
	if (id >= 0)
		mg_next_id = id == MAGNET_EVENT_MAX ? MAGNET_EVENT_FIRST_DYNAMIC : id + 1;
	return id;
}

/*
 * The sock handler reads a struct sock from the first argument: accept it
 * only where the kernel's BTF says that is what the function takes, and
 * record argument 2 as the size only where it is an integer.
 */
static int mg_sock_check(struct mg_probe *p, struct netlink_ext_ack *extack)
{
	struct mg_btf_param par[3];
	int n = mg_btf_func_params(p->symbol, par, ARRAY_SIZE(par));

	switch (n) {
	case -EOPNOTSUPP:
		NL_SET_ERR_MSG(extack,
			       "handler sock checks the function's first argument in the kernel's BTF, and this kernel has none (/sys/kernel/btf/vmlinux)");
		return -EOPNOTSUPP;
	case -ENOENT:
		NL_SET_ERR_MSG(extack,
			       "handler sock: the kernel's BTF does not describe this function (a module's, or not a function)");
		return -EINVAL;
	case -ENOTUNIQ:
		NL_SET_ERR_MSG(extack,
			       "handler sock: the kernel's BTF has functions of this name with different arguments");
		return -EINVAL;
	}
	if (n < 0) {
		NL_SET_ERR_MSG(extack, "handler sock: cannot read the kernel's BTF");
		return n;
	}
	if (n < 1 || par[0].kind != MG_BTF_PTR_STRUCT || strcmp(par[0].struct_name, "sock")) {
		NL_SET_ERR_MSG(extack,
			       "handler sock needs a function whose first argument is a struct sock *");
		return -EINVAL;
	}
	p->sock_size_arg = n >= 3 && par[2].kind == MG_BTF_INT;
	return 0;
}

/*
 * The skb handler reads the first struct sk_buff * parameter, wherever it
 * is (dev_queue_xmit(skb), ip_output(net, sk, skb)): BTF says which.
 */
static int mg_skb_pick(struct mg_probe *p, const struct mg_btf_param *par, int n,
		       struct netlink_ext_ack *extack);

static int mg_skb_check(struct mg_probe *p, struct netlink_ext_ack *extack)
{
	struct mg_btf_param par[MAGNET_ARGS_MAX];
	int n = mg_btf_func_params(p->symbol, par, ARRAY_SIZE(par));

	BUILD_BUG_ON(MAGNET_PAYLOAD_MAX - sizeof(struct magnet_skb) != MG_SKB_CAPTURE_MAX);
	switch (n) {
	case -EOPNOTSUPP:
		NL_SET_ERR_MSG(extack,
			       "handler skb finds the function's struct sk_buff * in the kernel's BTF, and this kernel has none (/sys/kernel/btf/vmlinux)");
		return -EOPNOTSUPP;
	case -ENOENT:
		NL_SET_ERR_MSG(extack,
			       "handler skb: the kernel's BTF does not describe this function (a module's, or not a function)");
		return -EINVAL;
	case -ENOTUNIQ:
		NL_SET_ERR_MSG(extack,
			       "handler skb: the kernel's BTF has functions of this name with different arguments");
		return -EINVAL;
	}
	if (n < 0) {
		NL_SET_ERR_MSG(extack, "handler skb: cannot read the kernel's BTF");
		return n;
	}
	return mg_skb_pick(p, par, min_t(int, n, ARRAY_SIZE(par)), extack);
}

/* The first struct sk_buff * of @n parameters, and the first struct sock *. */
static int mg_skb_pick(struct mg_probe *p, const struct mg_btf_param *par, int n,
		       struct netlink_ext_ack *extack)
{
	int i;

	p->skb_sock_arg = 0;
	for (i = 0; i < n; i++) {
		if (par[i].kind == MG_BTF_PTR_STRUCT && !strcmp(par[i].struct_name, "sock") &&
		    !p->skb_sock_arg)
			p->skb_sock_arg = i + 1;
	}
	for (i = 0; i < n; i++) {
		if (par[i].kind == MG_BTF_PTR_STRUCT && !strcmp(par[i].struct_name, "sk_buff")) {
			p->skb_arg = i;
			return 0;
		}
	}
	NL_SET_ERR_MSG(extack,
		       "handler skb needs a function or tracepoint with a struct sk_buff * among its first "
		       __stringify(MAGNET_ARGS_MAX) " arguments");
	return -EINVAL;
}

/* sched_switch(bool preempt, prev, next[, unsigned int prev_state]) */
static int mg_switch_check(const struct mg_probe *p, const struct mg_btf_param *par, int n,
			   struct netlink_ext_ack *extack)
{
	int i;

	if (strcmp(p->symbol, "sched:sched_switch") || n < 3 || n > 4 ||
	    par[0].kind != MG_BTF_INT || (n > 3 && par[3].kind != MG_BTF_INT))
		goto bad;
	for (i = 1; i < 3; i++)
		if (par[i].kind != MG_BTF_PTR_STRUCT || strcmp(par[i].struct_name, "task_struct"))
			goto bad;
	return 0;
bad:
	NL_SET_ERR_MSG(extack,
		       "handler switch takes the tracepoint sched:sched_switch (preempt, prev, next[, prev_state])");
	return -EINVAL;
}

/*
 * A tracepoint's event, its arguments (BTF), the handler's and the
 * record's fit to them, and the stub that takes them. May set s->nargs.
 */
static int mg_tp_prepare(struct mg_probe *p, struct mg_probe_spec *s,
			 struct netlink_ext_ack *extack)
{
	struct mg_btf_param par[MAGNET_ARGS_MAX];
	int n, i, ret;

	ret = mg_tp_lookup(p, extack);
	if (ret)
		return ret;
	n = mg_btf_tracepoint_params(strchr(p->symbol, ':') + 1, par, ARRAY_SIZE(par));
	if (n == -EOPNOTSUPP || n == -ENOENT) {
		/* No BTF, or none of tracepoints (no CONFIG_BPF_EVENTS). */
		if (s->handler != MAGNET_HANDLER_GENERIC) {
			NL_SET_ERR_MSG(extack,
				       "named handlers find a tracepoint's arguments in the kernel's BTF, which does not describe this one");
			return -EOPNOTSUPP;
		}
		if (s->nargs == MG_NARGS_ALL) {
			NL_SET_ERR_MSG(extack,
				       "the kernel's BTF does not describe this tracepoint: give its number of arguments");
			return -EOPNOTSUPP;
		}
		p->tp_nargs = s->nargs;
	} else if (n < 0) {
		NL_SET_ERR_MSG(extack, "cannot read the kernel's BTF");
		return n;
	}
	if (n >= 0) {
		p->tp_nargs = min_t(int, n, MAGNET_ARGS_MAX);
		for (i = 0; i < p->tp_nargs; i++)
			p->tp_argw[i] = par[i].kind != MG_BTF_INT ? 0 : par[i].int_size |
					(par[i].int_signed ? MG_TP_ARG_SIGNED : 0);
		if (s->handler == MAGNET_HANDLER_SKB)
			ret = mg_skb_pick(p, par, p->tp_nargs, extack);
		else if (s->handler == MAGNET_HANDLER_SWITCH)
			ret = mg_switch_check(p, par, n, extack);
		if (ret)
			return ret;
		if (s->nargs == MG_NARGS_ALL) {
			s->nargs = p->tp_nargs;
		} else if (s->nargs > p->tp_nargs) {
			NL_SET_ERR_MSG(extack, "the tracepoint has fewer arguments");
			return -EINVAL;
		}
	}
	if (s->capture_len && s->handler == MAGNET_HANDLER_GENERIC &&
	    s->capture_arg >= p->tp_nargs) {
		NL_SET_ERR_MSG(extack,
			       "the capture address must come from an argument the tracepoint has");
		return -EINVAL;
	}
#ifdef CONFIG_EVENT_TRACING
	p->tpt.stub = mg_tp_stubs[p->tp_nargs];
#endif
	return 0;
}

static void mg_probe_free(struct mg_probe *p)
{
	if (p->id)
		ida_free(&mg_ids, p->id);
	mg_filter_set_free(rcu_dereference_protected(p->filters, 1));
	free_percpu(p->pc);
	kfree(p);
}

/* NL_SET_ERR_MSG wants a literal: one per case. */
static void mg_register_extack(struct netlink_ext_ack *extack, u8 type, int err)
{
	if (type == MAGNET_PROBE_TRACEPOINT) {
		NL_SET_ERR_MSG(extack, "tracepoint_probe_register() failed");
		return;
	}
	if (type == MAGNET_PROBE_FENTRY && err == -ENOENT) {
		NL_SET_ERR_MSG(extack,
			       "no traceable function of this name (tracefs available_filter_functions)");
		return;
	}
	if (type != MAGNET_PROBE_FENTRY && err == -EOPNOTSUPP) {
		NL_SET_ERR_MSG(extack,
			       "kprobes cannot probe this instruction (e.g. a jump through memory)");
		return;
	}
	switch (err) {
	case -ENOENT:
		NL_SET_ERR_MSG(extack, "no such symbol");
		break;
	case -EOPNOTSUPP:
		NL_SET_ERR_MSG(extack, "fentry probes need a kernel with CONFIG_DYNAMIC_FTRACE");
		break;
	case -EINVAL:
		NL_SET_ERR_MSG(extack,
			       "refused by kprobes (blacklisted, or not a probeable address)");
		break;
	case -EILSEQ:
		NL_SET_ERR_MSG(extack, "offset is not on an instruction boundary");
		break;
	case -EBUSY:
		NL_SET_ERR_MSG(extack, "address already in use by another kind of probe");
		break;
	case -EADDRNOTAVAIL:
		NL_SET_ERR_MSG(extack,
			       "in the idle loop, where RCU is not watching: kprobes unsafe, use fentry");
		break;
	default:
		NL_SET_ERR_MSG(extack, "registration failed");
	}
}

static const char *mg_register_error(u8 type, int err)
{
	if (type == MAGNET_PROBE_TRACEPOINT) {
		switch (err) {
		case -ENOENT:
			return "no such event (tracefs: events/SUBSYSTEM/EVENT)";
		case -EINVAL:
			return "not a tracepoint, or the arguments or capture do not fit it";
		case -EOPNOTSUPP:
			return "no CONFIG_EVENT_TRACING, or no BTF of this tracepoint's arguments";
		case -EPERM:
			return "lockdown=confidentiality: the kernel set up no event list";
		default:
			return "registration failed";
		}
	}
	switch (err) {
	case -ENOENT:
		return type == MAGNET_PROBE_FENTRY ? "no traceable function of this name" :
		       "no such symbol";
	case -EOPNOTSUPP:
		return type == MAGNET_PROBE_FENTRY ?
		       "fentry probes need a kernel with CONFIG_DYNAMIC_FTRACE" :
		       "kprobes cannot probe this instruction (e.g. a jump through memory)";
	case -EINVAL:
		return "refused by kprobes (blacklisted, or not a probeable address)";
	case -EILSEQ:
		return "offset is not on an instruction boundary";
	case -EBUSY:
		return "address already in use by another kind of probe";
	case -EADDRNOTAVAIL:
		return "in the idle loop, where RCU is not watching: kprobes unsafe, use fentry";
	default:
		return "registration failed";
	}
}

/*
 * The idle loop runs where RCU is not watching (after ct_idle_enter()), and
 * there 6.1's kprobes core itself walks RCU lists before any handler of
 * ours runs (get_kprobe() in kprobe_ftrace_handler(), aggr_pre_handler(),
 * rethook): a kprobe or kretprobe on it is refused. That is the idle text
 * section (.cpuidle.text: default_idle, mwait_idle, the cpuidle drivers'
 * enter functions...) and arch_cpu_idle, which 6.1 leaves outside it.
 * Later kernels make both noinstr, which kprobes refuses itself. fentry
 * probes there are taken: only our handler runs, and it skips such hits
 * (mg_handler_enter()). The section's bounds are linker symbols, resolved
 * by kprobes (past an ENDBR, as any probe's address is) at registration,
 * disabled: nothing is armed. Zero: not found, the section is not checked.
 */
static unsigned long mg_idle_text[2];

static unsigned long mg_text_symbol(const char *name)
{
	struct kprobe kp = { .symbol_name = name, .flags = KPROBE_FLAG_DISABLED };

	/* register_kprobe() resolves the address first, whatever it says after. */
	if (!register_kprobe(&kp))
		unregister_kprobe(&kp);
	return (unsigned long)kp.addr;
}

void mg_probes_init(void)
{
	mg_idle_text[0] = mg_text_symbol("__cpuidle_text_start");
	mg_idle_text[1] = mg_text_symbol("__cpuidle_text_end");
	if (!mg_idle_text[0] || mg_idle_text[1] <= mg_idle_text[0])
		memset(mg_idle_text, 0, sizeof(mg_idle_text));
}

static bool mg_in_idle_loop(const struct kprobe *kp)
{
	unsigned long addr = (unsigned long)kp->addr;
	char sym[KSYM_SYMBOL_LEN];

	if (addr >= mg_idle_text[0] && addr < mg_idle_text[1])
		return true;
	sprint_symbol_no_offset(sym, addr);
	return !strcmp(sym, "arch_cpu_idle");
}

/*
 * kprobe structs are consumed by registration: fill them afresh each
 * time. Registered disabled; mg_probe_register() arms what it accepts.
 */
static int mg_kprobe_register(struct mg_probe *p, bool trap)
{
	memset(&p->kp, 0, sizeof(p->kp));
	p->kp.symbol_name = p->symbol;
	p->kp.offset = p->offset;
	p->kp.pre_handler = mg_kprobe_pre;
	if (trap)
		p->kp.post_handler = mg_kprobe_post;
	p->kp.flags = KPROBE_FLAG_DISABLED;
	return register_kprobe(&p->kp);
}

static int mg_kretprobe_register(struct mg_probe *p)
{
	memset(&p->rp, 0, sizeof(p->rp));
	p->rp.kp.symbol_name = p->symbol;
	p->rp.entry_handler = mg_kret_entry;
	p->rp.handler = mg_kret_return;
	p->rp.data_size = sizeof(struct mg_ret_data);
	/* Functions that sleep (vfs_read) have many calls in flight. */
	p->rp.maxactive = max_t(int, 64, 4 * num_possible_cpus());
	p->rp.kp.flags = KPROBE_FLAG_DISABLED;
	return register_kretprobe(&p->rp);
}

static void mg_kprobe_unregister(struct mg_probe *p)
{
	if (p->type == MAGNET_PROBE_KPROBE)
		unregister_kprobe(&p->kp);
	else
		unregister_kretprobe(&p->rp);
}

static int mg_probe_register(struct mg_probe *p)
{
	struct kprobe *kp = p->type == MAGNET_PROBE_KPROBE ? &p->kp : &p->rp.kp;
	int ret;

	if (p->type == MAGNET_PROBE_FENTRY)
		return mg_fentry_register(p);
	if (p->type == MAGNET_PROBE_TRACEPOINT)
		return mg_tp_register(p);
	if (p->type == MAGNET_PROBE_KPROBE) {
		ret = mg_kprobe_register(p, false);
		/*
		 * Only registration tells whether the address is ftrace's call
		 * site. One that traps must never become a jump (see
		 * mg_kprobe_post()): register it again, with a post_handler,
		 * before it is ever armed. Not through ftrace: there a
		 * post_handler moves the probe to kprobes' IPMODIFY ops, which
		 * would refuse a livepatch of the function.
		 */
		if (!ret && !kprobe_ftrace(kp)) {
			unregister_kprobe(kp);
			ret = mg_kprobe_register(p, true);
		}
	} else {
		ret = mg_kretprobe_register(p);
	}
	if (ret)
		return ret;
	if (mg_in_idle_loop(kp)) {
		ret = -EADDRNOTAVAIL;
		goto err_unregister;
	}
	if (p->flags & MAGNET_PROBE_F_DISABLED)
		return 0;
	ret = p->type == MAGNET_PROBE_KPROBE ? enable_kprobe(kp) : enable_kretprobe(&p->rp);
	if (ret)
		goto err_unregister;
	return 0;

err_unregister:
	mg_kprobe_unregister(p);
	return ret;
}

static void mg_probe_unregister(struct mg_probe *p)
{
	if (p->type == MAGNET_PROBE_KPROBE || p->type == MAGNET_PROBE_KRETPROBE)
		mg_kprobe_unregister(p);
	else if (p->type == MAGNET_PROBE_FENTRY)
		mg_fentry_unregister(p);
	else if (p->type == MAGNET_PROBE_TRACEPOINT)
		mg_tp_unregister(p);
	else
		synchronize_rcu();	/* magnet_log() runs with preemption off */
}

struct mg_probe *mg_probe_find(int id, const char *name)
{
	struct mg_probe *p;

	lockdep_assert_held(&mg_probes_lock);
	list_for_each_entry(p, &mg_probes, node)
		if ((id >= 0 && p->id == id) || (name && !strcmp(p->name, name)))
			return p;
	return NULL;
}

static bool mg_has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

static int mg_spec_check(const struct mg_probe_spec *s, struct netlink_ext_ack *extack)
{
	/* The raw handler is for custom events only, and they have no other. */
	bool raw = s->handler == MAGNET_HANDLER_RAW;
	bool custom = s->type == MAGNET_PROBE_CUSTOM;
	bool entry = s->type == MAGNET_PROBE_KPROBE || s->type == MAGNET_PROBE_FENTRY;
	bool tp = s->type == MAGNET_PROBE_TRACEPOINT;
	/* A tracepoint's own count is known once it is found (mg_tp_prepare()). */
	bool nargs_known = s->nargs != MG_NARGS_ALL;

	if (s->type < MAGNET_PROBE_KPROBE || s->type > MAGNET_PROBE_TRACEPOINT) {
		NL_SET_ERR_MSG(extack, "unknown probe type");
		return -EINVAL;
	}
	if (!s->symbol || !*s->symbol || strlen(s->symbol) >= KSYM_NAME_LEN) {
		NL_SET_ERR_MSG(extack, "a probe needs a symbol (a function name)");
		return -EINVAL;
	}
	if (nargs_known && s->nargs > MAGNET_ARGS_MAX) {
		NL_SET_ERR_MSG(extack, "at most " __stringify(MAGNET_ARGS_MAX)
			       " arguments can be recorded");
		return -EINVAL;
	}
	if (s->offset && s->type != MAGNET_PROBE_KPROBE) {
		NL_SET_ERR_MSG(extack, "an offset needs a kprobe");
		return -EINVAL;
	}
	/* ftrace_set_filter() would take these as a glob or a command. */
	if (s->type == MAGNET_PROBE_FENTRY && strpbrk(s->symbol, "*?[]!:")) {
		NL_SET_ERR_MSG(extack, "an fentry probe takes one function name, not a pattern");
		return -EINVAL;
	}
	if (s->capture_arg >= MAGNET_ARGS_MAX) {
		NL_SET_ERR_MSG(extack, "the capture address must come from argument 0..5");
		return -EINVAL;
	}
	if (s->handler == MAGNET_HANDLER_SOCK &&
	    (!entry || s->nargs || s->capture_len || s->offset)) {
		NL_SET_ERR_MSG(extack,
			       "handler sock takes a kprobe or fentry at function entry without args or capture");
		return -EINVAL;
	}
	if (s->handler == MAGNET_HANDLER_SKB &&
	    ((!entry && !tp) || s->nargs || s->capture_arg || s->offset)) {
		NL_SET_ERR_MSG(extack,
			       "handler skb takes a kprobe or fentry at function entry or a tracepoint, without args or a capture argument (it finds the struct sk_buff * itself)");
		return -EINVAL;
	}
	if (s->handler == MAGNET_HANDLER_SWITCH && (!tp || s->nargs || s->capture_len)) {
		NL_SET_ERR_MSG(extack,
			       "handler switch takes the tracepoint sched:sched_switch, without args or capture");
		return -EINVAL;
	}
	if (s->handler > MAGNET_HANDLER_SWITCH || raw != custom) {
		NL_SET_ERR_MSG(extack, "unknown handler for this probe type");
		return -EINVAL;
	}
	if (s->flags & ~__MAGNET_PROBE_F_ALL) {
		NL_SET_ERR_MSG(extack, "unknown probe flags");
		return -EINVAL;
	}
	if (s->handler == MAGNET_HANDLER_SKB && mg_payload_len(s) > MAGNET_PAYLOAD_MAX) {
		NL_SET_ERR_MSG(extack, "handler skb captures at most "
			       __stringify(MG_SKB_CAPTURE_MAX) " bytes (one record)");
		return -EINVAL;
	}
	if (s->type != MAGNET_PROBE_CUSTOM && nargs_known &&
	    mg_payload_len(s) > MAGNET_PAYLOAD_MAX) {
		NL_SET_ERR_MSG(extack, "arguments and capture do not fit one record ("
			       __stringify(MAGNET_PAYLOAD_MAX) " bytes)");
		return -EINVAL;
	}
	if (s->name && (!*s->name || strlen(s->name) > MAGNET_NAME_MAX)) {
		NL_SET_ERR_MSG(extack, "probe names are 1 to " __stringify(MAGNET_NAME_MAX)
			       " characters");
		return -EINVAL;
	}
	/* A name is a field of magnet/probes: one line, tab-separated. */
	if (s->name && mg_has_control(s->name)) {
		NL_SET_ERR_MSG(extack, "a probe name holds no control character");
		return -EINVAL;
	}
	return 0;
}

/* The name a spec gives its probe: its own, or one made of its target. */
static const char *mg_probe_name(const struct mg_probe_spec *s, char *name, size_t len)
{
	if (s->name)
		strscpy(name, s->name, len);
	else if (s->type == MAGNET_PROBE_KRETPROBE)
		snprintf(name, len, "%s%%return", s->symbol);
	else if (s->offset)
		snprintf(name, len, "%s+%u", s->symbol, s->offset);
	else
		strscpy(name, s->symbol, len);
	return name;
}

struct mg_probe *mg_probe_add(const struct mg_probe_spec *spec, struct netlink_ext_ack *extack)
{
	struct mg_probe_spec copy = *spec, *s = &copy;
	struct mg_probe *p;
	int ret, id;

	lockdep_assert_held(&mg_probes_lock);
	/* "All of them" is a tracepoint's generic record's default; else none. */
	if (s->nargs == MG_NARGS_ALL &&
	    (s->type != MAGNET_PROBE_TRACEPOINT || s->handler != MAGNET_HANDLER_GENERIC))
		s->nargs = 0;
	ret = mg_spec_check(s, extack);
	if (ret)
		return ERR_PTR(ret);
	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return ERR_PTR(-ENOMEM);
	p->type = s->type;
	strscpy(p->symbol, s->symbol, sizeof(p->symbol));
	if (p->type == MAGNET_PROBE_TRACEPOINT) {
		ret = mg_tp_prepare(p, s, extack);
		if (!ret)
			ret = mg_spec_check(s, extack);	/* with its argument count */
		if (ret)
			goto err;
	}
	p->nargs = s->nargs;
	p->capture_arg = s->capture_arg;
	p->capture_len = s->capture_len;
	p->handler = s->handler;
	p->flags = s->flags;
	p->offset = s->offset;
	p->owner = s->owner;
	p->rec_flags = mg_rec_flags(s);
	p->payload_len = mg_payload_len(s);
	mg_probe_name(s, p->name, sizeof(p->name));
	if (mg_probe_find(-1, p->name)) {
		NL_SET_ERR_MSG(extack, "a probe with this name exists: give another name");
		ret = -EEXIST;
		goto err;
	}
	/* (a tracepoint's handler was checked against its arguments) */
	if (p->handler == MAGNET_HANDLER_SOCK)
		ret = mg_sock_check(p, extack);
	else if (p->handler == MAGNET_HANDLER_SKB && p->type != MAGNET_PROBE_TRACEPOINT)
		ret = mg_skb_check(p, extack);
	if (ret)
		goto err;
	p->pc = alloc_percpu(struct mg_probe_pcpu);
	if (!p->pc) {
		ret = -ENOMEM;
		goto err;
	}
	id = mg_id_alloc();
	if (id < 0) {
		NL_SET_ERR_MSG(extack, "no event id left");
		ret = id == -ENOSPC ? -ENOSPC : id;
		goto err;
	}
	p->id = id;
	if (p->type != MAGNET_PROBE_CUSTOM) {
		ret = mg_probe_register(p);
		if (ret) {
			mg_register_extack(extack, p->type, ret);
			goto err;
		}
	}
	list_add_tail(&p->node, &mg_probes);
	mg_probes_generation++;
	return p;
err:
	mg_probe_free(p);
	return ERR_PTR(ret);
}

int mg_probe_del(struct mg_probe *p)
{
	lockdep_assert_held(&mg_probes_lock);
	list_del(&p->node);
	mg_probes_generation++;
	mg_probe_unregister(p);	/* waits for running handlers */
	mg_probe_free(p);
	return 0;
}

int mg_probe_set_flags(struct mg_probe *p, u32 flags)
{
	u32 changed = p->flags ^ flags;
	struct kprobe *kp = p->type == MAGNET_PROBE_KRETPROBE ? &p->rp.kp : &p->kp;
	bool off = flags & MAGNET_PROBE_F_DISABLED;
	int ret = 0;

	lockdep_assert_held(&mg_probes_lock);
	if (flags & ~__MAGNET_PROBE_F_ALL)
		return -EINVAL;
	if (!(changed & MAGNET_PROBE_F_DISABLED) || p->type == MAGNET_PROBE_CUSTOM)
		ret = 0;
	else if (p->type == MAGNET_PROBE_FENTRY)
		ret = mg_fentry_arm(p, !off);
	else if (p->type == MAGNET_PROBE_TRACEPOINT)
		ret = mg_tp_arm(p, !off);
	else
		ret = off ? disable_kprobe(kp) : enable_kprobe(kp);
	if (ret)
		return ret;
	WRITE_ONCE(p->flags, flags);
	mg_probes_generation++;
	return 0;
}

void mg_probe_sum(const struct mg_probe *p, struct mg_probe_pcpu *sum)
{
	unsigned int cpu;

	memset(sum, 0, sizeof(*sum));
	for_each_possible_cpu(cpu) {
		const struct mg_probe_pcpu *c = per_cpu_ptr(p->pc, cpu);

		sum->filtered += READ_ONCE(c->filtered);
		sum->sampled += READ_ONCE(c->sampled);
		sum->recorded += READ_ONCE(c->recorded);
		sum->lost += READ_ONCE(c->lost);
		sum->alarms += READ_ONCE(c->alarms);
		sum->alarms_dropped += READ_ONCE(c->alarms_dropped);
		sum->missed += READ_ONCE(c->missed);
	}
	sum->hits = sum->filtered + sum->sampled + sum->recorded + sum->lost;
}

unsigned long mg_probe_missed(const struct mg_probe *p)
{
	struct mg_probe_pcpu sum;

	mg_probe_sum(p, &sum);
	if (p->type == MAGNET_PROBE_KPROBE)
		return p->kp.nmissed + sum.missed;
	if (p->type == MAGNET_PROBE_KRETPROBE)
		return p->rp.kp.nmissed + p->rp.nmissed + sum.missed;
	return sum.missed;
}

/* ---- probes= at load ---- */

static const char *mg_type_name(const struct mg_probe *p)
{
	switch (p->type) {
	case MAGNET_PROBE_KPROBE:
		return "kprobe";
	case MAGNET_PROBE_KRETPROBE:
		return "kretprobe";
	case MAGNET_PROBE_FENTRY:
		return "fentry";
	case MAGNET_PROBE_TRACEPOINT:
		return "tracepoint";
	default:
		return "custom";
	}
}

/* Parse one spec in place; the caller's error names it. */
static int mg_probe_parse(char *spec, struct mg_probe_spec *s)
{
	char *target, *colon, *plus;
	unsigned int nargs = 0;

	memset(s, 0, sizeof(*s));
	target = strchr(spec, ':');
	if (!target)
		return -EINVAL;
	*target++ = '\0';
	if (!strcmp(spec, "kprobe"))
		s->type = MAGNET_PROBE_KPROBE;
	else if (!strcmp(spec, "kretprobe"))
		s->type = MAGNET_PROBE_KRETPROBE;
	else if (!strcmp(spec, "fentry"))
		s->type = MAGNET_PROBE_FENTRY;
	else if (!strcmp(spec, "tracepoint"))
		s->type = MAGNET_PROBE_TRACEPOINT;
	else
		return -EINVAL;
	/* A tracepoint's target is SUBSYSTEM:EVENT: its fields follow EVENT. */
	colon = strchr(target, ':');
	if (colon && s->type == MAGNET_PROBE_TRACEPOINT)
		colon = strchr(colon + 1, ':');
	else if (s->type == MAGNET_PROBE_TRACEPOINT)
		return -EINVAL;
	if (s->type == MAGNET_PROBE_TRACEPOINT)
		nargs = MG_NARGS_ALL;
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
				return -EINVAL;
			*at++ = '\0';
			if (kstrtouint(cap, 10, &len) || kstrtouint(at, 10, &arg) ||
			    !len || len > MAGNET_PAYLOAD_MAX || arg >= MAGNET_ARGS_MAX)
				return -EINVAL;
			s->capture_len = len;
			s->capture_arg = arg;
		}
		if (kstrtouint(colon, 10, &nargs) || nargs > MAGNET_ARGS_MAX)
			return -EINVAL;
	}
	s->nargs = nargs;
	plus = strchr(target, '+');
	if (plus) {
		*plus++ = '\0';
		if (s->type != MAGNET_PROBE_KPROBE || kstrtouint(plus, 0, &s->offset))
			return -EINVAL;
	}
	if (!*target)
		return -EINVAL;
	s->symbol = target;
	return mg_spec_check(s, NULL);
}

/* Register every probe of a comma-separated list; all or nothing. */
int mg_probes_add_list(const char *list)
{
	char *copy, *cur, *spec;
	unsigned int added = 0;
	struct mg_probe *p;
	int ret = 0;

	copy = kstrdup(list, GFP_KERNEL);
	if (!copy)
		return -ENOMEM;
	mutex_lock(&mg_probes_lock);
	cur = copy;
	while ((spec = strsep(&cur, ",")) != NULL) {
		char shown[KSYM_NAME_LEN + 32], name[MAGNET_NAME_MAX + 1];
		struct mg_probe_spec s;

		if (!*spec)
			continue;
		strscpy(shown, spec, sizeof(shown));
		ret = mg_probe_parse(spec, &s);
		if (ret) {
			pr_err("probe '%s': bad spec, expected kprobe:SYMBOL[+OFFSET][:NARGS[:LEN@ARG]], kretprobe:SYMBOL[:NARGS[:LEN@ARG]], fentry:SYMBOL[:NARGS[:LEN@ARG]] or tracepoint:SUBSYSTEM:EVENT[:NARGS[:LEN@ARG]], NARGS and ARG 0..%d, args and capture within %d bytes\n",
			       shown, MAGNET_ARGS_MAX, MAGNET_PAYLOAD_MAX);
			goto err;
		}
		p = mg_probe_add(&s, NULL);
		if (IS_ERR(p)) {
			ret = PTR_ERR(p);
			if (ret != -EEXIST) {
				pr_err("probe '%s': %s (%d)\n", shown,
				       mg_register_error(s.type, ret), ret);
				goto err;
			}
			/* probes= cannot name probes: say which one took the name. */
			p = mg_probe_find(-1, mg_probe_name(&s, name, sizeof(name)));
			if (p && p->type == s.type)
				pr_err("probe '%s': given twice\n", shown);
			else
				pr_err("probe '%s': its name '%s' is taken by the %s probe before it; add one of them with magnet-ctl and a name of its own\n",
				       shown, name, p ? mg_type_name(p) : "?");
			goto err;
		}
		added++;	/* on mg_probes at once: a later duplicate finds it */
	}
	mutex_unlock(&mg_probes_lock);
	kfree(copy);
	return 0;
err:
	/* mg_probe_add() appends: ours are the last @added. */
	while (added--)
		mg_probe_del(list_last_entry(&mg_probes, struct mg_probe, node));
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
	int nk = 0, nr = 0, n = 0, ntp = 0;

	mutex_lock(&mg_probes_lock);
	list_for_each_entry(p, &mg_probes, node)
		n++;
	kps = kcalloc(n ? n : 1, sizeof(*kps), GFP_KERNEL);
	rps = kcalloc(n ? n : 1, sizeof(*rps), GFP_KERNEL);
	list_for_each_entry(p, &mg_probes, node) {
		WARN_ON_ONCE(p->type == MAGNET_PROBE_CUSTOM);	/* its module pins us */
		if (p->type == MAGNET_PROBE_TRACEPOINT) {
			/* One wait for all of them, below. */
			if (!(p->flags & MAGNET_PROBE_F_DISABLED))
				mg_tp_arm(p, false);
			ntp++;
		} else if (!kps || !rps || p->type == MAGNET_PROBE_CUSTOM ||
		    p->type == MAGNET_PROBE_FENTRY)
			mg_probe_unregister(p);	/* not kprobes, or no memory for batching */
		else if (p->type == MAGNET_PROBE_KPROBE)
			kps[nk++] = &p->kp;
		else
			rps[nr++] = &p->rp;
	}
	if (nk)
		unregister_kprobes(kps, nk);
	if (nr)
		unregister_kretprobes(rps, nr);
	if (ntp)
		tracepoint_synchronize_unregister();
	list_for_each_entry_safe(p, tmp, &mg_probes, node) {
		list_del(&p->node);
		mg_probe_free(p);
	}
	mutex_unlock(&mg_probes_lock);
	kfree(kps);
	kfree(rps);
	/* Replaced filter sets are freed by call_rcu() callbacks in this module. */
	rcu_barrier();
}

int mg_probes_show(struct seq_file *m, void *v)
{
	struct mg_probe_pcpu sum;
	struct mg_probe *p;

	mutex_lock(&mg_probes_lock);
	list_for_each_entry(p, &mg_probes, node) {
		mg_probe_sum(p, &sum);
		seq_printf(m, "%u\t%s\t%s", p->id, mg_type_name(p),
			   p->type == MAGNET_PROBE_CUSTOM ? p->name : p->symbol);
		if (p->offset)
			seq_printf(m, "+%u", p->offset);
		seq_printf(m, "\t%u\t%lu\t%lu", p->nargs, sum.hits, mg_probe_missed(p));
		if (p->capture_len && p->handler == MAGNET_HANDLER_GENERIC)
			seq_printf(m, "\t%u@%u", p->capture_len, p->capture_arg);
		else
			seq_puts(m, "\t-");
		/* The name filters and tools go by; the target is the symbol. */
		seq_printf(m, "\t%s\n", p->name);
	}
	mutex_unlock(&mg_probes_lock);
	return 0;
}
