/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-job fairness of the rings (UAPI: FAIRNESS).
 *
 * Each CPU keeps a small table of the jobs (cgroup v2 ids) that write to
 * its ring. The record writer calls mg_fair_admit() before it asks the
 * ring for room, and mg_fair_done() after. When the ring is filled past the
 * threshold, a job whose use of the ring's last window is above its share
 * loses the record; its losses are reported in a JOB_LOST record in front
 * of its next record that fits.
 *
 * Who touches what: writers of one CPU never run at once, but they nest.
 * Hits in interrupt context (MAGNET_REC_INTR), whose job is unknown, use
 * only the shared slot; so the hash slots are changed by writers of
 * task-context hits alone, and a slot is taken over only in
 * mg_fair_find(), which calls nothing a probe could fire in, and only if
 * its job was seen in neither of the last two windows (admit marks the
 * writer's own seen first). Between admit and done a writer calls only
 * the ring and the clock (notrace, NOKPROBE); a probe that still fires
 * there (a kprobe on the clock under an fentry probe) nests like an
 * interrupt.
 * Every counter a nested writer may share is a local_t, losses to report
 * are taken with cmpxchg (the loser writes padding, as ring_core.c does
 * with LOST records), and the window turns over by one cmpxchg: a job's
 * counts stay exact. Readers on other CPUs take racy snapshots.
 *
 * The fast path, a record of a job in its slot with nothing to report and
 * the ring below the threshold, reads three words and adds to three
 * counters: TCG, where row 2 runs, charges each memory access, so the
 * rest waits for a slow path. Even the ring's fill is looked at only when
 * the window's byte count crosses a sixteenth of the ring (MG_FAIR_CHUNKS):
 * the ring grows only by records written, so it is never more than that
 * past the threshold before the writers know; a writer that finds the hint
 * set looks at the fill itself before it refuses anything.
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
#define MG_FAIR_CHUNKS	16	/* fill checks per window */
#define MG_JOB_LOST_LEN	(MAGNET_RECORD_HEADER + sizeof(struct magnet_job_lost))

/* The threshold in percent of the ring, 0: off (fair.c; the tests' own). */
extern unsigned int mg_fair_fill;

struct mg_fair_job {
	unsigned long id;	/* cgroup v2 id; 0: a free slot (the shared job's) */
	unsigned long epoch;	/* the window it was last seen in; 0: never */
	unsigned long prev;	/* its bytes in the window before that one */
	local_t cur;		/* its bytes in window epoch */
	local_t written;	/* exact counts (magnet/jobs) */
	local_t lost_fair;
	local_t pending;	/* lost_fair not yet in a JOB_LOST record */
	local_t lost_ring;
};

struct mg_fair_cpu {
	int pressed;		/* hint: filled past the threshold at the last check */
	local_t win;		/* bytes written in the current window */
	local_t epoch;		/* its number; starts at 2 */
	local_t act_cur;	/* jobs seen in it */
	local_t act_new;	/* ... of them, not seen in the previous one */
	unsigned long act_prev;	/* jobs seen in the previous one */
	local_t unreported;	/* pending losses of all jobs, orphan's included */
	local_t lost_fair;	/* every job's, for stats: never reset */
	unsigned long orphan_id;	/* a job whose slot went to another ... */
	local_t orphan;		/* ... and its losses still to report */
	struct mg_fair_job shared;	/* interrupts, and jobs without a slot */
	struct mg_fair_job jobs[MG_FAIR_SLOTS];
};

/* What mg_fair_reports() plans: JOB_LOST records in front of a record. */
#define MG_FAIR_OWN	1U	/* the job's own losses */
#define MG_FAIR_ORPHAN	2U	/* those of the job whose slot went */

/* Window numbers 0 and 1 mean "never seen" to every slot. */
static inline void mg_fair_cpu_init(struct mg_fair_cpu *fc)
{
	local_set(&fc->epoch, 2);
}

static __always_inline unsigned int mg_fair_meta(unsigned int plan)
{
	return ((plan & MG_FAIR_OWN) + (plan >> 1)) * (unsigned int)MG_JOB_LOST_LEN;
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

static __always_inline void mg_fair_see(struct mg_fair_cpu *fc, struct mg_fair_job *j)
{
	unsigned long e = local_read(&fc->epoch);

	if (unlikely(READ_ONCE(j->epoch) != e))
		mg_fair_seen(fc, j, e);
}

/*
 * A slot another job may take: free, or its job idle for two windows. One
 * with losses to report only while the orphan holder is empty: they move
 * there, and the next record reports them.
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
		barrier();	/* the id before the count: a nested writer takes both */
		local_set(&fc->orphan, local_read(&j->pending));
	}
	WRITE_ONCE(j->epoch, 0);
	WRITE_ONCE(j->prev, 0);
	local_set(&j->cur, 0);
	local_set(&j->written, 0);
	local_set(&j->lost_fair, 0);
	local_set(&j->pending, 0);
	local_set(&j->lost_ring, 0);
	WRITE_ONCE(j->id, id);
}

