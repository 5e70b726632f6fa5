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
	MG_REC_PAD,		/* event id 0: ring padding leaked to a reader */
	MG_REC_EVENT,		/* event id 4..15: reserved, undefined */
	MG_REC_FLAGS,		/* undefined flag bits (a named handler's layout has
				 * none but the handler), or nargs > 6 */
	MG_REC_LAYOUT,		/* size does not match the layout flags describe */
	MG_REC_MISALIGNED,	/* record not 8-byte aligned in memory */
	MG_REC_CAPTURE_LEN,	/* capture len neither 0 nor the data the record holds */
	MG_REC_CAPTURE_ARG,	/* capture arg > 5: no such argument register */
	MG_REC_CAPTURE_PAD,	/* capture bytes past len (alignment, or all of an
				 * unreadable capture) not zero */
	MG_REC_HANDLER,		/* handler (flags bits 8..11) not 0..4 */
	MG_REC_SOCK_FAMILY,	/* sock: family neither 0, AF_INET nor AF_INET6 */
	MG_REC_RAW_LEN,		/* raw: len does not match the record size */
	MG_REC_RAW_RESERVED,	/* raw: reserved field not zero */
	MG_REC_RAW_PAD,		/* raw: alignment bytes past len not zero */
	MG_REC_SKB_LEN,		/* skb: caplen past the data the record holds */
	MG_REC_SKB_FIELD,	/* skb: direction or layer undefined */
	MG_REC_SKB_PAD,		/* skb: bytes past caplen not zero */
	MG_REC_SWITCH_FIELD,	/* switch: preempt not 0 or 1, or reserved not zero */
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

/*
 * Cursor over records already validated, for a thread handed a buffer that
 * mg_record_next() accepted whole (magnetd's collection thread checks every
 * record it reads; its server and trace writer then only step). The next
 * record, or NULL at the end.
 */
static inline const struct magnet_record *mg_record_step(const void *buf,
							 size_t len, size_t *off)
{
	const struct magnet_record *r;

	if (len - *off < MAGNET_RECORD_HEADER)
		return NULL;
	r = (const struct magnet_record *)((const char *)buf + *off);
	if (r->size < MAGNET_RECORD_HEADER || r->size > len - *off)
		return NULL;	/* never for a checked buffer; no endless loop */
	*off += r->size;
	return r;
}

/* Size of a probe record with this layout (header included), no capture. */
static inline size_t mg_record_probe_size(bool ret, unsigned int nargs)
{
	return MAGNET_RECORD_HEADER + (ret ? 16 : 0) + 8 * (size_t)nargs;
}

/*
 * Size of a probe record that captures cap_len bytes (the probe's capture
 * length): the layout rounded up to 8. May exceed MAGNET_RECORD_MAX.
 */
static inline size_t mg_record_capture_size(bool ret, unsigned int nargs,
					    size_t cap_len)
{
	return (mg_record_probe_size(ret, nargs) +
		sizeof(struct magnet_capture) + cap_len + 7) & ~(size_t)7;
}

/* Size of a "sock" handler record: header and struct magnet_sock. */
#define MG_RECORD_SOCK_SIZE \
	(MAGNET_RECORD_HEADER + sizeof(struct magnet_sock))

/* Size of a "switch" handler record: header and struct magnet_switch. */
#define MG_RECORD_SWITCH_SIZE \
	(MAGNET_RECORD_HEADER + sizeof(struct magnet_switch))

/*
 * Size of a "raw" record holding len data bytes: header, struct magnet_raw
 * and the data, rounded up to 8. May exceed MAGNET_RECORD_MAX.
 */
static inline size_t mg_record_raw_size(size_t len)
{
	return (MAGNET_RECORD_HEADER + sizeof(struct magnet_raw) + len + 7) &
	       ~(size_t)7;
}

/*
 * Size of an "skb" record whose probe captures cap_len bytes: header,
 * struct magnet_skb and cap_len rounded up to 8.
 */
static inline size_t mg_record_skb_size(size_t cap_len)
{
	return MAGNET_RECORD_HEADER + sizeof(struct magnet_skb) +
	       ((cap_len + 7) & ~(size_t)7);
}

/*
 * Header fields the encoders take; size and flags are computed (intr adds
 * MAGNET_REC_INTR to a probe, sock or raw record's).
 */
struct mg_record_hdr {
	__u16 event_id;
	bool intr;
	__u32 cpu;
	__u32 cgroup;
	__u64 abstract_id;
	__u64 timestamp;
	__u32 pid;
	__u32 tgid;
};

/*
 * A capture to encode: the probe's capture length (>= 1), the argument
 * (0..MAGNET_ARGS_MAX-1) that held the address, and len bytes of data, or
 * data NULL for memory that could not be read (recorded as len 0 with
 * zeroed data, as the module does).
 */
struct mg_record_cap {
	unsigned int len;
	unsigned int arg;
	const void *data;
};

