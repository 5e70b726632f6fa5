// SPDX-License-Identifier: GPL-2.0
/*
 * SPSC chunk queue; see chunkq.h.
 *
 * head (the consumer's) and tail (the producer's) count bytes ever
 * consumed and queued. An entry at tail % size is an 8-byte frame (u32
 * len, u32 cpu) and len data bytes, contiguous: when the end of the ring
 * is too short the producer writes a pad frame (cpu PAD_CPU) and goes on
 * at 0. Each side publishes its index with release and reads the other's
 * with acquire, so bytes are complete before they are seen.
 *
 * An empty ring starts its next chunk at 0 too, so that a steady stream
 * keeps using the same few pages and cache lines rather than walking the
 * whole ring through cold ones (and, the first time round, through pages
 * never touched). No pad frame for that: it would hold the rest of the
 * ring until the consumer skipped it. The producer publishes where it
 * left off instead (rewound_at, before the tail that follows it), and a
 * consumer whose head is there goes on at the next lap.
 */
#include <errno.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "chunkq.h"

#define PAD_CPU		0xffffffffU

struct mg_chunkq {
	alignas(64) _Atomic __u64 tail;		/* the producer's */
	_Atomic size_t peak;
	_Atomic __u64 rewound_at;	/* the producer's last rewind, or ~0 */
	alignas(64) _Atomic __u64 head;		/* the consumer's */
	_Atomic int sleeping;
	_Atomic size_t wake_bytes;	/* wake the sleeper at this many used */
	alignas(64) unsigned char *ring;
	size_t size;
	size_t max_need;	/* framing included: half the ring, or all */
	int efd;
};

int mg_chunkq_create(size_t bytes, struct mg_chunkq **out)
{
	return mg_chunkq_create_flags(bytes, 0, out);
}

int mg_chunkq_create_flags(size_t bytes, unsigned int flags,
			   struct mg_chunkq **out)
{
	bool whole = flags & MG_CHUNKQ_WHOLE;
	struct mg_chunkq *q;

	bytes &= ~(size_t)7;
	if (flags & ~(MG_CHUNKQ_WHOLE | MG_CHUNKQ_PREFAULT) ||
	    bytes < (whole ? 2 * MG_CHUNKQ_OVERHEAD : MG_CHUNKQ_MIN))
		return -EINVAL;
	q = aligned_alloc(64, (sizeof(*q) + 63) & ~(size_t)63);
	if (!q)
		return -ENOMEM;
	memset(q, 0, sizeof(*q));
	atomic_init(&q->rewound_at, ~0ULL);
	q->ring = malloc(bytes);
	q->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!q->ring || q->efd < 0) {
		int err = q->ring ? -errno : -ENOMEM;

		free(q->ring);
		if (q->efd >= 0)
			close(q->efd);
		free(q);
		return err;
	}
	if (flags & MG_CHUNKQ_PREFAULT)
		memset(q->ring, 0, bytes);
	q->size = bytes;
	/*
	 * Half the ring: an empty ring always takes the chunk, a pad frame
	 * included. The whole ring: what does not fit now is the producer's
	 * loss to count, like a full ring.
	 */
	q->max_need = whole ? bytes : bytes / 2;
	*out = q;
	return 0;
}

void mg_chunkq_free(struct mg_chunkq *q)
{
	if (!q)
		return;
	close(q->efd);
	free(q->ring);
	free(q);
}

static __u64 next_lap(const struct mg_chunkq *q, __u64 at)
{
	return at - at % q->size + q->size;
}

/* Where the consumer goes on from head: past a rewind it has not seen. */
static __u64 head_after_rewind(const struct mg_chunkq *q, __u64 head)
{
	return head == atomic_load_explicit(&q->rewound_at, memory_order_relaxed) ?
	       next_lap(q, head) : head;
}

static void put_frame(unsigned char *p, __u32 len, __u32 cpu)
{
	memcpy(p, &len, 4);
	memcpy(p + 4, &cpu, 4);
}

