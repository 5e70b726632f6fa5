/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The magnet ring: one lock-free, variable-size record ring per CPU.
 * The algorithm and its invariants are described at the top of ring_core.c.
 *
 * This header and ring_core.c compile both in the kernel (MAGNET_KERNEL)
 * and in user space (ring_user.h), so the unit tests and the benchmark
 * exercise the very code the module runs.
 */
#ifndef _MAGNET_RING_CORE_H
#define _MAGNET_RING_CORE_H

#ifdef MAGNET_KERNEL
#include <linux/types.h>
#include <linux/compiler.h>
#include <linux/atomic.h>
#include <asm/local.h>
#else
#include "ring_user.h"
#endif
#include <linux/magnet.h>

enum mg_ring_mode {
	MG_RING_DISCARD = MAGNET_BUFFER_DISCARD,	/* a full ring drops the new record */
	MG_RING_OVERWRITE = MAGNET_BUFFER_OVERWRITE,	/* ... or the oldest records */
};

#define MG_RING_MIN_SIZE	MAGNET_BUFFER_SIZE_MIN
#define MG_RING_MAX_SIZE	MAGNET_BUFFER_SIZE_MAX
/* Task, softirq, hardirq, NMI: deeper nesting means a probe recursed. */
#define MG_RING_NEST_MAX	4
/* Overwrite-mode reads voided by pushing writers before -EAGAIN. */
#define MG_RING_READ_TRIES	64

/* Exact per-ring counters, a snapshot of which mg_ring_stats() returns. */
struct mg_ring_stats {
	unsigned long written;		/* records committed */
	unsigned long bytes;		/* their bytes, headers included */
	unsigned long lost_full;
	unsigned long lost_too_big;
	unsigned long lost_nesting;
	unsigned long overwritten;	/* records replaced before being read */
	unsigned long discarded;	/* unread records dropped by a resize */
};

/*
 * Loss reasons, as in struct magnet_lost. A writer loses records for the
 * first three; overwritten ones are counted apart (overwritten), and
 * pending/folded carry them only across a resize (mg_ring_carry_pending).
 */
enum { MG_LOST_FULL, MG_LOST_TOO_BIG, MG_LOST_NESTING, MG_LOST_OVERWRITTEN, MG_LOST_REASONS };

struct mg_ring {
	/* Written only by this CPU's (possibly nested) writers. */
	local_t head;		/* next byte to reserve, free-running */
	local_t commit;		/* [tail, commit) is whole, readable records */
	local_t committing;	/* writers between reserve and end of commit */
	local_t commits;	/* every reservation bumps it: publish re-check */
	local_t written;
	local_t bytes;
	local_t lost[3];	/* MG_LOST_FULL, _TOO_BIG, _NESTING: totals */
	/* Losses not yet reported in a LOST record; _OVERWRITTEN: carried. */
	local_t pending[MG_LOST_REASONS];
	/* Overwrite mode: pushes of the tail by the writer, see "Overwrite". */
	local_t pushing;	/* writers inside a push */
	local_t push_gen;	/* bumped after each push completes */
	local_t overwritten;	/* real records pushed out */
	local_t folded[MG_LOST_REASONS];	/* counts of LOST records pushed out */

	/* Shared with the reader. */
	atomic_long_t tail;	/* oldest unread byte */
	unsigned long consumed;	/* records handed to the reader (reader only) */
	int wake_armed;		/* reader sleeps: notify when due */
	unsigned long wake_bytes;
	unsigned long wake_records;
	void (*notify)(struct mg_ring *rb);

	/* Reader-private overwrite bookkeeping: what it already reported. */
	unsigned long seen_overwritten;
	unsigned long seen_folded[MG_LOST_REASONS];
	__u64 seen_ts;		/* timestamp of the last record handed out */

	/* Immutable after mg_ring_init(). */
	unsigned char *data;
	unsigned long size;
	unsigned long mask;
	unsigned long max_record;
	enum mg_ring_mode mode;
	unsigned int cpu;

	/* The includer's: the kernel's TASK record slots (buffer.c). */
	unsigned int task_gen;
};

int mg_ring_init(struct mg_ring *rb, void *data, unsigned long size,
		 enum mg_ring_mode mode, unsigned int cpu);

/*
 * The record clock, provided by the includer (buffer.c in the kernel, the
 * tests and bench in user space). The ring stamps records itself, inside
 * the reservation, so timestamps never go back along a CPU's stream.
 */
__u64 mg_ring_clock(void);

/*
 * Writer API. Call on the ring of the CPU you run on, with preemption
 * disabled (any context, NMI included). reserve returns the record's
 * memory with the header's size and timestamp fields written, or NULL if the record was
 * lost (and counted); after a non-NULL reserve, fill the record and call
 * commit. Nothing here sleeps, spins or takes a lock.
 */
