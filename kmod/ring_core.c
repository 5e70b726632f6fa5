// SPDX-License-Identifier: GPL-2.0
/*
 * magnet ring core: lock-free per-CPU rings of variable-size records.
 *
 * This file compiles in the kernel and in user space (see ring_user.h); the
 * unit tests and the benchmark run exactly this code.
 *
 * THE SHAPE
 * =========
 *
 * Each CPU owns one ring: a power-of-two byte array and four free-running
 * positions (they only grow; position & mask is the offset in the array).
 *
 *        tail               commit            head
 *         |                   |                 |
 *    .....[rec][rec][pad|rec][rec][rec][ in-flight ].......
 *         \_____ readable ______/\_ reserved, being _/
 *                                     written
 *
 *   head     next byte a writer reserves. Moved by local_cmpxchg: only this
 *            CPU writes the ring, so no lock and no bus-locked instruction.
 *   commit   every byte below it belongs to a finished record. Readers on
 *            other CPUs read up to commit and never beyond.
 *   tail     oldest unread byte. The reader advances it; in overwrite mode
 *            a writer may push it too (cmpxchg, the only cross-CPU RMW).
 *
 * Records never wrap: a record that would cross the end of the array is
 * preceded by a padding record (event id 0) that fills the rest of it.
 * Readers skip padding; a reader's copy of a record is therefore always one
 * contiguous memcpy, and a record is never torn across reads.
 *
 * NESTING AND COMMIT ORDER
 * ========================
 *
 * Writers on one CPU do not run concurrently, but they nest: a task-level
 * probe is interrupted by a softirq probe, that by a hardirq probe, that by
 * an NMI probe. The inner writer reserves after the outer one but finishes
 * first:
 *
 *   task:  reserve A ..................................... commit A
 *   irq:              reserve B .. write B .. commit B
 *
 *   ring:  [ A (being written) ][ B (done) ]
 *
 * If B's commit published up to its own end, a reader would read A half
 * written. So, as ftrace's ring buffer does, only the outermost writer
 * publishes: every reservation increments `committing` (and `commits`), and
 * the writer that brings `committing` back from 1 sets commit = head, which
 * then covers A and every record nested inside A. The window where the
 * outermost writer has read head but not yet dropped `committing` is closed
 * by the `commits` re-check: a writer that reserved in that window left the
 * publish to us, and we go around once more.
 *
 * `committing` is also the nesting depth; deeper than MG_RING_NEST_MAX
 * (task, softirq, irq, NMI) means a probe recursed, and the record is lost
 * and counted (reason nesting).
 *
 * LOSSES ARE NEVER SILENT
 * =======================
 *
 * Each loss increments an exact total (stats) and a `pending` count. The
 * next writer that gets room first emits a LOST record with the pending
 * counts, so a reader sees where in the stream records are missing. The
 * pending counts are taken with cmpxchg after the reservation succeeded; if
 * a nested writer reported them meanwhile, the reserved LOST slot becomes
 * padding.
 *
 * METADATA IN FRONT
 * =================
 *
 * A writer may reserve a metadata record (the TASK record naming the task)
 * in front of its record, in the same reservation:
 *
 *   [ pad ][ LOST ][ TASK ][ record ]      one cmpxchg of head, one commit
 *
 * so the record never reaches a reader without it, nor it without the
 * record; a reservation that fails loses the record alone (one event),
 * and an overwrite that pushes out the TASK record pushes out the record
 * after it too.
 * Like LOST records, metadata is no event: not in written, bytes,
 * overwritten or a reader's record count.
 *
 * OVERWRITE (FLIGHT RECORDER)
 * ===========================
 *
 * A writer that finds no room pushes tail forward record by record with
 * cmpxchg, counting what it pushes out (events as overwritten, LOST
 * records folded into the overwritten-LOST counts, TASK records not at
 * all). A reader racing it:
 *
 *   1. snapshots tail and the counters consistently: `pushing` (writers
 *      inside a push) and `push_gen` (bumped when a push ends) bracket the
 *      snapshot like a seqcount;
 *   2. copies records from tail into a private bounce buffer;
 *   3. moves tail with cmpxchg from the snapshot; failure means a writer
 *      pushed (and may have overwritten what we copied): start again.
 *
 * Only bytes behind a tail the reader itself advanced reach user space, and
 * the counter deltas since the last read become a LOST record in front of
 * them: overwritten records are always those between the previous read and
 * this one.
 *
 * MEMORY ORDER
 * ============
 *
 *   writer: fill record; smp_wmb(); commit = head
 *   reader: c = commit; smp_rmb(); read records below c; release tail
 *   writer: acquire tail before reusing the bytes below it (discard mode)
 *
 * IN PLACE
 * ========
 *
 * A discard-mode ring may also be read where it lies (the kernel maps the
 * array read-only into the reader): mg_ring_peek() gives [tail, commit),
 * the reader walks it, skipping padding, and mg_ring_advance() moves tail
 * past what it is done with. Nothing is copied, and nothing changes for
 * writers: LOST and TASK records are in the stream as usual, and the bytes
 * below tail are not reused before the reader gives them back. An
 * overwrite-mode writer may rewrite unread bytes at any time, so only a
 * copy validated after the fact (OVERWRITE above) is safe there.
 *
 * WAKE-UPS
 * ========
 *
 * A writer never wakes anyone itself (it may run in NMI or under the
 * runqueue lock). A reader that is about to sleep arms the ring with its
 * read condition; the outermost writer that publishes past it disarms (one
 * cmpxchg, only when armed) and calls notify, which in the kernel queues an
 * irq_work. One wake-up per crossing, not per record.
 */
