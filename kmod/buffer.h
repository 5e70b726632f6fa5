/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _MAGNET_BUFFER_H
#define _MAGNET_BUFFER_H

#include <linux/irq_work.h>
#include <linux/mutex.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include "fair.h"
#include "ring_core.h"

/*
 * A task named in this CPU's stream by a TASK record (magnet_reserve()):
 * valid while gen is the buffer's and, in overwrite mode, the record is
 * still in the ring. Nested writers may tear a slot; the worst that does
 * is one more TASK record.
 */
struct mg_task_slot {
	u64 comm[2];
	u64 uids;		/* uid | euid << 32, as named */
	u32 pid;
	u32 gen;		/* the ring's task_gen when written; 0: empty */
	unsigned long pos;	/* where the TASK record went in the ring */
};

#define MG_TASK_SLOTS	MAGNET_TASK_SLOTS	/* per CPU, by pid modulo it */

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
	unsigned int aio_active;	/* AIO reads queued or being served (aio_lock) */
	struct delayed_work aio_work;
	struct dentry *dentry;

	/*
	 * Writer side. The ring's task_gen is bumped (never to 0) when a
	 * reader may not have seen the TASK records already written: a new
	 * reader; a new ring starts past the old one's.
	 */
	struct mg_task_slot tasks[MG_TASK_SLOTS];
	struct mg_fair_cpu fair;	/* per-job fairness (fair.h) */
};

enum mg_clock { MG_CLOCK_MONO, MG_CLOCK_TSC };

extern struct mg_cpu_buf **mg_bufs;
extern enum mg_clock mg_clock;

int mg_buffers_init(unsigned long size, enum mg_ring_mode mode);
void mg_buffers_exit(void);
int mg_buffers_resize(unsigned long size, int mode);	/* 0, -1: unchanged */
unsigned long mg_buffers_size(void);
enum mg_ring_mode mg_buffers_mode(void);
void mg_buffer_stats(struct mg_cpu_buf *buf, struct mg_ring_stats *st);
void mg_buffer_forget_tasks(struct mg_cpu_buf *buf);

/*
 * The record writer, used by every probe handler: reserve a record on this
 * CPU with its header filled in, write the payload, commit. Call with
 * preemption disabled, where RCU is watching; any context. @flags are the
 * record's, MAGNET_REC_INTR included: only the caller knows what context
 * its hit interrupted. NULL means lost (and counted). The first record of
 * a task in the stream is preceded by its TASK record.
 */
struct magnet_record *magnet_reserve(struct mg_ring **rbp, u16 event_id, u16 flags,
				     u64 abstract_id, u32 payload_len);

static inline void magnet_commit(struct mg_ring *rb, struct magnet_record *rec)
{
	mg_ring_commit(rb, rec);
}

#endif /* _MAGNET_BUFFER_H */