/*
 * Encoders write one record at buf and return its size, -ENOSPC if len is
 * too small, -EINVAL for nargs > MAGNET_ARGS_MAX or an event id the layout
 * does not allow (probes need >= MAGNET_EVENT_FIRST_DYNAMIC). args may be
 * NULL when nargs is 0. The _cap variants add a capture (cap NULL: none);
 * -EINVAL also for a capture length of 0, an arg > 5, or a record that
 * would exceed MAGNET_RECORD_MAX. Alignment bytes are written as zero.
 */
ssize_t mg_record_encode_kprobe(void *buf, size_t len,
				const struct mg_record_hdr *h,
				const __u64 *args, unsigned int nargs);
ssize_t mg_record_encode_kretprobe(void *buf, size_t len,
				   const struct mg_record_hdr *h,
				   __s64 retval, __u64 latency_ns,
				   const __u64 *args, unsigned int nargs);
ssize_t mg_record_encode_kprobe_cap(void *buf, size_t len,
				    const struct mg_record_hdr *h,
				    const __u64 *args, unsigned int nargs,
				    const struct mg_record_cap *cap);
ssize_t mg_record_encode_kretprobe_cap(void *buf, size_t len,
				       const struct mg_record_hdr *h,
				       __s64 retval, __u64 latency_ns,
				       const __u64 *args, unsigned int nargs,
				       const struct mg_record_cap *cap);
/*
 * A "sock" handler record (flags MAGNET_HANDLER_SOCK only, size
 * MG_RECORD_SOCK_SIZE). -EINVAL also for a family other than 0, AF_INET
 * or AF_INET6.
 */
ssize_t mg_record_encode_sock(void *buf, size_t len,
			      const struct mg_record_hdr *h,
			      const struct magnet_sock *sock);
/*
 * A "raw" record (an event a kernel module logged): dlen bytes of data
 * (data may be NULL when dlen is 0). -EINVAL also for a record that would
 * exceed MAGNET_RECORD_MAX (dlen > MAGNET_PAYLOAD_MAX - 8).
 */
ssize_t mg_record_encode_raw(void *buf, size_t len,
			     const struct mg_record_hdr *h,
			     const void *data, size_t dlen);
/*
 * An "skb" record: skb's fields (caplen included) and caplen bytes of data
 * in a record holding cap_len (>= caplen) bytes of packet, the rest zero.
 * -EINVAL also for caplen > cap_len, a record larger than MAGNET_RECORD_MAX,
 * an undefined direction or layer.
 */
ssize_t mg_record_encode_skb(void *buf, size_t len,
			     const struct mg_record_hdr *h,
			     const struct magnet_skb *skb, const void *data,
			     size_t cap_len);
/*
 * A "switch" record (sched:sched_switch): sw copied whole. -EINVAL also
 * for preempt other than 0 or 1, or reserved bytes that are not zero.
 */
ssize_t mg_record_encode_switch(void *buf, size_t len,
				const struct mg_record_hdr *h,
				const struct magnet_switch *sw);
/*
 * A TASK record naming h->pid: comm is copied up to 16 bytes, NUL-padded.
 * h->event_id and h->intr are ignored.
 */
ssize_t mg_record_encode_task(void *buf, size_t len,
			      const struct mg_record_hdr *h, const char *comm);
/* The same with the task's owner (MG_UID_UNKNOWN: not known). */
ssize_t mg_record_encode_task_as(void *buf, size_t len,
				 const struct mg_record_hdr *h, const char *comm,
				 __u32 uid, __u32 euid);
/*
 * A JOB_LOST record: @fair records of job @cgroup (its whole cgroup v2 id,
 * 0 the shared job) dropped by the fairness rule. h->event_id, cgroup and
 * abstract_id are ignored: the job is the record's.
 */
ssize_t mg_record_encode_job_lost(void *buf, size_t len,
				  const struct mg_record_hdr *h, __u64 cgroup, __u64 fair);
/* h->event_id is ignored: always MAGNET_EVENT_LOST. */
ssize_t mg_record_encode_lost(void *buf, size_t len,
			      const struct mg_record_hdr *h,
			      const struct magnet_lost *lost);

/* Payload accessors, for records mg_record_next() or _check() accepted. */
static inline bool mg_record_is_lost(const struct magnet_record *r)
{
	return r->event_id == MAGNET_EVENT_LOST;
}

/* A TASK record: metadata naming its pid, not an event of a probe. */
static inline bool mg_record_is_task(const struct magnet_record *r)
{
	return r->event_id == MAGNET_EVENT_TASK;
}

/*
 * A JOB_LOST record: one job's records the fairness rule dropped on this
 * CPU (UAPI FAIRNESS); the job is abstract_id, 0 the shared job.
 */
static inline bool mg_record_is_job_lost(const struct magnet_record *r)
{
	return r->event_id == MAGNET_EVENT_JOB_LOST;
}

