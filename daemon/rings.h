/* SPDX-License-Identifier: GPL-2.0 */
/*
 * magnetd sizes the rings, so that an operator need not: each CPU's ring
 * is grown to ring_size (all of them together at most ring_memory) when
 * magnetd starts and whenever the module comes back, never shrunk. The
 * module replaces rings only while no reader holds them, and a
 * replacement throws away what they hold (counted as discarded): so
 * magnetd grows them only before it reads them and while they hold no
 * unread record. Otherwise they stay as they are, and it says why.
 */
#ifndef MAGNET_DAEMON_RINGS_H
#define MAGNET_DAEMON_RINGS_H

#include <stddef.h>

/* The ring_memory default: this fraction of the node's memory. */
#define MG_RINGS_MEMORY_DIVISOR	32

typedef void (*mg_rings_log)(void *arg, int prio, const char *msg);

/*
 * Grow the rings in dir to want bytes per CPU (0: leave them), or the
 * largest power of two that keeps all CPUs' rings within cap bytes (0:
 * 1/MG_RINGS_MEMORY_DIVISOR of the memory). 1: grown; 0: left as they
 * are (why, logged, if they are smaller than wanted); -errno: could not
 * tell (no buffers file) or the module refused (logged).
 */
int mg_rings_grow(const char *dir, size_t want, size_t cap, mg_rings_log log, void *arg);

/* Rings grown by this process so far (any thread). */
unsigned int mg_rings_resizes(void);

#endif /* MAGNET_DAEMON_RINGS_H */