#include "ring_core.h"

#ifdef MAGNET_KERNEL
#include <linux/errno.h>
#include <linux/kprobes.h>
#include <linux/processor.h>
#include <linux/string.h>
#else
#include <sched.h>
#define cpu_relax() sched_yield()
#endif

#define RB_ALIGN(x)	\
	(((x) + MAGNET_RECORD_ALIGN - 1) & ~(unsigned long)(MAGNET_RECORD_ALIGN - 1))
#define RB_LOST_LEN	(MAGNET_RECORD_HEADER + sizeof(struct magnet_lost))
#define RB_MIN_RECORD	8UL	/* size + event id: the smallest padding */

static inline struct magnet_record *rb_at(const struct mg_ring *rb, unsigned long pos)
{
	return (struct magnet_record *)(rb->data + (pos & rb->mask));
}

static inline int rb_is_pad(const struct magnet_record *rec)
{
	return rec->event_id == MAGNET_EVENT_PAD;
}

static inline int rb_is_real(const struct magnet_record *rec)
{
	return rec->event_id >= MAGNET_EVENT_FIRST_DYNAMIC;
}

int mg_ring_init(struct mg_ring *rb, void *data, unsigned long size,
		 enum mg_ring_mode mode, unsigned int cpu)
{
	if (size < MG_RING_MIN_SIZE || size > MG_RING_MAX_SIZE || (size & (size - 1)))
		return -EINVAL;
	if (mode != MG_RING_DISCARD && mode != MG_RING_OVERWRITE)
		return -EINVAL;
	memset(rb, 0, sizeof(*rb));
	rb->data = data;
	rb->size = size;
	rb->mask = size - 1;
	rb->mode = mode;
	rb->cpu = cpu;
	/*
	 * Nested writers may hold up to NEST_MAX records in flight; keep the
	 * largest record small enough that an overwriting writer never has to
	 * push tail into bytes that are reserved but not yet committed.
	 */
	rb->max_record = size / (2 * (MG_RING_NEST_MAX + 1));
	if (rb->max_record > RB_ALIGN(MAGNET_RECORD_MAX))
		rb->max_record = RB_ALIGN(MAGNET_RECORD_MAX);
	return 0;
}

