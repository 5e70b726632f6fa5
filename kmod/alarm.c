// SPDX-License-Identifier: GPL-2.0
/*
 * Alarms: hits of probes flagged NOTIFY become generic-netlink multicast
 * messages (paper §3.4: critical events reach user space at once, without
 * reading the rings). A probe handler may not allocate or send, so it only
 * claims a slot in this CPU's queue (cmpxchg, nesting-safe) and queues an
 * irq_work; a work item drains every CPU's queue and multicasts. At most
 * MAGNET_ALARM_RATE alarms per second per CPU; the rest, and those that
 * find the queue full, are dropped and counted by the caller.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/irq_work.h>
#include <linux/kprobes.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/workqueue.h>
#include <asm/local.h>
#include <linux/magnet.h>
#include "alarm.h"
#include "netlink.h"

#define MG_ALARM_SLOTS	256

struct mg_alarm_queue {
	local_t head;			/* next slot to claim (writers) */
	unsigned long tail;		/* next slot to send (the worker) */
	unsigned long window;		/* the second in_window counts */
	unsigned int in_window;
	struct irq_work kick;
	struct mg_alarm slot[MG_ALARM_SLOTS];
};

static struct mg_alarm_queue __percpu *mg_alarm_queues;
static void mg_alarm_send(struct work_struct *work);
static DECLARE_WORK(mg_alarm_work, mg_alarm_send);

static void mg_alarm_kick(struct irq_work *w)
{
	schedule_work(&mg_alarm_work);
}

bool mg_alarm_queue(u16 probe_id, u64 abstract_id, u64 ts)
{
	struct mg_alarm_queue *q = this_cpu_ptr(mg_alarm_queues);
	unsigned long window = ktime_get_mono_fast_ns() / NSEC_PER_SEC;
	struct mg_alarm *a;
	long h;

	if (window != READ_ONCE(q->window)) {
		WRITE_ONCE(q->window, window);
		WRITE_ONCE(q->in_window, 0);
	}
	if (READ_ONCE(q->in_window) >= MAGNET_ALARM_RATE)
		return false;
	do {
		h = local_read(&q->head);
		/*
		 * The worker's copy of a slot is done before we refill it:
		 * pairs with the release of tail in mg_alarm_send().
		 */
		if (h - smp_load_acquire(&q->tail) >= MG_ALARM_SLOTS)
			return false;	/* the worker is behind: drop, counted */
	} while (local_cmpxchg(&q->head, h, h + 1) != h);
	WRITE_ONCE(q->in_window, q->in_window + 1);
	a = &q->slot[h % MG_ALARM_SLOTS];
	a->probe_id = probe_id;
	a->cpu = smp_processor_id();
	a->pid = current->pid;
	a->tgid = current->tgid;
	a->timestamp = ts;
	a->abstract_id = abstract_id;
	/* The slot before ready: pairs with the acquire in mg_alarm_send(). */
	smp_store_release(&a->ready, 1);
	irq_work_queue(&q->kick);
	return true;
}

NOKPROBE_SYMBOL(mg_alarm_queue);

static void mg_alarm_send(struct work_struct *work)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		struct mg_alarm_queue *q = per_cpu_ptr(mg_alarm_queues, cpu);

		for (;;) {
			struct mg_alarm *a = &q->slot[q->tail % MG_ALARM_SLOTS];
			struct mg_alarm copy;

			/* Pairs with the release of ready in mg_alarm_queue(). */
			if (!smp_load_acquire(&a->ready))
				break;	/* claimed slots fill in order of claim */
			copy = *a;
			WRITE_ONCE(a->ready, 0);
			/*
			 * The copy and the cleared ready before the slot is
			 * free: pairs with the acquire of tail in
			 * mg_alarm_queue().
			 */
			smp_store_release(&q->tail, q->tail + 1);
			mg_netlink_alarm(&copy);
		}
	}
}

/* Let a send under way finish; later runs find the family gone and drop. */
void mg_alarm_flush(void)
{
	flush_work(&mg_alarm_work);
}

int mg_alarm_init(void)
{
	unsigned int cpu;

	mg_alarm_queues = alloc_percpu(struct mg_alarm_queue);
	if (!mg_alarm_queues)
		return -ENOMEM;
	for_each_possible_cpu(cpu)
		init_irq_work(&per_cpu_ptr(mg_alarm_queues, cpu)->kick, mg_alarm_kick);
	return 0;
}

void mg_alarm_exit(void)
{
	unsigned int cpu;

	if (!mg_alarm_queues)
		return;
	for_each_possible_cpu(cpu)
		irq_work_sync(&per_cpu_ptr(mg_alarm_queues, cpu)->kick);
	cancel_work_sync(&mg_alarm_work);
	free_percpu(mg_alarm_queues);
	mg_alarm_queues = NULL;
}
