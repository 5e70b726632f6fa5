// SPDX-License-Identifier: GPL-2.0
/*
 * Per-CPU rings: allocation, resize, the record writer and the deferred
 * wake-up. The ring algorithm itself is in ring_core.c.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cgroup.h>
#include <linux/cpu.h>
#include <linux/kprobes.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/vmalloc.h>
#include <asm/msr.h>
#include "buffer.h"
#include "fs.h"

#define MG_TASK_RECORD_LEN	(MAGNET_RECORD_HEADER + sizeof(struct magnet_task))

struct mg_cpu_buf **mg_bufs;
enum mg_clock mg_clock = MG_CLOCK_MONO;
static unsigned long mg_size;
static enum mg_ring_mode mg_mode;
static DEFINE_MUTEX(mg_resize_lock);	/* module parameters vs netlink */

u64 notrace mg_ring_clock(void)
{
	if (mg_clock == MG_CLOCK_TSC)
		return rdtsc();
	return ktime_get_mono_fast_ns();
}

NOKPROBE_SYMBOL(mg_ring_clock);

/* From a writer, maybe in NMI: only queue the irq_work. */
static void notrace mg_notify(struct mg_ring *rb)
{
	irq_work_queue(&mg_bufs[rb->cpu]->wake_work);
}

NOKPROBE_SYMBOL(mg_notify);

static struct mg_ring *mg_ring_alloc(unsigned int cpu, unsigned long size,
				     enum mg_ring_mode mode)
{
	struct mg_ring *rb;
	void *data;

	rb = kzalloc_node(sizeof(*rb), GFP_KERNEL, cpu_to_node(cpu));
	if (!rb)
		return NULL;
	/*
	 * On the CPU's own node; zeroed, since a reader may map the whole
	 * array (fs.c), bytes no record has covered yet included.
	 */
	data = vzalloc_node(size, cpu_to_node(cpu));
	if (!data)
		goto err_data;
	if (mg_ring_init(rb, data, size, mode, cpu))
		goto err_init;
	rb->notify = mg_notify;
	rb->task_gen = 1;
	return rb;

err_init:
	vfree(data);
err_data:
	kfree(rb);
	return NULL;
}

static void mg_ring_free(struct mg_ring *rb)
{
	if (!rb)
		return;
	vfree(rb->data);
	kfree(rb);
}

static void mg_stats_add(struct mg_ring_stats *to, const struct mg_ring_stats *from)
{
	to->written += from->written;
	to->bytes += from->bytes;
	to->lost_full += from->lost_full;
	to->lost_too_big += from->lost_too_big;
	to->lost_nesting += from->lost_nesting;
	to->overwritten += from->overwritten;
	to->discarded += from->discarded;
}

/*
 * A resize holds mg_resize_lock from the swap until the old rings' counts
 * are in base: taking it here keeps every counter monotonic.
 */
void mg_buffer_stats(struct mg_cpu_buf *buf, struct mg_ring_stats *st)
{
	struct mg_ring_stats now;

	mutex_lock(&mg_resize_lock);
	mg_ring_stats(rcu_dereference_protected(buf->ring, lockdep_is_held(&mg_resize_lock)),
		      &now);
	*st = buf->base;
	mutex_unlock(&mg_resize_lock);
	mg_stats_add(st, &now);
}

/* The next TASK slot generation after @gen: never 0, which marks a torn slot. */
static unsigned int mg_task_gen_next(unsigned int gen)
{
	return gen + 1 ?: 1;
}

/*
 * A reader that has not seen the TASK records already written must meet
 * them again: writers compare the ring's task_gen before trusting a slot.
 * Call with the reader slot held (no resize meanwhile).
 */
void mg_buffer_forget_tasks(struct mg_cpu_buf *buf)
{
	struct mg_ring *rb = rcu_dereference_protected(buf->ring, atomic_read(&buf->reader));

	WRITE_ONCE(rb->task_gen, mg_task_gen_next(READ_ONCE(rb->task_gen)));
}

struct mg_carry {
	struct mg_ring *to;
	unsigned long lost[MG_LOST_REASONS];
};