void mg_ring_reset(struct mg_ring *rb)
{
	int i;

	local_set(&rb->head, 0);
	local_set(&rb->commit, 0);
	local_set(&rb->committing, 0);
	atomic_long_set(&rb->tail, 0);
	for (i = 0; i < MG_LOST_REASONS; i++)
		local_set(&rb->pending[i], 0);
	rb->seen_overwritten = local_read(&rb->overwritten);
	for (i = 0; i < MG_LOST_REASONS; i++)
		rb->seen_folded[i] = local_read(&rb->folded[i]);
	rb->consumed = local_read(&rb->written) - local_read(&rb->overwritten);
}

static notrace inline void rb_start_commit(struct mg_ring *rb)
{
	local_inc(&rb->committing);
	local_inc(&rb->commits);
}

int mg_ring_wake_due(const struct mg_ring *rb)
{
	unsigned long wb = READ_ONCE(rb->wake_bytes);
	unsigned long wr = READ_ONCE(rb->wake_records);

	if (wb && mg_ring_avail_bytes(rb) >= wb)
		return 1;
	if (wr && mg_ring_avail_records(rb) >= wr)
		return 1;
	if (mg_ring_half_full(rb))
		return 1;
	return !wb && !wr && mg_ring_avail_records(rb);
}

NOKPROBE_SYMBOL(mg_ring_wake_due);

static notrace void rb_end_commit(struct mg_ring *rb)
{
	long commits;

again:
	commits = local_read(&rb->commits);
	barrier();
	if (local_read(&rb->committing) == 1) {
		/*
		 * The records before commit: pairs with the smp_rmb() that
		 * follows each reader's load of commit (rb_consume_discard(),
		 * rb_consume_overwrite()).
		 */
		smp_wmb();
		local_set(&rb->commit, local_read(&rb->head));
	}
	local_dec(&rb->committing);
	barrier();
	if (unlikely(local_read(&rb->commits) != commits) &&
	    !local_read(&rb->committing)) {
		local_inc(&rb->committing);
		goto again;
	}
	if (local_read(&rb->committing))
		return;		/* nested: the outermost writer publishes and checks */
	/*
	 * Pairs with mg_ring_arm(): either the reader sees our commit when it
	 * re-checks after arming, or we see it armed. Without the barrier the
	 * store of commit can pass the load of wake_armed, and both miss.
	 */
	smp_mb();
	if (unlikely(READ_ONCE(rb->wake_armed)) && mg_ring_wake_due(rb) &&
	    cmpxchg(&rb->wake_armed, 1, 0) == 1)
		rb->notify(rb);
}

static notrace void rb_count_loss(struct mg_ring *rb, int reason)
{
	local_inc(&rb->lost[reason]);
	local_inc(&rb->pending[reason]);
}

void notrace mg_ring_lose(struct mg_ring *rb, int reason)
{
	rb_count_loss(rb, reason);
}

NOKPROBE_SYMBOL(mg_ring_lose);

static notrace inline int rb_has_pending(struct mg_ring *rb)
{
	return local_read(&rb->pending[MG_LOST_FULL]) | local_read(&rb->pending[MG_LOST_TOO_BIG]) |
	       local_read(&rb->pending[MG_LOST_NESTING]) |
	       local_read(&rb->pending[MG_LOST_OVERWRITTEN]);
}

static notrace unsigned long rb_take_pending(struct mg_ring *rb, int reason)
{
	long v;

	do {
		v = local_read(&rb->pending[reason]);
	} while (v && local_cmpxchg(&rb->pending[reason], v, 0) != v);
	return v;
}

void mg_ring_unreported(const struct mg_ring *rb, unsigned long lost[MG_LOST_REASONS])
{
	unsigned long pos = atomic_long_read(&rb->tail), c = local_read(&rb->commit);
	int i;

	for (i = 0; i < MG_LOST_REASONS; i++)
		lost[i] = local_read(&rb->pending[i]);
	/* What a resize drops unread: only the events are counted (discarded). */
	while (pos != c) {
		const struct magnet_record *rec = rb_at(rb, pos);

		if (rec->size < RB_MIN_RECORD || rec->size > c - pos)
			break;	/* a corrupt ring: must never happen */
		if (rec->event_id == MAGNET_EVENT_LOST) {
			const struct magnet_lost *l = (const struct magnet_lost *)rec->payload;

			lost[MG_LOST_FULL] += l->full;
			lost[MG_LOST_TOO_BIG] += l->too_big;
			lost[MG_LOST_NESTING] += l->nesting;
			lost[MG_LOST_OVERWRITTEN] += l->overwritten;
		}
		pos += rec->size;
	}
	if (rb->mode != MG_RING_OVERWRITE)
		return;
	/* What rb_consume_overwrite() would have told the next read. */
	lost[MG_LOST_OVERWRITTEN] += local_read(&rb->overwritten) - rb->seen_overwritten;
	for (i = 0; i < MG_LOST_REASONS; i++)
		lost[i] += local_read(&rb->folded[i]) - rb->seen_folded[i];
}

