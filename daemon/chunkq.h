/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A single-producer single-consumer queue of data chunks (whole records
 * read from one cpuN file) between magnetd's collection thread and its
 * server: a byte ring allocated once, so the producer never allocates,
 * never locks and never blocks; a full ring refuses the chunk and the
 * producer counts the loss.
 *
 * The consumer sleeps in epoll on mg_chunkq_fd(). Before it sleeps it
 * calls mg_chunkq_arm(), which says whether it may (the queue is empty);
 * a producer that then queues writes the eventfd once. No lost wakeup:
 * both sides store their flag or index before loading the other's,
 * sequentially consistent.
 */
#ifndef MAGNET_DAEMON_CHUNKQ_H
#define MAGNET_DAEMON_CHUNKQ_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#define MG_CHUNKQ_OVERHEAD	8	/* framing per chunk */
#define MG_CHUNKQ_MIN		4096

struct mg_chunkq;

/* bytes (>= MG_CHUNKQ_MIN, rounded down to 8) allocated here, once. */
int mg_chunkq_create(size_t bytes, struct mg_chunkq **out);

/*
 * mg_chunkq_create_flags: MG_CHUNKQ_WHOLE lets a chunk take up to the whole
 * ring (bytes - 8) and the ring be as small as 2 * MG_CHUNKQ_OVERHEAD, for
 * a producer that drops and counts what does not fit rather than sizing
 * the ring to its chunks (the trace writer): a chunk over half the ring
 * then gets -ENOBUFS when it does not fit where the ring's free space is,
 * unless the ring is empty (an empty ring starts again at 0).
 * MG_CHUNKQ_PREFAULT touches the ring now, so no put takes its page faults.
 */
#define MG_CHUNKQ_WHOLE		(1U << 0)
#define MG_CHUNKQ_PREFAULT	(1U << 1)

int mg_chunkq_create_flags(size_t bytes, unsigned int flags,
			   struct mg_chunkq **out);

void mg_chunkq_free(struct mg_chunkq *q);

/*
 * Producer: queue len bytes (a multiple of 8, at most half the ring, or
 * all of it with MG_CHUNKQ_WHOLE) of cpu. 0, -ENOBUFS when full (nothing
 * queued), -EINVAL for a chunk the ring can never hold.
 */
int mg_chunkq_put(struct mg_chunkq *q, __u32 cpu, const void *data,
		  size_t len);

/*
 * Consumer: the oldest chunk, valid until mg_chunkq_pop. 0, or -EAGAIN
 * when empty.
 */
int mg_chunkq_peek(struct mg_chunkq *q, __u32 *cpu, const void **data,
		   size_t *len);
void mg_chunkq_pop(struct mg_chunkq *q);

/* Consumer: readable when a chunk arrived while the consumer slept. */
int mg_chunkq_fd(const struct mg_chunkq *q);

/*
 * Consumer, before sleeping: true when the queue is empty and the next put
 * will make the fd readable; false when chunks are waiting (do not sleep).
 * Clears the fd's counter either way.
 */
bool mg_chunkq_arm(struct mg_chunkq *q);

/*
 * mg_chunkq_arm for a consumer that takes chunks in batches: the next put
 * that leaves at least @bytes queued (framing included; 0: any put) makes
 * the fd readable; false when that many are queued already. The consumer
 * then sleeps with a timeout of its own, and takes what is queued when it
 * wakes, however little: fewer wakeups, larger batches.
 */
bool mg_chunkq_arm_batch(struct mg_chunkq *q, size_t bytes);

/*
 * Any thread: make the fd readable now, for a consumer that also sleeps on
 * conditions of its own. Store the condition first; the consumer checks
 * it after mg_chunkq_arm, so either it sees the condition or its poll sees
 * this wakeup.
 */
void mg_chunkq_wake(struct mg_chunkq *q);

/* Bytes in use now, and the most ever (framing included). */
size_t mg_chunkq_used(const struct mg_chunkq *q);
size_t mg_chunkq_peak(const struct mg_chunkq *q);

/* The ring's size: bytes as created, rounded down to 8. */
size_t mg_chunkq_size(const struct mg_chunkq *q);

#endif /* MAGNET_DAEMON_CHUNKQ_H */