static void mg_carry_pending(void *arg)
{
	struct mg_carry *c = arg;

	mg_ring_carry_pending(c->to, c->lost);
}

/*
 * JOB_LOST records left unread in a ring being replaced: their counts go
 * back to their jobs' pending losses, so that the new ring reports them
 * again (losses are never silent, the fairness rule's neither). Merged by
 * job; past MG_FAIR_ENTRIES jobs, the rest go to the shared job (id 0).
 */
struct mg_job_carry {
	struct mg_fair_cpu *fc;
	unsigned int n;
	struct {
		u64 id;
		unsigned long lost;
	} job[MG_FAIR_ENTRIES];
};

static void mg_job_lost_unread(const struct mg_ring *rb, struct mg_job_carry *jc)
{
	unsigned long pos = atomic_long_read(&rb->tail), c = local_read(&rb->commit);
	unsigned int i;

	jc->n = 0;
	while (pos != c) {
		const struct magnet_record *rec = (const void *)(rb->data + (pos & rb->mask));
		u64 id;

		if (rec->size < 8 || rec->size > c - pos)
			break;	/* a corrupt ring: must never happen */
		pos += rec->size;
		if (rec->event_id != MAGNET_EVENT_JOB_LOST)
			continue;
		id = rec->abstract_id;
		for (i = 0; i < jc->n && jc->job[i].id != id; i++)
			;
		/* The last entry is kept for the shared job. */
		if (i == jc->n && jc->n == ARRAY_SIZE(jc->job) - 1)
			for (id = 0, i = 0; i < jc->n && jc->job[i].id; i++)
				;
		if (i == jc->n) {
			jc->job[i].id = id;
			jc->job[i].lost = 0;
			jc->n++;
		}
		jc->job[i].lost += ((const struct magnet_job_lost *)rec->payload)->fair;
	}
}

/*
 * On the CPU, preemption off: a task-context writer of the table, as the
 * record writer is (fair.h: only those look up and take slots).
 */
static long mg_job_carry_pending(void *arg)
{
	struct mg_job_carry *jc = arg;
	struct mg_fair_job *j;
	unsigned int i;

	preempt_disable();
	for (i = 0; i < jc->n; i++) {
		j = jc->job[i].id ? mg_fair_find(jc->fc, jc->job[i].id) : &jc->fc->shared;
		local_add(jc->job[i].lost, &j->pending);
		local_add(jc->job[i].lost, &jc->fc->unreported);
	}
	preempt_enable();
	return 0;
}

unsigned long mg_buffers_size(void)
{
	return mg_size;
}

enum mg_ring_mode mg_buffers_mode(void)
{
	return mg_mode;
}

/*
 * Rings larger than the machine can give would fail deep in vmalloc with a
 * warning: refuse them first. Half of RAM is the most all rings may take.
 */
static bool mg_size_fits(unsigned long size)
{
	return (u64)size * num_possible_cpus() <= ((u64)totalram_pages() << PAGE_SHIFT) / 2;
}

/*
 * Replace every ring (new size or mode; size 0 or mode -1 keep the current
 * one). Refused while any CPU has a reader: the reader would lose its
 * place. Buffered records are dropped; the counters carry over, and so do
 * the losses no reader was told of.
 */