void mg_ring_carry_pending(struct mg_ring *to, const unsigned long lost[MG_LOST_REASONS])
{
	int i;

	for (i = 0; i < MG_LOST_REASONS; i++)
		local_add(lost[i], &to->pending[i]);
}

static notrace void rb_write_pad(struct mg_ring *rb, unsigned long pos, unsigned long len)
{
	struct magnet_record *pad = rb_at(rb, pos);

	pad->size = len;
	pad->event_id = MAGNET_EVENT_PAD;
	pad->flags = 0;
}

/* Called after reserving RB_LOST_LEN at @pos: report pending losses there. */
static notrace void rb_write_lost(struct mg_ring *rb, unsigned long pos, __u64 ts)
{
	struct magnet_record *rec = rb_at(rb, pos);
	struct magnet_lost *lost = (struct magnet_lost *)rec->payload;
	unsigned long full = rb_take_pending(rb, MG_LOST_FULL);
	unsigned long too_big = rb_take_pending(rb, MG_LOST_TOO_BIG);
	unsigned long nesting = rb_take_pending(rb, MG_LOST_NESTING);
	unsigned long overwritten = rb_take_pending(rb, MG_LOST_OVERWRITTEN);

	if (!(full | too_big | nesting | overwritten)) {
		rb_write_pad(rb, pos, RB_LOST_LEN);
		return;
	}
	rec->size = RB_LOST_LEN;
	rec->event_id = MAGNET_EVENT_LOST;
	rec->flags = 0;
	rec->cpu = rb->cpu;
	rec->cgroup = 0;
	rec->abstract_id = 0;
	rec->timestamp = ts;
	rec->pid = 0;
	rec->tgid = 0;
	lost->full = full;
	lost->too_big = too_big;
	lost->nesting = nesting;
	lost->overwritten = overwritten;	/* carried across a resize */
}

/*
 * Overwrite mode: push tail until @need bytes fit behind head @h. Returns 0
 * when there is room, -1 when the only way to make room would eat records
 * that are reserved but not committed (a ring far too small for its nesting).
 */
static notrace int rb_push_tail(struct mg_ring *rb, unsigned long h, unsigned long need)
{
	unsigned long t = atomic_long_read(&rb->tail);
	int unit = 0;	/* a TASK record went: its record goes too */
	int ret = 0;

	if (h + need - t <= rb->size)
		return 0;
	local_inc(&rb->pushing);
	while (unit || h + need - t > rb->size) {
		const struct magnet_record *rec = rb_at(rb, t);
		unsigned long rs = READ_ONCE(rec->size);
		unsigned int id = READ_ONCE(rec->event_id);
		struct magnet_lost lost = { 0 };
		unsigned long seen;

		if (t == (unsigned long)local_read(&rb->commit) ||
		    rs < RB_MIN_RECORD || (rs & (MAGNET_RECORD_ALIGN - 1)) || rs > rb->size) {
			ret = unit ? 0 : -1;	/* committed together: not reached */
			break;
		}
		if (id == MAGNET_EVENT_LOST)
			lost = *(const struct magnet_lost *)rec->payload;
		seen = atomic_long_cmpxchg(&rb->tail, t, t + rs);
		if (seen != t) {	/* the reader (or a nested writer) moved it */
			t = seen;
			unit = 0;	/* a reader that took the TASK record names it */
			continue;
		}
		t += rs;
		/*
		 * Never leave a record without the TASK record naming it: the
		 * event then counts as overwritten, so the reader meets a LOST
		 * record before the thread's next records, and forgets names.
		 */
		unit = id == MAGNET_EVENT_TASK;
		if (id == MAGNET_EVENT_LOST) {
			local_add(lost.full, &rb->folded[MG_LOST_FULL]);
			local_add(lost.too_big, &rb->folded[MG_LOST_TOO_BIG]);
			local_add(lost.nesting, &rb->folded[MG_LOST_NESTING]);
			local_add(lost.overwritten, &rb->folded[MG_LOST_OVERWRITTEN]);
		} else if (id >= MAGNET_EVENT_FIRST_DYNAMIC) {
			local_inc(&rb->overwritten);	/* an event, not a TASK record */
		}
	}
	/*
	 * The pushed tail and the counters before push_gen: pairs with the
	 * smp_rmb() after rb_consume_overwrite() loads push_gen, so a reader
	 * that sees this push ended sees all it did.
	 */
	smp_wmb();
	local_inc(&rb->push_gen);
	local_dec(&rb->pushing);
	return ret;
}

