/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Record encoding, validation and decoding (include/uapi/linux/magnet.h).
 *
 * Buffers must be 8-byte aligned (malloc and the kernel's reads give that):
 * records are accessed in place, never copied.
 */
#ifndef MAGNET_LIB_RECORD_H
#define MAGNET_LIB_RECORD_H

#include <stddef.h>
#include <stdbool.h>
#include <sys/types.h>
#include <linux/magnet.h>

/* Why a record is invalid; functions return these negated. */
enum mg_rec_err {
	MG_REC_TRUNCATED = 1,	/* buffer ends inside the record */
	MG_REC_SIZE_SMALL,	/* size < MAGNET_RECORD_HEADER */
	MG_REC_SIZE_ALIGN,	/* size not a multiple of MAGNET_RECORD_ALIGN */
	MG_REC_SIZE_BIG,	/* size > MAGNET_RECORD_MAX */
	MG_REC_RESERVED,	/* reserved field not zero */
	MG_REC_PAD,		/* event id 0: ring padding leaked to a reader */
	MG_REC_EVENT,		/* event id 2..15: reserved, undefined */
	MG_REC_FLAGS,		/* undefined flag bits, or nargs > MAGNET_ARGS_MAX */
	MG_REC_LAYOUT,		/* size does not match the layout flags describe */
	MG_REC_MISALIGNED,	/* record not 8-byte aligned in memory */
	MG_REC_NERR
};

/* Reason text for MG_REC_* (either sign). Never NULL. */
const char *mg_record_strerror(int err);

/* Validate the record at buf + off. 0 or -MG_REC_*. */
int mg_record_check(const void *buf, size_t len, size_t off);

/*
 * Cursor over a buffer of records. Returns 1 with *out set and *off moved
 * past the record; 0 at the end (*off == len); -MG_REC_* when the record at
 * *off is invalid, leaving *off at it, so *off is the error's offset.
 */
int mg_record_next(const void *buf, size_t len, size_t *off,
		   const struct magnet_record **out);

/* Size of a probe record with this layout (header included). */
static inline size_t mg_record_probe_size(bool ret, unsigned int nargs)
{
	return MAGNET_RECORD_HEADER + (ret ? 16 : 0) + 8 * (size_t)nargs;
}

/* Header fields the encoders take; size, flags, reserved are computed. */
struct mg_record_hdr {
	__u16 event_id;
	__u32 cpu;
	__u64 abstract_id;
	__u64 timestamp;
	__u32 pid;
	__u32 tgid;
};

/*
 * Encoders write one record at buf and return its size, -ENOSPC if len is
 * too small, -EINVAL for nargs > MAGNET_ARGS_MAX or an event id the layout
 * does not allow (probes need >= MAGNET_EVENT_FIRST_DYNAMIC). args may be
 * NULL when nargs is 0.
 */
ssize_t mg_record_encode_kprobe(void *buf, size_t len,
				const struct mg_record_hdr *h,
				const __u64 *args, unsigned int nargs);
ssize_t mg_record_encode_kretprobe(void *buf, size_t len,
				   const struct mg_record_hdr *h,
				   __s64 retval, __u64 latency_ns,
				   const __u64 *args, unsigned int nargs);
/* h->event_id is ignored: always MAGNET_EVENT_LOST. */
ssize_t mg_record_encode_lost(void *buf, size_t len,
			      const struct mg_record_hdr *h,
			      const struct magnet_lost *lost);

/* Payload accessors, for records mg_record_next() or _check() accepted. */
static inline bool mg_record_is_lost(const struct magnet_record *r)
{
	return r->event_id == MAGNET_EVENT_LOST;
}

static inline bool mg_record_is_return(const struct magnet_record *r)
{
	return r->flags & MAGNET_REC_RETURN;
}

static inline unsigned int mg_record_nargs(const struct magnet_record *r)
{
	return MAGNET_REC_NARGS(r->flags);
}

static inline const __u64 *mg_record_args(const struct magnet_record *r)
{
	return (const __u64 *)(r->payload + (mg_record_is_return(r) ? 16 : 0));
}

static inline __s64 mg_record_retval(const struct magnet_record *r)
{
	return ((const __s64 *)r->payload)[0];
}

static inline __u64 mg_record_latency(const struct magnet_record *r)
{
	return ((const __u64 *)r->payload)[1];
}

static inline const struct magnet_lost *
mg_record_lost(const struct magnet_record *r)
{
	return (const struct magnet_lost *)r->payload;
}

/* Total records lost that a LOST record reports (sum of its reasons). */
static inline __u64 mg_lost_total(const struct magnet_lost *l)
{
	return l->full + l->too_big + l->nesting + l->overwritten;
}

static inline void mg_lost_add(struct magnet_lost *sum,
			       const struct magnet_lost *l)
{
	sum->full += l->full;
	sum->too_big += l->too_big;
	sum->nesting += l->nesting;
	sum->overwritten += l->overwritten;
}

#endif /* MAGNET_LIB_RECORD_H */