int mg_buffers_resize(unsigned long size, int mode)
{
	struct mg_job_carry *jc = NULL;
	struct mg_ring **fresh;
	unsigned int cpu, held = 0;
	int ret = 0;

	mutex_lock(&mg_resize_lock);
	if (!size)
		size = mg_size;
	if (mode < 0)
		mode = mg_mode;
	if (size < MG_RING_MIN_SIZE || size > MG_RING_MAX_SIZE || !is_power_of_2(size) ||
	    (mode != MG_RING_DISCARD && mode != MG_RING_OVERWRITE)) {
		ret = -EINVAL;
		goto out_unlock;
	}
	if (!mg_size_fits(size)) {
		ret = -ENOMEM;
		goto out_unlock;
	}
	if (size == mg_size && mode == mg_mode)
		goto out_unlock;
	fresh = kcalloc(nr_cpu_ids, sizeof(*fresh), GFP_KERNEL);
	if (!fresh) {
		ret = -ENOMEM;
		goto out_unlock;
	}
	jc = kmalloc(sizeof(*jc), GFP_KERNEL);
	if (!jc) {
		ret = -ENOMEM;
		goto out_release;
	}
	/* Hold every reader slot so no open() slips in during the swap. */
	for_each_possible_cpu(cpu) {
		if (atomic_cmpxchg(&mg_bufs[cpu]->reader, 0, 1)) {
			ret = -EBUSY;
			goto out_release;
		}
		held = cpu + 1;
	}
	for_each_possible_cpu(cpu) {
		fresh[cpu] = mg_ring_alloc(cpu, size, mode);
		if (!fresh[cpu]) {
			ret = -ENOMEM;
			goto out_free;
		}
	}
	/*
	 * A new ring forgets every TASK slot: its generation is past any the
	 * old ring gave out, before a writer can see it (writers that find the
	 * new ring right after the swap must name their tasks in it).
	 */
	for_each_possible_cpu(cpu) {
		struct mg_ring *old = rcu_dereference_protected(mg_bufs[cpu]->ring, true);

		fresh[cpu]->task_gen = mg_task_gen_next(old->task_gen);
		fresh[cpu] = rcu_replace_pointer(mg_bufs[cpu]->ring, fresh[cpu], true);
	}
	/*
	 * Writers run with preemption off, and only where RCU is watching
	 * (mg_handler_enter()): this waits for all of them.
	 */
	synchronize_rcu();
	/*
	 * Losses no reader was told of move to the new ring, whose next
	 * record reports them; its writers run on its CPU, so the add runs
	 * there too (local_t is only safe on its own CPU). Unread records go
	 * with the old ring: they are counted as discarded.
	 */
	cpus_read_lock();
	for_each_possible_cpu(cpu) {
		struct mg_carry c = {
			.to = rcu_dereference_protected(mg_bufs[cpu]->ring, true),
		};
		struct mg_ring_stats old;

		mg_ring_unreported(fresh[cpu], c.lost);
		if (!cpu_online(cpu) || smp_call_function_single(cpu, mg_carry_pending, &c, 1))
			mg_carry_pending(&c);	/* offline: no writer runs there */
		jc->fc = &mg_bufs[cpu]->fair;
		mg_job_lost_unread(fresh[cpu], jc);
		if (jc->n && (!cpu_online(cpu) || work_on_cpu(cpu, mg_job_carry_pending, jc)))
			mg_job_carry_pending(jc);
		irq_work_sync(&mg_bufs[cpu]->wake_work);
		mg_ring_stats(fresh[cpu], &old);
		old.discarded += mg_ring_avail_records(fresh[cpu]);
		mg_stats_add(&mg_bufs[cpu]->base, &old);
	}
	cpus_read_unlock();
	mg_size = size;
	mg_mode = mode;
out_free:
	for_each_possible_cpu(cpu)
		mg_ring_free(fresh[cpu]);
out_release:
	for_each_possible_cpu(cpu) {
		if (cpu >= held)
			break;
		atomic_set(&mg_bufs[cpu]->reader, 0);
	}
	kfree(jc);
	kfree(fresh);
out_unlock:
	mutex_unlock(&mg_resize_lock);
	return ret;
}