static notrace inline int rb_make_room(struct mg_ring *rb, unsigned long h, unsigned long need)
{
	if (rb->mode == MG_RING_OVERWRITE)
		return rb_push_tail(rb, h, need);
	/*
	 * Acquire: the reader's copy of these bytes is done before we reuse
	 * them. Pairs with the release of tail in rb_consume_discard().
	 */
	if (h + need - (unsigned long)atomic_long_read_acquire(&rb->tail) > rb->size)
		return -1;
	return 0;
}

struct magnet_record *notrace mg_ring_reserve_meta(struct mg_ring *rb, unsigned int len,
						  unsigned int meta_len,
						  struct magnet_record **meta)
{
	unsigned long h, off, pad, need, extra, pos;
	struct magnet_record *rec;
	__u64 ts;

	rb_start_commit(rb);
	if (unlikely(local_read(&rb->committing) > MG_RING_NEST_MAX)) {
		rb_count_loss(rb, MG_LOST_NESTING);
		goto lost;
	}
	len = RB_ALIGN(len);
	if (unlikely(len > rb->max_record || len < MAGNET_RECORD_HEADER)) {
		rb_count_loss(rb, MG_LOST_TOO_BIG);
		goto lost;
	}
	extra = unlikely(rb_has_pending(rb)) ? RB_LOST_LEN : 0;
	need = len + extra + meta_len;
	/*
	 * The timestamp is read before the cmpxchg: a nested writer that
	 * reserves in between moves head, our cmpxchg fails, and we read the
	 * clock again. So buffer order is timestamp order on every CPU.
	 */
	do {
		h = local_read(&rb->head);
		ts = mg_ring_clock();
		off = h & rb->mask;
		pad = off + need > rb->size ? rb->size - off : 0;
		if (unlikely(rb_make_room(rb, h, pad + need))) {
			rb_count_loss(rb, MG_LOST_FULL);
			goto lost;
		}
	} while (local_cmpxchg(&rb->head, h, h + pad + need) != (long)h);

	pos = h;
	if (pad) {
		rb_write_pad(rb, pos, pad);
		pos += pad;
	}
	if (unlikely(extra)) {
		rb_write_lost(rb, pos, ts);
		pos += extra;
	}
	if (meta_len) {
		rec = rb_at(rb, pos);
		*(__u64 *)((unsigned char *)rec + meta_len - 8) = 0;
		rec->size = meta_len;
		rec->timestamp = ts;
		*meta = rec;
		pos += meta_len;
	}
	rec = rb_at(rb, pos);
	/* The caller fills up to its unaligned length: never leak old bytes. */
	*(__u64 *)((unsigned char *)rec + len - 8) = 0;
	rec->size = len;
	rec->timestamp = ts;
	return rec;
lost:
	rb_end_commit(rb);
	return NULL;
}

NOKPROBE_SYMBOL(mg_ring_reserve_meta);