int mg_chunkq_put(struct mg_chunkq *q, __u32 cpu, const void *data,
		  size_t len)
{
	__u64 tail = atomic_load_explicit(&q->tail, memory_order_relaxed);
	__u64 head = head_after_rewind(q, atomic_load_explicit(&q->head,
							     memory_order_acquire));
	size_t off = tail % q->size, need = MG_CHUNKQ_OVERHEAD + len, pad = 0;
	size_t used;

	if (!len || len % 8 || need > q->max_need || cpu == PAD_CPU)
		return -EINVAL;
	/* Empty: the whole ring is free, and this chunk fits at 0. */
	if (tail == head && off) {
		atomic_store_explicit(&q->rewound_at, tail, memory_order_relaxed);
		tail = head = next_lap(q, tail);
		off = 0;
	}
	if (off + need > q->size)
		pad = q->size - off;
	if (tail + pad + need - head > q->size)
		return -ENOBUFS;
	if (pad) {
		/* A pad frame needs its 8 bytes; the ring is a multiple of 8. */
		put_frame(q->ring + off, pad - MG_CHUNKQ_OVERHEAD, PAD_CPU);
		off = 0;
	}
	put_frame(q->ring + off, len, cpu);
	memcpy(q->ring + off + MG_CHUNKQ_OVERHEAD, data, len);
	tail += pad + need;
	used = tail - head;
	if (used > atomic_load_explicit(&q->peak, memory_order_relaxed))
		atomic_store_explicit(&q->peak, used, memory_order_relaxed);
	atomic_store(&q->tail, tail);			/* seq_cst: see chunkq.h */
	/* used may be stale high (an old head): then it wakes early, no harm. */
	if (atomic_load(&q->sleeping) &&
	    used >= atomic_load_explicit(&q->wake_bytes, memory_order_relaxed) &&
	    atomic_exchange(&q->sleeping, 0))
		mg_chunkq_wake(q);
	return 0;
}

int mg_chunkq_peek(struct mg_chunkq *q, __u32 *cpu, const void **data,
		   size_t *len)
{
	__u64 head = atomic_load_explicit(&q->head, memory_order_relaxed);

	for (;;) {
		__u64 tail = atomic_load_explicit(&q->tail, memory_order_acquire);
		size_t off;
		__u32 l, c;

		if (head == tail)
			return -EAGAIN;
		head = head_after_rewind(q, head);
		off = head % q->size;
		memcpy(&l, q->ring + off, 4);
		memcpy(&c, q->ring + off + 4, 4);
		if (c == PAD_CPU) {
			head += q->size - off;
			atomic_store_explicit(&q->head, head, memory_order_release);
			continue;
		}
		*cpu = c;
		*len = l;
		*data = q->ring + off + MG_CHUNKQ_OVERHEAD;
		return 0;
	}
}

void mg_chunkq_pop(struct mg_chunkq *q)
{
	__u64 head = head_after_rewind(q, atomic_load_explicit(&q->head,
							     memory_order_relaxed));
	__u32 l;

	memcpy(&l, q->ring + head % q->size, 4);
	atomic_store_explicit(&q->head, head + MG_CHUNKQ_OVERHEAD + l,
			      memory_order_release);
}

int mg_chunkq_fd(const struct mg_chunkq *q)
{
	return q->efd;
}

void mg_chunkq_wake(struct mg_chunkq *q)
{
	__u64 one = 1;

	/* Non-blocking; a full counter means a wakeup is pending. */
	if (write(q->efd, &one, sizeof(one)) < 0)
		return;
}

bool mg_chunkq_arm(struct mg_chunkq *q)
{
	return mg_chunkq_arm_batch(q, 0);
}

bool mg_chunkq_arm_batch(struct mg_chunkq *q, size_t bytes)
{
	size_t want = bytes ? bytes : 1;
	__u64 v;

	/* Reset the counter first: a wakeup after this point stays readable. */
	if (read(q->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return false;
	/* Relaxed: the seq_cst store of sleeping publishes it. */
	atomic_store_explicit(&q->wake_bytes, want, memory_order_relaxed);
	atomic_store(&q->sleeping, 1);
	if (mg_chunkq_used(q) >= want) {
		atomic_store(&q->sleeping, 0);
		return false;
	}
	return true;
}

size_t mg_chunkq_used(const struct mg_chunkq *q)
{
	/*
	 * head first: a tail loaded later is never behind it, while a head
	 * loaded after tail may be past it (the consumer went on meanwhile).
	 */
	__u64 head = atomic_load(&q->head), tail = atomic_load(&q->tail);

	return tail == head ? 0 : tail - head_after_rewind(q, head);
}

size_t mg_chunkq_peak(const struct mg_chunkq *q)
{
	return atomic_load(&q->peak);
}

size_t mg_chunkq_size(const struct mg_chunkq *q)
{
	return q->size;
}
