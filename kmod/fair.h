/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-job fairness of the rings (UAPI: FAIRNESS).
 *
 * Each CPU keeps a small table of the jobs (cgroup v2 ids) that write to
 * its ring. The record writer calls mg_fair_admit() before it asks the
 * ring for room and mg_fair_done() after. When the ring is filled past the
 * threshold, a job whose use of the ring's last window is above its share
 * loses the record; its losses are reported in a JOB_LOST record in front
 * of its next record that fits.
 *
 * Who touches what: only task-context writers of the CPU use the hash
 * slots, one at a time (busy: a task-context probe that recursed, which
 * kprobes and the fentry guard otherwise refuse, falls back to the shared
 * slot), so a job's counts need no atomicity beyond local_t's. Interrupts
 * and NMIs, which nest, all use the shared slot and the window counters:
 * local_t again, the window's turn-over decided by one cmpxchg. Readers on
 * other CPUs (magnet/jobs, JOBS_GET) take racy snapshots.
 *
 * Everything here is inline and uses only what ring_core.c uses, so it
 * compiles in user space (ring_user.h) and the unit tests run this code.
 */
#ifndef _MAGNET_FAIR_H
#define _MAGNET_FAIR_H

#include "ring_core.h"

#ifdef MAGNET_KERNEL
#include <linux/bitops.h>
#define mg_fair_log2(x)	__ffs(x)
#else
#define mg_fair_log2(x)	__builtin_ctzl(x)
#endif

#define MG_FAIR_SLOTS	MAGNET_FAIR_SLOTS
#define MG_FAIR_BITS	6
#if MG_FAIR_SLOTS != 1 << MG_FAIR_BITS
#error "the fairness table's hash wants MG_FAIR_BITS = log2(MG_FAIR_SLOTS)"
#endif
#define MG_FAIR_PROBES	MAGNET_FAIR_PROBES
#define MG_JOB_LOST_LEN	(MAGNET_RECORD_HEADER + sizeof(struct magnet_job_lost))

/* The threshold in percent of the ring, 0: off (fair.c; the tests' own). */
extern unsigned int mg_fair_fill;

struct mg_fair_job {
	unsigned long id;	/* cgroup v2 id; 0: a free slot (the shared job's) */
	unsigned long epoch;	/* the window it was last seen in; 0: never */
	unsigned long prev;	/* its bytes in the window before that one */
	local_t cur;		/* its bytes in window epoch */
	local_t written;	/* exact counts (magnet/jobs) */
	local_t bytes;
	local_t lost_fair;
	local_t pending;	/* lost_fair not yet in a JOB_LOST record */
	local_t lost_ring;
};

struct mg_fair_cpu {
	local_t epoch;		/* the current window; starts at 2 */
	local_t win;		/* bytes written in it */
	local_t act_cur;	/* jobs seen in it */
	local_t act_new;	/* ... of them, not seen in the previous one */
	unsigned long act_prev;	/* jobs seen in the previous one */
	local_t busy;		/* a task-context writer holds the hash slots */
	local_t lost_fair;	/* every job's, for stats: never reset */
	unsigned long orphan_id;	/* a job whose slot went to another ... */
	local_t orphan;		/* ... and its losses still to report */
	struct mg_fair_job shared;	/* interrupts, and jobs without a slot */
	struct mg_fair_job jobs[MG_FAIR_SLOTS];
};

/* What mg_fair_admit() decided, for mg_fair_done(). */
struct mg_fair_ticket {
	struct mg_fair_job *job;
	unsigned int meta;	/* bytes of JOB_LOST records to write in front */
	unsigned char owner;	/* holds the hash slots */
	unsigned char own;	/* report the job's pending losses */
	unsigned char orphan;	/* report the orphan's */
};

/* Window numbers 0 and 1 mean "never seen" to every slot. */
static inline void mg_fair_cpu_init(struct mg_fair_cpu *fc)
{
	local_set(&fc->epoch, 2);
}

static __always_inline unsigned int mg_fair_hash(unsigned long id)
{
	return (unsigned int)(((__u64)id * 0x61c8864680b583ebULL) >> (64 - MG_FAIR_BITS));
}

/* First sight of @j in window @e: its bytes of the window before slide out. */
static __always_inline void mg_fair_seen(struct mg_fair_cpu *fc, struct mg_fair_job *j,
					 unsigned long e)
{
	unsigned long last = READ_ONCE(j->epoch);

	WRITE_ONCE(j->prev, last == e - 1 ? (unsigned long)local_read(&j->cur) : 0);
	local_set(&j->cur, 0);
	WRITE_ONCE(j->epoch, e);
	local_inc(&fc->act_cur);
	if (last != e - 1)
		local_inc(&fc->act_new);
}