struct magnet_record *notrace mg_ring_reserve(struct mg_ring *rb, unsigned int len)
{
	return mg_ring_reserve_meta(rb, len, 0, NULL);
}

NOKPROBE_SYMBOL(mg_ring_reserve);

void notrace mg_ring_commit(struct mg_ring *rb, struct magnet_record *rec)
{
	local_inc(&rb->written);
	local_add(rec->size, &rb->bytes);
	rb_end_commit(rb);
}

NOKPROBE_SYMBOL(mg_ring_commit);

unsigned long mg_ring_avail_bytes(const struct mg_ring *rb)
{
	return (unsigned long)local_read(&rb->commit) -
	       (unsigned long)atomic_long_read(&rb->tail);
}

NOKPROBE_SYMBOL(mg_ring_avail_bytes);

/*
 * Half the ring is the most a reader may ask to wait for: past it, any read
 * condition holds. A record watermark counts records, whose sizes vary; in
 * overwrite mode one large record pushes out many small ones, so the count
 * can fall, and in discard mode a count the ring cannot hold is never
 * reached while every new record is dropped. Bytes always reach half.
 */
int mg_ring_half_full(const struct mg_ring *rb)
{
	return mg_ring_avail_bytes(rb) >= rb->size / 2;
}

NOKPROBE_SYMBOL(mg_ring_half_full);

unsigned long mg_ring_avail_records(const struct mg_ring *rb)
{
	long n = local_read(&rb->written) - local_read(&rb->overwritten) -
		 (long)READ_ONCE(rb->consumed);

	return n > 0 ? n : 0;
}

NOKPROBE_SYMBOL(mg_ring_avail_records);

void mg_ring_stats(const struct mg_ring *rb, struct mg_ring_stats *st)
{
	st->written = local_read(&rb->written);
	st->bytes = local_read(&rb->bytes);
	st->lost_full = local_read(&rb->lost[MG_LOST_FULL]);
	st->lost_too_big = local_read(&rb->lost[MG_LOST_TOO_BIG]);
	st->lost_nesting = local_read(&rb->lost[MG_LOST_NESTING]);
	st->overwritten = local_read(&rb->overwritten);
	st->discarded = 0;	/* a property of the buffer, not the ring */
}

void mg_ring_arm(struct mg_ring *rb)
{
	WRITE_ONCE(rb->wake_armed, 1);
	/*
	 * Armed before the caller re-checks its condition: pairs with the
	 * smp_mb() in rb_end_commit() between commit and wake_armed.
	 */
	smp_mb();
}

/*
 * Length of the run of whole records from @pos that is contiguous in memory:
 * it ends at padding, at @to, at @max bytes, or where the array wraps (a
 * record that fits exactly at the end is followed by one at offset 0).
 */
static unsigned long rb_run(const struct mg_ring *rb, unsigned long pos, unsigned long to,
			    unsigned long max, unsigned long *records)
{
	unsigned long run = 0;

	*records = 0;
	while (pos + run != to) {
		const struct magnet_record *r = rb_at(rb, pos + run);

		if ((run && !((pos + run) & rb->mask)) || rb_is_pad(r) || run + r->size > max)
			break;
		*records += rb_is_real(r);
		run += r->size;
	}
	return run;
}

static long rb_consume_discard(struct mg_ring *rb, struct mg_reader *rd, unsigned long max)
{
	unsigned long t = atomic_long_read(&rb->tail);
	unsigned long c = local_read(&rb->commit);
	unsigned long pos = t, copied = 0, run, records, left;
	int fault = 0;

	smp_rmb();	/* records below commit: pairs with rb_end_commit()'s smp_wmb() */
	rd->records = 0;
	while (pos != c) {
		const struct magnet_record *rec = rb_at(rb, pos);

		if (rb_is_pad(rec)) {
			pos += rec->size;
			continue;
		}
		run = rb_run(rb, pos, c, max - copied, &records);
		if (!run)
			break;	/* the next record does not fit in @max */
		left = rd->copy(rd->ctx, rec, run);
		if (left) {
			/* Keep the records that arrived whole; the rest stays. */
			unsigned long whole = 0;

			while (whole + rb_at(rb, pos + whole)->size <= run - left) {
				rd->records += rb_is_real(rb_at(rb, pos + whole));
				whole += rb_at(rb, pos + whole)->size;
			}
			copied += whole;
			pos += whole;
			fault = 1;
			break;
		}
		copied += run;
		rd->records += records;
		pos += run;
	}
	/*
	 * Release: our copies are done before the writer may reuse the bytes.
	 * Pairs with the acquire of tail in rb_make_room().
	 */
	if (pos != t)
		atomic_long_set_release(&rb->tail, pos);
	rb->consumed += rd->records;
	if (copied)
		return copied;
	if (fault)
		return -EFAULT;
	return pos == c ? 0 : -EINVAL;
}

