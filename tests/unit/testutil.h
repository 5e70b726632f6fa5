/* SPDX-License-Identifier: GPL-2.0 */
/* Helpers shared by the libmagnet unit tests. */
#ifndef MAGNET_TESTUTIL_H
#define MAGNET_TESTUTIL_H

#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/magnet.h>

/*
 * Check's ck_assert_* write a checkpoint per call (a syscall); fuzz loops
 * make millions of checks, so they use these, which only act on failure.
 */
#define tu_assert(c)							\
	do {								\
		if (!(c))						\
			ck_abort_msg("Assertion '%s' failed", #c);	\
	} while (0)
#define tu_assert_op(a, op, b)						\
	do {								\
		unsigned long long _a = (a), _b = (b);			\
		if (!(_a op _b))					\
			ck_abort_msg("Assertion '%s %s %s' failed: %llu, %llu", \
				     #a, #op, #b, _a, _b);		\
	} while (0)
#define tu_assert_int(a, op, b)						\
	do {								\
		long long _a = (a), _b = (b);				\
		if (!(_a op _b))					\
			ck_abort_msg("Assertion '%s %s %s' failed: %lld, %lld", \
				     #a, #op, #b, _a, _b);		\
	} while (0)

/* Deterministic PRNG (xorshift64*): same sequence on every libc. */
void tu_seed(unsigned long long seed);
unsigned long long tu_rand(void);

/*
 * One random valid record at buf: a kprobe or kretprobe with 0..6 args, a
 * quarter of them with a capture of 1..300 bytes (fewer if cap is smaller;
 * 1 in 8 of those unreadable), or (1 in 8) a LOST record; of the non-LOST
 * draws, 1 in 8 is a sock record and 1 in 8 a raw one of 0..300 bytes
 * (fewer if cap is smaller). Returns its size, or -ENOSPC.
 */
ssize_t tu_random_record(void *buf, size_t cap, __u32 cpu, __u64 ts,
			 __u64 abstract_id);

/* A random valid struct magnet_sock: family 0, AF_INET or AF_INET6. */
void tu_random_sock(struct magnet_sock *s);

/*
 * One packet as the net-jobs probes capture it: an skb record at the
 * network layer. family AF_INET or AF_INET6; proto IPPROTO_TCP (a 20-byte
 * header), IPPROTO_UDP, or another (no transport header); src and dst
 * addresses as text; out: sent (else received); cgroup the header's (the
 * writer's), sk_cgroup the socket's; seq TCP's sequence number, 0: the
 * end of the last packet made (so each packet's bytes are new).
 */
struct tu_packet {
	int family, proto;
	const char *src, *dst;
	unsigned int sport, dport, payload;
	__u32 seq;
	bool out;
	__u32 cgroup;
	__u64 sk_cgroup;
};

/*
 * A TCP header's sequence number (seq, or 0: the end of the last segment
 * this numbered, so that each packet's bytes are new), data offset (len
 * bytes of header) and flags; the ports are the caller's.
 */
void tu_tcp_header(unsigned char *tcp, __u32 seq, unsigned int payload,
		   unsigned int len, __u8 flags);

/* Its record at buf (cap bytes). Returns its size, or -ENOSPC. */
ssize_t tu_skb_record(void *buf, size_t cap, const struct tu_packet *p);

/* A fresh temporary file; path (at least 64 bytes) gets its name. */
int tu_tmpfile(char *path);

/* Whole file into a malloc'd buffer. */
void *tu_read_file(const char *path, size_t *len);
void tu_write_file(const char *path, const void *buf, size_t len);

/*
 * Fill up to @len bytes of @buf with a mix of the tokens @toks and, one time
 * in @raw_one_in, a random byte: near-miss input for parser fuzzing.
 * Returns the bytes written (a token that would overrun @len ends it).
 */
size_t tu_token_soup(char *buf, size_t len, const char *const *toks, size_t ntoks,
		     unsigned int raw_one_in);

/* Run every test of @s; the process's exit status: 0 when all passed. */
int tu_run(Suite *s);

#endif