/*
 * A slot another job may take: free, or its job idle for two windows. One
 * with losses to report only while the orphan holder is empty: they move
 * there, and the next task's record reports them.
 */
static __always_inline int mg_fair_idle(const struct mg_fair_cpu *fc,
					const struct mg_fair_job *j, unsigned long e)
{
	if (!j->id)
		return 1;
	if (j->epoch == e || j->epoch == e - 1)
		return 0;
	return !local_read(&j->pending) || !local_read(&fc->orphan);
}

static __always_inline void mg_fair_take(struct mg_fair_cpu *fc, struct mg_fair_job *j,
					 unsigned long id)
{
	if (local_read(&j->pending)) {
		fc->orphan_id = j->id;
		local_set(&fc->orphan, local_read(&j->pending));
	}
	WRITE_ONCE(j->epoch, 0);
	WRITE_ONCE(j->prev, 0);
	local_set(&j->cur, 0);
	local_set(&j->written, 0);
	local_set(&j->bytes, 0);
	local_set(&j->lost_fair, 0);
	local_set(&j->pending, 0);
	local_set(&j->lost_ring, 0);
	WRITE_ONCE(j->id, id);
}

/*
 * The slot of job @id: its hash slot or one of the next MG_FAIR_PROBES - 1,
 * taken if need be; the shared slot if none is free. Bounded work: a slot
 * is never emptied, only handed over, so a job is always within reach.
 */
static __always_inline struct mg_fair_job *mg_fair_find(struct mg_fair_cpu *fc,
							unsigned long id, unsigned long e)
{
	unsigned int h = mg_fair_hash(id), i;
	struct mg_fair_job *j = &fc->jobs[h], *take = NULL;

	if (likely(j->id == id))
		return j;
	for (i = 1; i < MG_FAIR_PROBES; i++) {
		j = &fc->jobs[(h + i) & (MG_FAIR_SLOTS - 1)];
		if (j->id == id)
			return j;
	}
	for (i = 0; i < MG_FAIR_PROBES && !take; i++) {
		j = &fc->jobs[(h + i) & (MG_FAIR_SLOTS - 1)];
		if (mg_fair_idle(fc, j, e))
			take = j;
	}
	if (!take)
		return &fc->shared;
	mg_fair_take(fc, take, id);
	return take;
}

/* Unread bytes (reserved, not consumed) above @fill percent of the ring. */
static __always_inline int mg_fair_pressed(const struct mg_ring *rb, unsigned int fill)
{
	unsigned long used = (unsigned long)local_read(&rb->head) -
			     (unsigned long)atomic_long_read(&rb->tail);

	return (__u64)used * 100 > (__u64)rb->size * fill;
}

/*
 * @j's use of the ring's last window above its share, size / active jobs.
 * Its use: its bytes of this window, and of the previous one in the
 * proportion of this window still to come.
 */
static __always_inline int mg_fair_over(const struct mg_fair_cpu *fc, const struct mg_ring *rb,
					const struct mg_fair_job *j)
{
	unsigned long size = rb->size, w = local_read(&fc->win);
	unsigned long n = READ_ONCE(fc->act_prev) + local_read(&fc->act_new);
	__u64 use;

	if (n < 2)
		return 0;	/* a job alone is never held back */
	if (w > size)
		w = size;
	use = (unsigned long)local_read(&j->cur) +
	      (((__u64)READ_ONCE(j->prev) * (size - w)) >> mg_fair_log2(size));
	return use * n > size;
}

/*
 * Before reserving @len bytes for a record of job @id (@intr: interrupt
 * context): 0 to go on, with mg_fair_done() to follow whatever the ring
 * says; -1 if the rule dropped the record (counted).
 */
static __always_inline int mg_fair_admit(struct mg_fair_cpu *fc, struct mg_ring *rb,
					 unsigned long id, int intr, struct mg_fair_ticket *t)
{
	unsigned long e = local_read(&fc->epoch);
	unsigned int fill = READ_ONCE(mg_fair_fill);
	struct mg_fair_job *j;

	t->owner = !intr && !local_read(&fc->busy);
	if (likely(t->owner)) {
		local_inc(&fc->busy);
		j = mg_fair_find(fc, id, e);
	} else {
		j = &fc->shared;
	}
	t->job = j;
	if (unlikely(READ_ONCE(j->epoch) != e))
		mg_fair_seen(fc, j, e);
	t->meta = 0;
	t->own = 0;
	t->orphan = 0;
	/* Overwrite mode: no rule, and no JOB_LOST a writer could push out. */
	if (unlikely(rb->mode != MG_RING_DISCARD))
		return 0;
	if (fill && mg_fair_pressed(rb, fill) && mg_fair_over(fc, rb, j)) {
		local_inc(&j->lost_fair);
		local_inc(&j->pending);
		local_inc(&fc->lost_fair);
		if (t->owner)
			local_dec(&fc->busy);
		return -1;
	}
	if (unlikely(local_read(&j->pending))) {
		t->own = 1;
		t->meta += MG_JOB_LOST_LEN;
	}
	if (unlikely(t->owner && local_read(&fc->orphan))) {
		t->orphan = 1;
		t->meta += MG_JOB_LOST_LEN;
	}
	return 0;
}