static long rb_consume_overwrite(struct mg_ring *rb, struct mg_reader *rd, unsigned long max)
{
	unsigned long t, c, end, rs, bytes, records, gen, ovr, folded[MG_LOST_REASONS];
	unsigned char *dst = rd->bounce, *last = NULL;
	struct magnet_record *lost;
	unsigned long lost_len = 0;
	unsigned int tries = 0;
	int i;

	if (max > rd->bounce_size)
		max = rd->bounce_size;
	rd->records = 0;
retry:
	/*
	 * A writer pushing on another CPU voids each attempt; the caller holds
	 * its read lock meanwhile, so give up after a bounded number of
	 * tries and let it reschedule (and see signals) before coming back.
	 */
	if (tries++ >= MG_RING_READ_TRIES)
		return -EAGAIN;
	/* 1. tail and the push counters, consistently (see OVERWRITE). */
	for (;;) {
		gen = local_read(&rb->push_gen);
		/* push_gen before the snapshot: pairs with rb_push_tail()'s smp_wmb() */
		smp_rmb();
		t = atomic_long_read(&rb->tail);
		ovr = local_read(&rb->overwritten);
		for (i = 0; i < MG_LOST_REASONS; i++)
			folded[i] = local_read(&rb->folded[i]);
		/*
		 * The snapshot before pushing and push_gen again: pairs with the
		 * fully ordered tail cmpxchg in rb_push_tail(), which follows its
		 * increment of pushing and precedes its counter updates.
		 */
		smp_rmb();
		if (!local_read(&rb->pushing) && local_read(&rb->push_gen) == (long)gen)
			break;
		if (tries++ >= MG_RING_READ_TRIES)
			return -EAGAIN;
		cpu_relax();
	}
	c = local_read(&rb->commit);
	smp_rmb();	/* records below commit: pairs with rb_end_commit()'s smp_wmb() */

	/* Losses since the last read go in front, as one LOST record. */
	lost_len = 0;
	if (ovr != rb->seen_overwritten)
		lost_len = RB_LOST_LEN;
	for (i = 0; i < MG_LOST_REASONS; i++)
		if (folded[i] != rb->seen_folded[i])
			lost_len = RB_LOST_LEN;
	if (lost_len && max < lost_len + RB_MIN_RECORD)
		return -EINVAL;

	/*
	 * 2. copy into the bounce buffer. The writer may be overwriting what
	 * we read, so each size is read once, checked, and used for the copy;
	 * anything odd means a push is under way: start again.
	 */
	bytes = 0;
	records = 0;
	last = NULL;
	for (end = t; end != c; end += rs) {
		const struct magnet_record *rec = rb_at(rb, end);
		unsigned int id;

		rs = READ_ONCE(rec->size);
		id = READ_ONCE(rec->event_id);
		if (rs < RB_MIN_RECORD || (rs & (MAGNET_RECORD_ALIGN - 1)) ||
		    rs > c - end || (end & rb->mask) + rs > rb->size) {
			if (atomic_long_read(&rb->tail) == (long)t && !local_read(&rb->pushing))
				return -EIO;	/* a corrupt ring: must never happen */
			cpu_relax();
			goto retry;
		}
		if (id == MAGNET_EVENT_PAD)
			continue;
		if (lost_len + bytes + rs > max)
			break;
		memcpy(dst + lost_len + bytes, rec, rs);
		last = dst + lost_len + bytes;
		bytes += rs;
		records += id >= MAGNET_EVENT_FIRST_DYNAMIC;
	}
	if (end == t && !lost_len)
		return t == c ? 0 : -EINVAL;

	/* 3. claim exactly what we copied; a push in between voids it. */
	if (atomic_long_cmpxchg(&rb->tail, t, end) != (long)t)
		goto retry;

	if (lost_len) {
		lost = (struct magnet_record *)dst;
		memset(lost, 0, lost_len);
		lost->size = lost_len;
		lost->event_id = MAGNET_EVENT_LOST;
		lost->cpu = rb->cpu;
		/*
		 * Not the clock: a record reserved before now may still be
		 * committed after this read, and must not appear to go back
		 * in time. The last timestamp handed out bounds both sides.
		 */
		lost->timestamp = bytes ? ((struct magnet_record *)(dst + lost_len))->timestamp :
				  rb->seen_ts;
		((struct magnet_lost *)lost->payload)->full = folded[MG_LOST_FULL] -
			rb->seen_folded[MG_LOST_FULL];
		((struct magnet_lost *)lost->payload)->too_big = folded[MG_LOST_TOO_BIG] -
			rb->seen_folded[MG_LOST_TOO_BIG];
		((struct magnet_lost *)lost->payload)->nesting = folded[MG_LOST_NESTING] -
			rb->seen_folded[MG_LOST_NESTING];
		((struct magnet_lost *)lost->payload)->overwritten = ovr - rb->seen_overwritten +
			folded[MG_LOST_OVERWRITTEN] - rb->seen_folded[MG_LOST_OVERWRITTEN];
		rb->seen_overwritten = ovr;
		for (i = 0; i < MG_LOST_REASONS; i++)
			rb->seen_folded[i] = folded[i];
	}
	if (last)
		rb->seen_ts = ((struct magnet_record *)last)->timestamp;
	rb->consumed += records;
	rd->records = records;
	if (rd->copy(rd->ctx, dst, lost_len + bytes))
		return -EFAULT;	/* the records are gone: the caller's buffer was bad */
	return lost_len + bytes;
}