struct magnet_record *mg_ring_reserve(struct mg_ring *rb, unsigned int len);
/*
 * The same, with a metadata record of @meta_len bytes (a multiple of 8;
 * a TASK record) in front of the record, in the same reservation: both are
 * written or neither, and the commit of the record publishes both. *@meta
 * gets its memory with size and timestamp written. Like LOST records, a
 * metadata record is not counted in written, bytes or overwritten (it is
 * not an event), nor by a reader's records.
 */
struct magnet_record *mg_ring_reserve_meta(struct mg_ring *rb, unsigned int len,
					   unsigned int meta_len,
					   struct magnet_record **meta);
void mg_ring_commit(struct mg_ring *rb, struct magnet_record *rec);
/*
 * The free-running position of @rec, reserved on @rb by this CPU less than
 * a ring's worth of reservations ago; and whether the record at @pos is
 * still unread (neither consumed nor overwritten).
 */
static inline unsigned long mg_ring_pos(struct mg_ring *rb, const void *rec)
{
	unsigned long head = local_read(&rb->head);

	return head - ((head - ((const unsigned char *)rec - rb->data)) & rb->mask);
}

static inline int mg_ring_unread(struct mg_ring *rb, unsigned long pos)
{
	return (long)(pos - (unsigned long)atomic_long_read(&rb->tail)) >= 0;
}

/* Count a loss that never reached reserve (e.g. a too-big payload). */
void mg_ring_lose(struct mg_ring *rb, int reason);

/*
 * Reader API. One reader at a time per ring; the caller serialises.
 * mg_ring_consume() copies whole records, oldest first, never more than
 * @max bytes, through @copy (which returns the bytes it could not copy,
 * like copy_to_user). In overwrite mode records go through @bounce (of
 * @bounce_size >= MAGNET_RECORD_MAX bytes) so that only records the writer
 * did not overwrite during the copy reach @copy. Returns the bytes copied,
 * 0 if nothing is readable, -EINVAL if @max cannot hold the next record,
 * -EFAULT if @copy failed before anything was copied, -EAGAIN (overwrite
 * mode) if writers pushing the tail voided MG_RING_READ_TRIES attempts in a
 * row: nothing was consumed; call again after letting others run.
 */
typedef unsigned long (*mg_copy_fn)(void *ctx, const void *src, unsigned long len);

struct mg_reader {
	mg_copy_fn copy;
	void *ctx;
	void *bounce;
	unsigned long bounce_size;
	unsigned long records;	/* out: real records copied by the call */
};

long mg_ring_consume(struct mg_ring *rb, struct mg_reader *rd, unsigned long max);

/*
 * Zero-copy reading (discard mode only; see IN PLACE in ring_core.c): the
 * reader looks at the records between *@tail and the returned commit where
 * they lie, padding included, then gives back the bytes it is done with.
 * mg_ring_advance() takes exactly @len bytes of whole records (padding
 * included) from @from, which must be the tail (so a give-back repeated,
 * or made after another read took the records, takes nothing): it
 * returns the real records among them; -ESTALE if tail is not @from,
 * -EINVAL if @len goes past commit or does not end on a record boundary
 * (nothing consumed either way), -EIO if the ring is corrupt. The caller
 * serialises it with mg_ring_consume().
 */
unsigned long mg_ring_peek(const struct mg_ring *rb, unsigned long *tail);
long mg_ring_advance(struct mg_ring *rb, unsigned long from, unsigned long len);

/* Committed, unread bytes and records: what wake-ups and poll look at. */
unsigned long mg_ring_avail_bytes(const struct mg_ring *rb);
unsigned long mg_ring_avail_records(const struct mg_ring *rb);
void mg_ring_stats(const struct mg_ring *rb, struct mg_ring_stats *st);
/* Drop all unread records (no writer may run: after a grace period). */
void mg_ring_reset(struct mg_ring *rb);
/* At least half the ring is readable: every read condition holds. */
int mg_ring_half_full(const struct mg_ring *rb);
/*
 * A ring about to be replaced: the losses no reader of it has been told
 * of, by reason (struct magnet_lost's order): those not yet written in a
 * LOST record, those in LOST records still unread, and in overwrite mode
 * those its reader has not reported yet. Call once no writer or reader
 * uses @rb any more. mg_ring_carry_pending() adds them to @to's pending
 * losses, so that the next record written to @to reports them: call it on
 * @to's CPU (or while no writer can run on it).
 */
void mg_ring_unreported(const struct mg_ring *rb, unsigned long lost[MG_LOST_REASONS]);
void mg_ring_carry_pending(struct mg_ring *to, const unsigned long lost[MG_LOST_REASONS]);
/* Arm the notify callback: it runs once, from a writer, when due. */
void mg_ring_arm(struct mg_ring *rb);
int mg_ring_wake_due(const struct mg_ring *rb);

#endif /* _MAGNET_RING_CORE_H */
