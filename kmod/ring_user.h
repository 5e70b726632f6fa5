/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel primitives ring_core.c uses, for user space.
 *
 * local_t keeps its kernel meaning: atomic against interruption on the same
 * CPU, not against other CPUs. On x86-64 that is a single instruction
 * without a lock prefix, exactly as arch/x86/include/asm/local.h does, so a
 * signal handler (the test's stand-in for an interrupt) sees the same
 * atomicity as an IRQ or NMI does in the kernel, at the same cost.
 */
#ifndef _MAGNET_RING_USER_H
#define _MAGNET_RING_USER_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <linux/types.h>

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)
#define barrier()	__asm__ __volatile__("" ::: "memory")
#define notrace
#ifndef __always_inline
#define __always_inline	inline __attribute__((__always_inline__))
#endif
#define NOKPROBE_SYMBOL(fn)
#define READ_ONCE(x)	(*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v) (*(volatile __typeof__(x) *)&(x) = (v))
#define smp_mb()	__atomic_thread_fence(__ATOMIC_SEQ_CST)
#define smp_rmb()	__atomic_thread_fence(__ATOMIC_ACQUIRE)
#define smp_wmb()	__atomic_thread_fence(__ATOMIC_RELEASE)
#define smp_load_acquire(p)	__atomic_load_n(p, __ATOMIC_ACQUIRE)
#define smp_store_release(p, v)	__atomic_store_n(p, v, __ATOMIC_RELEASE)
#define cmpxchg(p, o, n) \
	__extension__({ __typeof__(*(p)) __o = (o); \
	__atomic_compare_exchange_n(p, &__o, n, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
	__o; })

typedef struct { long counter; } atomic_long_t;
#define atomic_long_read(v)	__atomic_load_n(&(v)->counter, __ATOMIC_RELAXED)
#define atomic_long_set(v, i)	__atomic_store_n(&(v)->counter, i, __ATOMIC_RELAXED)
#define atomic_long_read_acquire(v) __atomic_load_n(&(v)->counter, __ATOMIC_ACQUIRE)
#define atomic_long_set_release(v, i) __atomic_store_n(&(v)->counter, i, __ATOMIC_RELEASE)
#define atomic_long_cmpxchg(v, o, n) cmpxchg(&(v)->counter, o, n)

typedef struct { long a; } local_t;

static inline long local_read(const local_t *l)
{
	return READ_ONCE(l->a);
}

static inline void local_set(local_t *l, long i)
{
	WRITE_ONCE(l->a, i);
}

#if defined(__x86_64__)
static inline void local_inc(local_t *l)
{
	__asm__ __volatile__("incq %0" : "+m"(l->a) :: "memory");
}

static inline void local_dec(local_t *l)
{
	__asm__ __volatile__("decq %0" : "+m"(l->a) :: "memory");
}

static inline void local_add(long i, local_t *l)
{
	__asm__ __volatile__("addq %1,%0" : "+m"(l->a) : "ir"(i) : "memory");
}

static inline void local_sub(long i, local_t *l)
{
	__asm__ __volatile__("subq %1,%0" : "+m"(l->a) : "ir"(i) : "memory");
}

static inline long local_add_return(long i, local_t *l)
{
	long old = i;

	__asm__ __volatile__("xaddq %0,%1" : "+r"(old), "+m"(l->a) :: "memory");
	return old + i;
}

static inline long local_cmpxchg(local_t *l, long old, long new)
{
	long prev;

	__asm__ __volatile__("cmpxchgq %2,%1"
			     : "=a"(prev), "+m"(l->a)
			     : "r"(new), "0"(old)
			     : "memory");
	return prev;
}
#else
static inline void local_inc(local_t *l)
{
	__atomic_fetch_add(&l->a, 1, __ATOMIC_RELAXED);
}

static inline void local_dec(local_t *l)
{
	__atomic_fetch_sub(&l->a, 1, __ATOMIC_RELAXED);
}

static inline void local_add(long i, local_t *l)
{
	__atomic_fetch_add(&l->a, i, __ATOMIC_RELAXED);
}

static inline void local_sub(long i, local_t *l)
{
	__atomic_fetch_sub(&l->a, i, __ATOMIC_RELAXED);
}

static inline long local_add_return(long i, local_t *l)
{
	return __atomic_add_fetch(&l->a, i, __ATOMIC_RELAXED);
}

static inline long local_cmpxchg(local_t *l, long old, long new)
{
	__atomic_compare_exchange_n(&l->a, &old, new, 0, __ATOMIC_RELAXED,
				    __ATOMIC_RELAXED);
	return old;
}
#endif

#endif /* _MAGNET_RING_USER_H */