#define MG_JOB_LOST_SIZE \
	(MAGNET_RECORD_HEADER + sizeof(struct magnet_job_lost))

static inline __u64 mg_record_job_lost(const struct magnet_record *r)
{
	return ((const struct magnet_job_lost *)r->payload)->fair;
}

/* Records LOST, TASK and JOB_LOST: written by magnet itself, not by a probe. */
static inline bool mg_record_is_meta(const struct magnet_record *r)
{
	return r->event_id < MAGNET_EVENT_FIRST_DYNAMIC;
}

/*
 * The command name a TASK record gives, NUL-terminated in comm (17 bytes);
 * NULL for other records.
 */
static inline const char *mg_record_task_comm(const struct magnet_record *r,
					      char comm[17])
{
	const struct magnet_task *t = (const struct magnet_task *)r->payload;
	unsigned int i;

	if (!mg_record_is_task(r))
		return NULL;
	for (i = 0; i < sizeof(t->comm) && t->comm[i]; i++)
		comm[i] = t->comm[i];
	comm[i] = 0;
	return comm;
}

/* A uid no task has ((uid_t)-1): a TASK record before format 5. */
#define MG_UID_UNKNOWN	((__u32)-1)

/*
 * The owner a TASK record gives (real, effective uid); MG_UID_UNKNOWN
 * for both in a record of format 3 or 4.
 */
static inline void mg_record_task_uids(const struct magnet_record *r,
				       __u32 *uid, __u32 *euid)
{
	const struct magnet_task *t = (const struct magnet_task *)r->payload;

	if (r->size < MAGNET_RECORD_HEADER + sizeof(*t)) {
		*uid = *euid = MG_UID_UNKNOWN;
		return;
	}
	*uid = t->uid;
	*euid = t->euid;
}

/* Written in interrupt context: pid, tgid and cgroup are the interrupted task's. */
static inline bool mg_record_is_intr(const struct magnet_record *r)
{
	return r->flags & MAGNET_REC_INTR;
}

/*
 * The record's handler, enum magnet_handler: MAGNET_HANDLER_GENERIC for
 * LOST and kprobe/kretprobe layouts (the accessors below), _SOCK for
 * mg_record_sock(), _RAW for mg_record_raw(), _SKB for mg_record_skb(),
 * _SWITCH for mg_record_switch(). Those have no args,
 * return value or capture: mg_record_nargs() is 0, the rest false/NULL.
 */
static inline unsigned int mg_record_handler(const struct magnet_record *r)
{
	return MAGNET_REC_HANDLER(r->flags);
}

/*
 * "kprobe", "kretprobe", "custom" (raw), "lost", "task" or "job_lost": the
 * record's kind.
 */
const char *mg_record_type(const struct magnet_record *r);

static inline const struct magnet_sock *
mg_record_sock(const struct magnet_record *r)
{
	if (mg_record_handler(r) != MAGNET_HANDLER_SOCK)
		return NULL;
	return (const struct magnet_sock *)r->payload;
}

/*
 * The payload of an skb record, or NULL for other records: caplen bytes
 * of data are the packet's from the header its layer names.
 */
static inline const struct magnet_skb *
mg_record_skb(const struct magnet_record *r)
{
	if (mg_record_handler(r) != MAGNET_HANDLER_SKB)
		return NULL;
	return (const struct magnet_skb *)r->payload;
}

/* The payload of a switch record (one task switch), or NULL. */
static inline const struct magnet_switch *
mg_record_switch(const struct magnet_record *r)
{
	if (mg_record_handler(r) != MAGNET_HANDLER_SWITCH)
		return NULL;
	return (const struct magnet_switch *)r->payload;
}

/*
 * The payload of a raw record, or NULL for other records. Its len data
 * bytes are the event's; alignment bytes after them are zero.
 */
static inline const struct magnet_raw *
mg_record_raw(const struct magnet_record *r)
{
	if (mg_record_handler(r) != MAGNET_HANDLER_RAW)
		return NULL;
	return (const struct magnet_raw *)r->payload;
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

static inline bool mg_record_has_capture(const struct magnet_record *r)
{
	return r->flags & MAGNET_REC_CAPTURE;
}

/*
 * The capture after the args, or NULL if the record has none. Its len
 * bytes of data are valid (0: the memory was unreadable); the record holds
 * mg_record_capture_room(r) data bytes, the rest zero.
 */
static inline const struct magnet_capture *
mg_record_capture(const struct magnet_record *r)
{
	if (!mg_record_has_capture(r))
		return NULL;
	return (const struct magnet_capture *)
		(mg_record_args(r) + mg_record_nargs(r));
}

/*
 * Data bytes a capture record holds: the capture length rounded up to 8.
 * Only for records with a capture.
 */
static inline size_t mg_record_capture_room(const struct magnet_record *r)
{
	return r->size - mg_record_probe_size(mg_record_is_return(r),
					      mg_record_nargs(r)) -
	       sizeof(struct magnet_capture);
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