unsigned long mg_ring_peek(const struct mg_ring *rb, unsigned long *tail)
{
	unsigned long c = local_read(&rb->commit);

	*tail = atomic_long_read(&rb->tail);
	smp_rmb();	/* records below commit: pairs with rb_end_commit()'s smp_wmb() */
	return c;
}

long mg_ring_advance(struct mg_ring *rb, unsigned long from, unsigned long len)
{
	unsigned long t = atomic_long_read(&rb->tail);
	unsigned long c = local_read(&rb->commit);
	unsigned long pos = t, records = 0;

	if (rb->mode != MG_RING_DISCARD)
		return -EINVAL;
	if (len && from != t)
		return -ESTALE;
	if (len > c - t)
		return -EINVAL;
	smp_rmb();	/* the sizes below commit are final */
	/* Walk the sizes: a tail inside a record would corrupt the stream. */
	while (pos - t < len) {
		const struct magnet_record *rec = rb_at(rb, pos);
		unsigned int rs = rec->size;

		/* A corrupt ring (must never happen): stop before a bad read. */
		if (rs < RB_MIN_RECORD || (rs & (MAGNET_RECORD_ALIGN - 1)) ||
		    rs > c - pos || (pos & rb->mask) + rs > rb->size)
			return -EIO;
		records += rb_is_real(rec);
		pos += rs;
	}
	if (pos - t != len)
		return -EINVAL;
	/* The reader is done with the bytes: pairs with rb_make_room(). */
	if (len)
		atomic_long_set_release(&rb->tail, pos);
	rb->consumed += records;
	return records;
}

long mg_ring_consume(struct mg_ring *rb, struct mg_reader *rd, unsigned long max)
{
	if (rb->mode == MG_RING_OVERWRITE)
		return rb_consume_overwrite(rb, rd, max);
	return rb_consume_discard(rb, rd, max);
}
