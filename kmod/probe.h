/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _MAGNET_PROBE_H
#define _MAGNET_PROBE_H

#include <linux/ftrace.h>
#include <linux/kprobes.h>
#include <linux/mutex.h>
#include <linux/netlink.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/rcupdate.h>
#include <linux/magnet.h>
#include "compat.h"

struct seq_file;
struct tracepoint;
struct mg_filter_set;

/* mg_probe_spec.nargs not given: a tracepoint's all, others' none. */
#define MG_NARGS_ALL	0xff

/* What user space (netlink, probes=) or a module (kapi) asks for. */
struct mg_probe_spec {
	u8 type;		/* enum magnet_probe_type */
	u8 nargs;
	u8 capture_arg;
	u8 handler;		/* enum magnet_handler */
	u16 capture_len;
	u32 flags;		/* MAGNET_PROBE_F_* */
	unsigned int offset;
	const char *symbol;
	const char *name;	/* NULL: the default name */
	struct module *owner;	/* custom events: the registering module */
};

/*
 * Counters of one probe on one CPU. Every hit lands in exactly one of
 * filtered, sampled, recorded or lost, so hits is their sum (mg_probe_sum)
 * and costs the hot path nothing.
 */
struct mg_probe_pcpu {
	unsigned long hits;		/* mg_probe_sum() only */
	unsigned long filtered;
	unsigned long sampled;
	unsigned long recorded;
	unsigned long lost;
	unsigned long alarms;
	unsigned long alarms_dropped;
	unsigned long sample_count;
	unsigned long missed;		/* fentry: calls skipped, never hits */
};

struct mg_probe {
	struct list_head node;		/* mg_probes, under mg_probes_lock */
	u16 id;
	u8 type;
	u8 nargs;
	u8 capture_arg;
	u8 handler;
	u16 capture_len;
	u16 rec_flags;			/* MAGNET_REC_* of its records */
	u32 payload_len;		/* of its records */
	u32 flags;
	unsigned int offset;
	u32 sample_every;
	u64 sample_interval;
	atomic64_t sample_last;
	u32 next_filter_id;
	struct module *owner;
	struct mg_probe_pcpu __percpu *pc;
	struct mg_filter_set __rcu *filters;
	bool sock_size_arg;		/* handler sock: argument 2 is a size */
	u8 skb_arg;			/* handler skb: the struct sk_buff * */
	u8 skb_sock_arg;		/* handler skb: 1 + a struct sock *, or 0 */
	u8 tp_nargs;			/* tracepoint: the arguments it passes, to 6 */
	u8 tp_argw[MAGNET_ARGS_MAX];	/* tracepoint: MG_TP_ARG_*, per argument */
	char symbol[KSYM_NAME_LEN];
	char name[MAGNET_NAME_MAX + 1];	/* SYMBOL%return, SYMBOL+OFFSET fit */
	union {
		struct kprobe kp;
		struct kretprobe rp;
#ifdef CONFIG_DYNAMIC_FTRACE
		struct ftrace_ops fops;
#endif
		struct {
			struct tracepoint *tp;		/* the kernel's own */
			void *stub;			/* takes tp_nargs */
		} tpt;
	};
};

extern struct mutex mg_probes_lock;
extern struct list_head mg_probes;
extern unsigned int mg_probes_generation;

void mg_probes_init(void);
int mg_probes_add_list(const char *spec);
void mg_probes_exit(void);
int mg_probes_show(struct seq_file *m, void *v);

/* Control operations: call with mg_probes_lock held. */
struct mg_probe *mg_probe_add(const struct mg_probe_spec *spec, struct netlink_ext_ack *extack);
int mg_probe_del(struct mg_probe *p);
struct mg_probe *mg_probe_find(int id, const char *name);
int mg_probe_set_flags(struct mg_probe *p, u32 flags);
void mg_probe_sum(const struct mg_probe *p, struct mg_probe_pcpu *sum);
unsigned long mg_probe_missed(const struct mg_probe *p);
const char *mg_handler_name(u8 handler);

/*
 * The probe path before the ring: filters, then sampling, each counted.
 * True means: write the record (and count recorded or lost after).
 */
bool mg_probe_pass(struct mg_probe *p, u64 abstract_id);

/*
 * Every handler's way in, with preemption disabled: 0 means skip the hit
 * (counted as missed), else pass the value to mg_handler_leave(). Skipped:
 * - where RCU is not watching (the idle loop after ct_idle_enter(), entry
 *   code): the rings, filter sets and alarms RCU protects may be freed
 *   under such a CPU, since grace periods do not wait for it;
 * - the module's own work: a handler at an interrupt level where another
 *   of magnet's handlers is already running on this CPU was reached from
 *   that handler (its nofault copies, its irq_work), not by the traced
 *   code. A real interrupt or NMI has a level of its own.
 */
DECLARE_PER_CPU(unsigned int, mg_handler_levels);

static __always_inline unsigned int mg_handler_enter(struct mg_probe *p)
{
	unsigned int level = 1U << interrupt_context_level();

	if (unlikely(!rcu_is_watching() || (__this_cpu_read(mg_handler_levels) & level))) {
		this_cpu_inc(p->pc->missed);
		return 0;
	}
	/* Not atomic, and need not be: what interrupts us restores its bit. */
	__this_cpu_or(mg_handler_levels, level);
	return level;
}

static __always_inline void mg_handler_leave(unsigned int level)
{
	__this_cpu_and(mg_handler_levels, ~level);
}

void mg_probe_alarm(struct mg_probe *p, u64 abstract_id, u64 ts);
struct mg_ring;
void mg_probe_done(struct mg_probe *p, struct mg_ring *rb, struct magnet_record *rec);

#endif /* _MAGNET_PROBE_H */