int mg_buffers_init(unsigned long size, enum mg_ring_mode mode)
{
	unsigned int cpu;

	if (size < MG_RING_MIN_SIZE || size > MG_RING_MAX_SIZE || !is_power_of_2(size)) {
		pr_err("buf_size=%lu: must be a power of two from %lu to %lu\n",
		       size, MG_RING_MIN_SIZE, MG_RING_MAX_SIZE);
		return -EINVAL;
	}
	if (!mg_size_fits(size)) {
		pr_err("buf_size=%lu: %u rings would take more than half of memory\n",
		       size, num_possible_cpus());
		return -ENOMEM;
	}
	mg_bufs = kcalloc(nr_cpu_ids, sizeof(*mg_bufs), GFP_KERNEL);
	if (!mg_bufs)
		return -ENOMEM;
	for_each_possible_cpu(cpu) {
		struct mg_cpu_buf *buf;
		struct mg_ring *rb;

		buf = kzalloc_node(sizeof(*buf), GFP_KERNEL, cpu_to_node(cpu));
		if (!buf)
			goto err;
		mg_bufs[cpu] = buf;
		buf->cpu = cpu;
		mg_fair_cpu_init(&buf->fair);
		mg_fs_buf_init(buf);
		rb = mg_ring_alloc(cpu, size, mode);
		if (!rb)
			goto err;
		RCU_INIT_POINTER(buf->ring, rb);
	}
	mg_size = size;
	mg_mode = mode;
	return 0;
err:
	mg_buffers_exit();
	return -ENOMEM;
}

void mg_buffers_exit(void)
{
	unsigned int cpu;

	if (!mg_bufs)
		return;
	for_each_possible_cpu(cpu) {
		struct mg_cpu_buf *buf = mg_bufs[cpu];

		if (!buf)
			continue;
		irq_work_sync(&buf->wake_work);
		mg_ring_free(rcu_dereference_protected(buf->ring, 1));
		kfree(buf);
	}
	kfree(mg_bufs);
	mg_bufs = NULL;
}

/*
 * TASK records (UAPI: TASK RECORDS) give the command name and the owner
 * (uid, euid) behind a pid. One per record would cost 24 bytes each; a
 * table the reader looks up later (ftrace's saved_cmdlines) forgets tasks
 * that came and went. So a task is named in a CPU's stream just before its
 * first record there, and again after it renames itself (exec, prctl) or
 * changes its uids (setuid: magnetd decides by them who may read its
 * records), or when the reader may have
 * missed its TASK record: each CPU remembers the last MG_TASK_SLOTS tasks
 * it named, and forgets them when a reader opens the ring, on a resize
 * and, in overwrite mode, once the TASK record is no longer in the ring.
 * The TASK record shares the record's reservation (mg_ring_reserve_meta):
 * no record reaches a reader unnamed because its TASK record was lost.
 *
 * Writers nested on this CPU (interrupts, NMI) run on behalf of the same
 * current task, so a slot is only ever rewritten with the same pid while
 * it is torn; an empty gen while it is makes the worst case one more TASK
 * record.
 */

/* What a TASK record says of a task besides its pid: name and owner. */
struct mg_task_id {
	u64 comm[2];
	u64 uids;	/* uid | euid << 32 */
};

static __always_inline void mg_task_id_of(struct task_struct *tsk, struct mg_task_id *id)
{
	/*
	 * Only current is ever named, and a task's own cred needs no RCU
	 * (commit_creds() frees the old one after a grace period, and we run
	 * with preemption off). kuid values are those of the initial user
	 * namespace: what magnetd compares its clients' uids with.
	 */
	const struct cred *cred = current_cred();

	BUILD_BUG_ON(sizeof(tsk->comm) != 2 * sizeof(u64) ||
		     sizeof(((struct magnet_task *)NULL)->comm) != 2 * sizeof(u64));
	memcpy(id->comm, tsk->comm, 2 * sizeof(u64));	/* may race a rename: harmless */
	id->uids = __kuid_val(cred->uid) | (u64)__kuid_val(cred->euid) << 32;
}

static __always_inline struct mg_task_slot *
mg_task_unnamed(struct mg_cpu_buf *buf, struct mg_ring *rb, struct task_struct *tsk,
		struct mg_task_id *id, unsigned int *gen)
{
	struct mg_task_slot *slot = &buf->tasks[tsk->pid % MG_TASK_SLOTS];

	mg_task_id_of(tsk, id);
	*gen = READ_ONCE(rb->task_gen);
	if (READ_ONCE(slot->gen) == *gen && slot->pid == tsk->pid &&
	    slot->comm[0] == id->comm[0] && slot->comm[1] == id->comm[1] &&
	    slot->uids == id->uids &&
	    (rb->mode == MG_RING_DISCARD || mg_ring_unread(rb, slot->pos)))
		return NULL;
	return slot;
}

