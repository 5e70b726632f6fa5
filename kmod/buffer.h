/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _MAGNET_BUFFER_H
#define _MAGNET_BUFFER_H

#include <linux/irq_work.h>
#include <linux/mutex.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include "ring_core.h"

/* Everything about one CPU's ring that outlives a resize. */
struct mg_cpu_buf {
	struct mg_ring __rcu *ring;	/* swapped only while no reader */
	struct mg_ring_stats base;	/* counters of rings replaced by resizes */
	unsigned int cpu;

	/* Reader side: one reader at a time (fs.c). */
	atomic_t reader;
	struct mutex read_lock;		/* one consume at a time; attr, bounce */
	struct magnet_read_attr attr;
	void *bounce;			/* overwrite-mode reads */
	wait_queue_head_t wait;
	struct fasync_struct *fasync;
	struct irq_work wake_work;	/* writers never wake anyone directly */
	spinlock_t arm_lock;		/* merges the armed read conditions */
	spinlock_t aio_lock;
	struct list_head aio_pending;
	struct delayed_work aio_work;
	struct dentry *dentry;
};

enum mg_clock { MG_CLOCK_MONO, MG_CLOCK_TSC };

extern struct mg_cpu_buf **mg_bufs;
extern enum mg_clock mg_clock;

int mg_buffers_init(unsigned long size, enum mg_ring_mode mode);
void mg_buffers_exit(void);
int mg_buffers_resize(unsigned long size, enum mg_ring_mode mode);
unsigned long mg_buffers_size(void);
enum mg_ring_mode mg_buffers_mode(void);
void mg_buffer_stats(struct mg_cpu_buf *buf, struct mg_ring_stats *st);

/*
 * The record writer, used by every probe handler: reserve a record on this
 * CPU with its header filled in, write the payload, commit. Call with
 * preemption disabled; any context. NULL means lost (and counted).
 */
struct magnet_record *magnet_reserve(struct mg_ring **rbp, u16 event_id, u16 flags,
				     u64 abstract_id, u32 payload_len);

static inline void magnet_commit(struct mg_ring *rb, struct magnet_record *rec)
{
	mg_ring_commit(rb, rec);
}

#endif /* _MAGNET_BUFFER_H */