static __always_inline unsigned long mg_fair_take_count(local_t *l)
{
	long v;

	do {
		v = local_read(l);
	} while (v && local_cmpxchg(l, v, 0) != v);
	return v;
}

/*
 * A JOB_LOST record at @r; padding if a nested writer (the shared job)
 * reported the losses first, as ring_core.c does with LOST records.
 */
static __always_inline void mg_fair_report(const struct mg_ring *rb, struct magnet_record *r,
					   unsigned long id, unsigned long n, __u64 ts)
{
	r->size = MG_JOB_LOST_LEN;
	r->flags = 0;
	r->timestamp = ts;
	if (!n) {
		r->event_id = MAGNET_EVENT_PAD;
		return;
	}
	r->event_id = MAGNET_EVENT_JOB_LOST;
	r->cpu = rb->cpu;
	r->cgroup = (__u32)id;
	r->abstract_id = id;
	r->pid = 0;
	r->tgid = 0;
	((struct magnet_job_lost *)r->payload)->fair = n;
}

static __always_inline void mg_fair_next_window(struct mg_fair_cpu *fc)
{
	WRITE_ONCE(fc->act_prev, local_read(&fc->act_cur));
	local_set(&fc->act_cur, 0);
	local_set(&fc->act_new, 0);
	local_inc(&fc->epoch);
}

/*
 * After the ring answered: @rec the record (NULL: the ring lost it), @meta
 * the metadata in front of it, @len the bytes reserved for both. Writes
 * the JOB_LOST records admit planned at @meta and returns what follows
 * them (where a TASK record goes).
 */
static __always_inline struct magnet_record *
mg_fair_done(struct mg_fair_cpu *fc, struct mg_ring *rb, const struct mg_fair_ticket *t,
	     const struct magnet_record *rec, struct magnet_record *meta, unsigned long len)
{
	struct mg_fair_job *j = t->job;
	unsigned long w;

	if (unlikely(!rec)) {
		local_inc(&j->lost_ring);
		goto out;
	}
	if (unlikely(t->meta)) {
		__u64 ts = meta->timestamp;

		if (t->orphan) {
			mg_fair_report(rb, meta, fc->orphan_id,
				       mg_fair_take_count(&fc->orphan), ts);
			meta = (struct magnet_record *)((unsigned char *)meta + MG_JOB_LOST_LEN);
		}
		if (t->own) {
			mg_fair_report(rb, meta, j->id, mg_fair_take_count(&j->pending), ts);
			meta = (struct magnet_record *)((unsigned char *)meta + MG_JOB_LOST_LEN);
		}
	}
	local_inc(&j->written);
	local_add(rec->size, &j->bytes);
	local_add(len, &j->cur);
	local_add(len, &fc->win);
	/* One writer turns the window over, nested or not: the cmpxchg's. */
	w = local_read(&fc->win);
	if (unlikely(w >= rb->size) && local_cmpxchg(&fc->win, w, w - rb->size) == (long)w)
		mg_fair_next_window(fc);
out:
	if (t->owner)
		local_dec(&fc->busy);
	return meta;
}

#ifdef MAGNET_KERNEL
/* One job of one CPU's table, as magnet/jobs and JOBS_GET show it. */
struct mg_fair_stat {
	u64 cgroup;
	u64 written;
	u64 bytes;
	u64 lost_fair;
	u64 pending;
	u64 lost_ring;
};

#define MG_FAIR_ENTRIES	(MG_FAIR_SLOTS + 2)	/* the shared job, slots, orphan */

int mg_fair_entry(const struct mg_fair_cpu *fc, unsigned int idx, struct mg_fair_stat *st);
unsigned long mg_fair_lost(const struct mg_fair_cpu *fc);
unsigned int mg_fair_get_fill(void);
void mg_fair_set_fill(unsigned int fill);
extern const struct file_operations mg_jobs_fops;
#endif

#endif /* _MAGNET_FAIR_H */