static __always_inline void
mg_task_name(struct mg_ring *rb, struct mg_task_slot *slot, unsigned int gen,
	     struct magnet_record *rec, struct task_struct *tsk, const struct mg_task_id *id,
	     u64 cgroup, u64 ts)
{
	struct magnet_task *t = (struct magnet_task *)rec->payload;

	rec->size = MG_TASK_RECORD_LEN;	/* JOB_LOST records may share the metadata */
	rec->timestamp = ts;
	rec->event_id = MAGNET_EVENT_TASK;
	rec->flags = 0;
	rec->cpu = rb->cpu;
	rec->cgroup = (u32)cgroup;
	rec->abstract_id = cgroup;
	rec->pid = tsk->pid;
	rec->tgid = tsk->tgid;
	memcpy(t->comm, id->comm, 2 * sizeof(u64));
	t->uid = (u32)id->uids;
	t->euid = id->uids >> 32;

	WRITE_ONCE(slot->gen, 0);
	barrier();	/* empty while torn: a nested writer never trusts it */
	slot->pid = tsk->pid;
	slot->comm[0] = id->comm[0];
	slot->comm[1] = id->comm[1];
	slot->uids = id->uids;
	slot->pos = mg_ring_pos(rb, rec);
	barrier();
	WRITE_ONCE(slot->gen, gen);
}

/* The task's cgroup v2 id; see JOBS in the UAPI header. */
static __always_inline u64 mg_task_cgroup(struct task_struct *tsk)
{
	/* Preemption is off: an RCU-sched read side, as task_css_set() accepts. */
	return cgroup_id(task_dfl_cgroup(tsk));
}

struct magnet_record *notrace magnet_reserve(struct mg_ring **rbp, u16 event_id, u16 flags,
					     u64 abstract_id, u32 payload_len)
{
	struct mg_cpu_buf *buf = mg_bufs[smp_processor_id()];
	struct mg_ring *rb = rcu_dereference_sched(buf->ring);
	struct magnet_record *rec, *meta = NULL;
	struct task_struct *tsk = current;
	unsigned int gen, meta_len, plan;
	struct mg_task_slot *slot;
	struct mg_fair_job *job;
	struct mg_task_id id;
	u64 cgroup;

	*rbp = rb;
	if (unlikely(payload_len > MAGNET_PAYLOAD_MAX)) {
		mg_ring_lose(rb, MG_LOST_TOO_BIG);
		return NULL;
	}
	cgroup = mg_task_cgroup(tsk);
	/* The caller knows the hit's context (a trapping kprobe runs in int3). */
	job = mg_fair_admit(&buf->fair, rb, cgroup, flags & MAGNET_REC_INTR);
	if (unlikely(!job))
		return NULL;	/* over its share of a filling ring: counted */
	plan = mg_fair_reports(&buf->fair, rb, job);
	slot = mg_task_unnamed(buf, rb, tsk, &id, &gen);
	meta_len = mg_fair_meta(plan) + (slot ? MG_TASK_RECORD_LEN : 0);
	rec = mg_ring_reserve_meta(rb, MAGNET_RECORD_HEADER + payload_len, meta_len, &meta);
	/* [JOB_LOST ...][TASK][record]: the TASK record after the losses */
	meta = mg_fair_done(&buf->fair, rb, job, plan, rec, meta,
			    ALIGN(MAGNET_RECORD_HEADER + payload_len, MAGNET_RECORD_ALIGN) +
			    meta_len);
	if (unlikely(!rec))
		return NULL;
	if (slot)
		mg_task_name(rb, slot, gen, meta, tsk, &id, cgroup, rec->timestamp);
	rec->event_id = event_id;
	rec->flags = flags;
	rec->cpu = rb->cpu;
	rec->cgroup = (u32)cgroup;
	rec->abstract_id = abstract_id;
	rec->pid = tsk->pid;
	rec->tgid = tsk->tgid;
	return rec;
}

NOKPROBE_SYMBOL(magnet_reserve);