/*
 * The slot of job @id, task context only: its hash slot or one of the next
 * MG_FAIR_PROBES - 1, taken if need be; the shared slot if none can be.
 * Bounded work: a slot is never emptied, only handed over, so a job is
 * always found within its MG_FAIR_PROBES.
 */
static __always_inline struct mg_fair_job *mg_fair_find_slow(struct mg_fair_cpu *fc,
							     unsigned long id, unsigned int h)
{
	unsigned long e = local_read(&fc->epoch);
	struct mg_fair_job *j, *take = NULL;
	unsigned int i;

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

static __always_inline struct mg_fair_job *mg_fair_find(struct mg_fair_cpu *fc,
							unsigned long id)
{
	unsigned int h = mg_fair_hash(id);
	struct mg_fair_job *j = &fc->jobs[h];

	if (likely(j->id == id))
		return j;
	return mg_fair_find_slow(fc, id, h);
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
static __always_inline int mg_fair_over(struct mg_fair_cpu *fc, const struct mg_ring *rb,
					struct mg_fair_job *j)
{
	unsigned long size = rb->size, w, n;
	__u64 use;

	n = READ_ONCE(fc->act_prev) + local_read(&fc->act_new);
	if (n < 2)
		return 0;	/* a job alone is never held back */
	w = local_read(&fc->win);
	if (w > size)
		w = size;
	use = (unsigned long)local_read(&j->cur) +
	      (((__u64)READ_ONCE(j->prev) * (size - w)) >> mg_fair_log2(size));
	return use * n > size;
}

/*
 * Whether the ring is filled past the threshold, for the hint. Overwrite
 * mode never is: a flight recorder keeps the newest, whoever wrote it.
 */
static __always_inline int mg_fair_check(const struct mg_ring *rb)
{
	unsigned int fill = READ_ONCE(mg_fair_fill);

	return fill && rb->mode == MG_RING_DISCARD && mg_fair_pressed(rb, fill);
}

/* The hint is set: the rule, on the ring's fill as it is now. */
static __always_inline int mg_fair_refuse(struct mg_fair_cpu *fc, const struct mg_ring *rb,
					  struct mg_fair_job *j)
{
	if (!mg_fair_check(rb)) {
		WRITE_ONCE(fc->pressed, 0);	/* the reader caught up */
		return 0;
	}
	return mg_fair_over(fc, rb, j);
}

/*
 * Before reserving a record of job @id (@intr: the hit's context is an
 * interrupt's, MAGNET_REC_INTR): the
 * job's slot, for mg_fair_reports() and mg_fair_done(); NULL if the rule
 * dropped the record (counted).
 */
static __always_inline struct mg_fair_job *mg_fair_admit(struct mg_fair_cpu *fc,
							 const struct mg_ring *rb,
							 unsigned long id, int intr)
{
	struct mg_fair_job *j = likely(!intr) ? mg_fair_find(fc, id) : &fc->shared;

	/* Seen now, its slot is no idle one a nested writer could take over. */
	mg_fair_see(fc, j);
	if (unlikely(READ_ONCE(fc->pressed)) && mg_fair_refuse(fc, rb, j)) {
		local_inc(&j->lost_fair);
		local_inc(&j->pending);
		local_inc(&fc->lost_fair);
		local_inc(&fc->unreported);
		return NULL;
	}
	return j;
}

/*
 * The JOB_LOST records to write in front of @j's record (MG_FAIR_*; their
 * bytes: mg_fair_meta). None in overwrite mode: a writer could push them
 * out unread. They wait.
 */
static __always_inline unsigned int mg_fair_reports(const struct mg_fair_cpu *fc,
						    const struct mg_ring *rb,
						    const struct mg_fair_job *j)
{
	unsigned int plan = 0;

	if (likely(!local_read(&fc->unreported)) || rb->mode != MG_RING_DISCARD)
		return 0;
	if (local_read(&j->pending))
		plan |= MG_FAIR_OWN;
	if (local_read(&fc->orphan))
		plan |= MG_FAIR_ORPHAN;
	return plan;
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
 * A JOB_LOST record at @r reporting what @count holds for job @id, or
 * padding if a nested writer reported it first. Returns what follows.
 */
static __always_inline struct magnet_record *
mg_fair_report(struct mg_fair_cpu *fc, const struct mg_ring *rb, struct magnet_record *r,
	       const unsigned long *id, local_t *count, __u64 ts)
{
	unsigned long n = mg_fair_take_count(count);

	r->size = MG_JOB_LOST_LEN;
	r->flags = 0;
	r->timestamp = ts;
	if (!n) {
		r->event_id = MAGNET_EVENT_PAD;
	} else {
		local_sub(n, &fc->unreported);
		r->event_id = MAGNET_EVENT_JOB_LOST;
		r->cpu = rb->cpu;
		r->cgroup = (__u32)*id;
		r->abstract_id = *id;
		r->pid = 0;
		r->tgid = 0;
		((struct magnet_job_lost *)r->payload)->fair = n;
	}
	return (struct magnet_record *)((unsigned char *)r + MG_JOB_LOST_LEN);
}

/*
 * The window's count crossed a sixteenth of the ring: the fill hint anew,
 * and a new window once it holds a ring's worth. One writer turns the
 * window over, nested or not: the cmpxchg's.
 */
static __always_inline void mg_fair_chunk(struct mg_fair_cpu *fc, const struct mg_ring *rb)
{
	long w = local_read(&fc->win);

	WRITE_ONCE(fc->pressed, mg_fair_check(rb));
	if (w < (long)rb->size || local_cmpxchg(&fc->win, w, w - rb->size) != w)
		return;
	WRITE_ONCE(fc->act_prev, local_read(&fc->act_cur));
	local_set(&fc->act_cur, 0);
	local_set(&fc->act_new, 0);
	local_inc(&fc->epoch);
}

/*
 * After the ring answered: @rec the record (NULL: the ring lost it), @meta
 * the metadata in front of it, @plan what mg_fair_reports() planned, @len
 * the bytes reserved for both. Writes the JOB_LOST records at @meta and
 * returns what follows them (where a TASK record goes).
 */
static __always_inline struct magnet_record *
mg_fair_done(struct mg_fair_cpu *fc, const struct mg_ring *rb, struct mg_fair_job *j,
	     unsigned int plan, const struct magnet_record *rec, struct magnet_record *meta,
	     unsigned long len)
{
	unsigned long w;

	if (unlikely(!rec)) {
		local_inc(&j->lost_ring);
		return meta;
	}
	if (unlikely(plan)) {
		__u64 ts = meta->timestamp;

		if (plan & MG_FAIR_ORPHAN)
			meta = mg_fair_report(fc, rb, meta, &fc->orphan_id, &fc->orphan, ts);
		if (plan & MG_FAIR_OWN)
			meta = mg_fair_report(fc, rb, meta, &j->id, &j->pending, ts);
	}
	local_inc(&j->written);
	local_add(len, &j->cur);
	w = local_add_return(len, &fc->win);
	/* A count in another sixteenth of the ring: w and w - len differ there. */
	if (unlikely(((w - len) ^ w) >= rb->size / MG_FAIR_CHUNKS))
		mg_fair_chunk(fc, rb);
	return meta;
}

#ifdef MAGNET_KERNEL
/* One job of one CPU's table, as magnet/jobs and JOBS_GET show it. */
struct mg_fair_stat {
	u64 cgroup;
	u64 written;
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
