// SPDX-License-Identifier: GPL-2.0
/*
 * Record validation follows the header's layout rules exactly: a reader that
 * accepted "close enough" records would hide ring bugs and make corruption in
 * a trace file look like data.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "record.h"

#define MG_REC_FLAGS_KNOWN	(MAGNET_REC_RETURN | MAGNET_REC_CAPTURE | \
				 MAGNET_REC_INTR | MAGNET_REC_NARGS_MASK)

static const char *const mg_rec_reasons[MG_REC_NERR] = {
	[0]			= "no error",
	[MG_REC_TRUNCATED]	= "record truncated",
	[MG_REC_SIZE_SMALL]	= "record size smaller than the 40-byte header",
	[MG_REC_SIZE_ALIGN]	= "record size not a multiple of 8",
	[MG_REC_SIZE_BIG]	= "record size larger than MAGNET_RECORD_MAX",
	[MG_REC_PAD]		= "padding record (event id 0)",
	[MG_REC_EVENT]		= "reserved event id (4..15)",
	[MG_REC_FLAGS]		= "flags undefined (for this layout) or more than 6 arguments",
	[MG_REC_LAYOUT]		= "record size does not match its layout",
	[MG_REC_MISALIGNED]	= "record not 8-byte aligned",
	[MG_REC_CAPTURE_LEN]	= "capture length does not match the record size",
	[MG_REC_CAPTURE_ARG]	= "capture argument not 0..5",
	[MG_REC_CAPTURE_PAD]	= "capture bytes past its length not zero",
	[MG_REC_HANDLER]	= "unknown handler (flags bits 8..11 above 4)",
	[MG_REC_SOCK_FAMILY]	= "sock record family neither 0, AF_INET nor AF_INET6",
	[MG_REC_RAW_LEN]	= "raw length does not match the record size",
	[MG_REC_RAW_RESERVED]	= "raw reserved field not zero",
	[MG_REC_RAW_PAD]	= "raw bytes past its length not zero",
	[MG_REC_SKB_LEN]	= "skb capture length past the record's data",
	[MG_REC_SKB_FIELD]	= "skb direction or layer undefined",
	[MG_REC_SKB_PAD]	= "skb bytes past its capture length not zero",
	[MG_REC_SWITCH_FIELD]	= "switch preempt not 0 or 1, or reserved bytes not zero",
};

const char *mg_record_strerror(int err)
{
	if (err < 0)
		err = -err;
	if (err >= MG_REC_NERR)
		return "unknown record error";
	return mg_rec_reasons[err];
}

/*
 * The capture length itself is not in the record, only rounded up to 8 in
 * its size: so len is 0 (unreadable) or within the last 8 bytes of the
 * room, which must hold at least one. Everything past len is zero: the
 * alignment bytes, or all of an unreadable capture's data.
 */
static int check_capture(const struct magnet_record *r, size_t fixed)
{
	const struct magnet_capture *c;
	size_t room, i;

	if (r->size < fixed + sizeof(*c) + MAGNET_RECORD_ALIGN)
		return -MG_REC_LAYOUT;
	c = (const struct magnet_capture *)((const char *)r + fixed);
	room = r->size - fixed - sizeof(*c);
	if (c->len && (c->len > room || c->len <= room - MAGNET_RECORD_ALIGN))
		return -MG_REC_CAPTURE_LEN;
	if (c->arg >= MAGNET_ARGS_MAX)
		return -MG_REC_CAPTURE_ARG;
	for (i = c->len; i < room; i++)
		if (c->data[i])
			return -MG_REC_CAPTURE_PAD;
	return 0;
}

/* "sock": exactly struct magnet_sock, an inet family or none. */
static int check_sock(const struct magnet_record *r)
{
	const struct magnet_sock *s = (const struct magnet_sock *)r->payload;

	if ((r->flags & ~MAGNET_REC_INTR) != MAGNET_HANDLER_SOCK << MAGNET_REC_HANDLER_SHIFT)
		return -MG_REC_FLAGS;
	if (r->size != MG_RECORD_SOCK_SIZE)
		return -MG_REC_LAYOUT;
	if (s->family != 0 && s->family != AF_INET && s->family != AF_INET6)
		return -MG_REC_SOCK_FAMILY;
	return 0;
}

/* "raw": struct magnet_raw, len bytes, zeros to the next multiple of 8. */
static int check_raw(const struct magnet_record *r)
{
	const struct magnet_raw *raw = (const struct magnet_raw *)r->payload;
	size_t room, i;

	if ((r->flags & ~MAGNET_REC_INTR) != MAGNET_HANDLER_RAW << MAGNET_REC_HANDLER_SHIFT)
		return -MG_REC_FLAGS;
	if (r->size < MAGNET_RECORD_HEADER + sizeof(*raw))
		return -MG_REC_LAYOUT;
	if (raw->reserved)
		return -MG_REC_RAW_RESERVED;
	room = r->size - MAGNET_RECORD_HEADER - sizeof(*raw);
	/* len rounds up to room: within its last 8 bytes, or 0 if empty. */
	if (raw->len > room ||
	    (room && raw->len <= room - MAGNET_RECORD_ALIGN))
		return -MG_REC_RAW_LEN;
	for (i = raw->len; i < room; i++)
		if (raw->data[i])
			return -MG_REC_RAW_PAD;
	return 0;
}

/* "skb": struct magnet_skb, caplen bytes, zeros to the end. */
static int check_skb(const struct magnet_record *r)
{
	const struct magnet_skb *skb = (const struct magnet_skb *)r->payload;
	size_t room, i;

	if ((r->flags & ~MAGNET_REC_INTR) != MAGNET_HANDLER_SKB << MAGNET_REC_HANDLER_SHIFT)
		return -MG_REC_FLAGS;
	if (r->size < MAGNET_RECORD_HEADER + sizeof(*skb))
		return -MG_REC_LAYOUT;
	room = r->size - MAGNET_RECORD_HEADER - sizeof(*skb);
	if (skb->caplen > room)
		return -MG_REC_SKB_LEN;
	if (skb->direction > MAGNET_SKB_DIR_IN || skb->layer > MAGNET_SKB_LAYER_LINK)
		return -MG_REC_SKB_FIELD;
	for (i = skb->caplen; i < room; i++)
		if (skb->data[i])
			return -MG_REC_SKB_PAD;
	return 0;
}

/* "switch": exactly struct magnet_switch. */
static bool switch_fields_ok(const struct magnet_switch *sw)
{
	return sw->preempt <= 1 && !sw->reserved[0] && !sw->reserved[1] && !sw->reserved[2];
}

static int check_switch(const struct magnet_record *r)
{
	if ((r->flags & ~MAGNET_REC_INTR) != MAGNET_HANDLER_SWITCH << MAGNET_REC_HANDLER_SHIFT)
		return -MG_REC_FLAGS;
	if (r->size != MG_RECORD_SWITCH_SIZE)
		return -MG_REC_LAYOUT;
	if (!switch_fields_ok((const struct magnet_switch *)r->payload))
		return -MG_REC_SWITCH_FIELD;
	return 0;
}

const char *mg_record_type(const struct magnet_record *r)
{
	if (mg_record_is_lost(r))
		return "lost";
	if (mg_record_is_task(r))
		return "task";
	if (mg_record_is_job_lost(r))
		return "job_lost";
	if (mg_record_handler(r) == MAGNET_HANDLER_RAW)
		return "custom";
	return mg_record_is_return(r) ? "kretprobe" : "kprobe";
}

int mg_record_check(const void *buf, size_t len, size_t off)
{
	const struct magnet_record *r;
	size_t avail, fixed;
	__u32 size;

	if (off > len)
		return -MG_REC_TRUNCATED;
	avail = len - off;
	if (((uintptr_t)buf + off) % MAGNET_RECORD_ALIGN)
		return -MG_REC_MISALIGNED;
	/* The size alone can already be judged, so say why, not "truncated". */
	if (avail < sizeof(r->size))
		return -MG_REC_TRUNCATED;
	r = (const struct magnet_record *)((const char *)buf + off);
	size = r->size;
	if (size < MAGNET_RECORD_HEADER)
		return -MG_REC_SIZE_SMALL;
	if (size % MAGNET_RECORD_ALIGN)
		return -MG_REC_SIZE_ALIGN;
	if (size > MAGNET_RECORD_MAX)
		return -MG_REC_SIZE_BIG;
	if (avail < size)
		return -MG_REC_TRUNCATED;

	switch (r->event_id) {
	case MAGNET_EVENT_PAD:
		return -MG_REC_PAD;
	case MAGNET_EVENT_LOST:
		if (r->flags)
			return -MG_REC_FLAGS;
		if (size != MAGNET_RECORD_HEADER + sizeof(struct magnet_lost))
			return -MG_REC_LAYOUT;
		return 0;
	case MAGNET_EVENT_TASK:
		if (r->flags)
			return -MG_REC_FLAGS;
		/* Before format 5, no uids. */
		if (size != MAGNET_RECORD_HEADER + sizeof(struct magnet_task) &&
		    size != MAGNET_RECORD_HEADER + MAGNET_TASK_V3_SIZE)
			return -MG_REC_LAYOUT;
		return 0;
	case MAGNET_EVENT_JOB_LOST:
		if (r->flags)
			return -MG_REC_FLAGS;
		if (size != MAGNET_RECORD_HEADER + sizeof(struct magnet_job_lost))
			return -MG_REC_LAYOUT;
		return 0;
	default:
		if (r->event_id < MAGNET_EVENT_FIRST_DYNAMIC)
			return -MG_REC_EVENT;
		break;
	}

	if (r->flags & ~(MG_REC_FLAGS_KNOWN | MAGNET_REC_HANDLER_MASK))
		return -MG_REC_FLAGS;
	switch (MAGNET_REC_HANDLER(r->flags)) {
	case MAGNET_HANDLER_GENERIC:
		break;
	case MAGNET_HANDLER_SOCK:
		return check_sock(r);
	case MAGNET_HANDLER_RAW:
		return check_raw(r);
	case MAGNET_HANDLER_SKB:
		return check_skb(r);
	case MAGNET_HANDLER_SWITCH:
		return check_switch(r);
	default:
		return -MG_REC_HANDLER;
	}
	if (MAGNET_REC_NARGS(r->flags) > MAGNET_ARGS_MAX)
		return -MG_REC_FLAGS;
	fixed = mg_record_probe_size(r->flags & MAGNET_REC_RETURN,
				     MAGNET_REC_NARGS(r->flags));
	if (r->flags & MAGNET_REC_CAPTURE)
		return check_capture(r, fixed);
	if (size != fixed)
		return -MG_REC_LAYOUT;
	return 0;
}

int mg_record_next(const void *buf, size_t len, size_t *off,
		   const struct magnet_record **out)
{
	int err;

	if (*off == len)
		return 0;
	err = mg_record_check(buf, len, *off);
	if (err)
		return err;
	*out = (const struct magnet_record *)((const char *)buf + *off);
	*off += (*out)->size;
	return 1;
}

static void fill_header(struct magnet_record *r, const struct mg_record_hdr *h,
			__u32 size, __u16 event_id, __u16 flags)
{
	r->size = size;
	r->event_id = event_id;
	r->flags = flags;
	if (h->intr && event_id >= MAGNET_EVENT_FIRST_DYNAMIC)
		r->flags |= MAGNET_REC_INTR;
	r->cpu = h->cpu;
	r->cgroup = h->cgroup;
	r->abstract_id = h->abstract_id;
	r->timestamp = h->timestamp;
	r->pid = h->pid;
	r->tgid = h->tgid;
}

static ssize_t encode_probe(void *buf, size_t len, const struct mg_record_hdr *h,
			    bool ret, __s64 retval, __u64 latency_ns,
			    const __u64 *args, unsigned int nargs,
			    const struct mg_record_cap *cap)
{
	struct magnet_record *r = buf;
	struct magnet_capture *c;
	size_t size;
	__u64 *p;

	if (nargs > MAGNET_ARGS_MAX || (nargs && !args) ||
	    h->event_id < MAGNET_EVENT_FIRST_DYNAMIC)
		return -EINVAL;
	if (cap) {
		if (!cap->len || cap->arg >= MAGNET_ARGS_MAX ||
		    cap->len > MAGNET_PAYLOAD_MAX)
			return -EINVAL;
		size = mg_record_capture_size(ret, nargs, cap->len);
		if (size > MAGNET_RECORD_MAX)
			return -EINVAL;
	} else {
		size = mg_record_probe_size(ret, nargs);
	}
	if (len < size)
		return -ENOSPC;
	fill_header(r, h, size, h->event_id,
		    (ret ? MAGNET_REC_RETURN : 0) |
		    (cap ? MAGNET_REC_CAPTURE : 0) |
		    (nargs << MAGNET_REC_NARGS_SHIFT));
	p = (__u64 *)r->payload;
	if (ret) {
		memcpy(p++, &retval, sizeof(retval));
		*p++ = latency_ns;
	}
	if (nargs)
		memcpy(p, args, nargs * sizeof(*args));
	if (!cap)
		return size;
	c = (struct magnet_capture *)(p + nargs);
	c->len = cap->data ? cap->len : 0;
	c->arg = cap->arg;
	memset(c->data, 0, (unsigned char *)r + size - c->data);
	if (cap->data)
		memcpy(c->data, cap->data, cap->len);
	return size;
}

ssize_t mg_record_encode_kprobe(void *buf, size_t len,
				const struct mg_record_hdr *h,
				const __u64 *args, unsigned int nargs)
{
	return encode_probe(buf, len, h, false, 0, 0, args, nargs, NULL);
}

ssize_t mg_record_encode_kretprobe(void *buf, size_t len,
				   const struct mg_record_hdr *h,
				   __s64 retval, __u64 latency_ns,
				   const __u64 *args, unsigned int nargs)
{
	return encode_probe(buf, len, h, true, retval, latency_ns, args, nargs,
			    NULL);
}

ssize_t mg_record_encode_kprobe_cap(void *buf, size_t len,
				    const struct mg_record_hdr *h,
				    const __u64 *args, unsigned int nargs,
				    const struct mg_record_cap *cap)
{
	return encode_probe(buf, len, h, false, 0, 0, args, nargs, cap);
}

ssize_t mg_record_encode_kretprobe_cap(void *buf, size_t len,
				       const struct mg_record_hdr *h,
				       __s64 retval, __u64 latency_ns,
				       const __u64 *args, unsigned int nargs,
				       const struct mg_record_cap *cap)
{
	return encode_probe(buf, len, h, true, retval, latency_ns, args, nargs,
			    cap);
}

ssize_t mg_record_encode_sock(void *buf, size_t len,
			      const struct mg_record_hdr *h,
			      const struct magnet_sock *sock)
{
	struct magnet_record *r = buf;

	if (h->event_id < MAGNET_EVENT_FIRST_DYNAMIC ||
	    (sock->family != 0 && sock->family != AF_INET &&
	     sock->family != AF_INET6))
		return -EINVAL;
	if (len < MG_RECORD_SOCK_SIZE)
		return -ENOSPC;
	fill_header(r, h, MG_RECORD_SOCK_SIZE, h->event_id,
		    MAGNET_HANDLER_SOCK << MAGNET_REC_HANDLER_SHIFT);
	memcpy(r->payload, sock, sizeof(*sock));
	return MG_RECORD_SOCK_SIZE;
}

ssize_t mg_record_encode_raw(void *buf, size_t len,
			     const struct mg_record_hdr *h,
			     const void *data, size_t dlen)
{
	struct magnet_record *r = buf;
	struct magnet_raw *raw;
	size_t size;

	if (h->event_id < MAGNET_EVENT_FIRST_DYNAMIC || (dlen && !data) ||
	    dlen > MAGNET_PAYLOAD_MAX - sizeof(*raw))
		return -EINVAL;
	size = mg_record_raw_size(dlen);
	if (len < size)
		return -ENOSPC;
	fill_header(r, h, size, h->event_id,
		    MAGNET_HANDLER_RAW << MAGNET_REC_HANDLER_SHIFT);
	raw = (struct magnet_raw *)r->payload;
	raw->len = dlen;
	raw->reserved = 0;
	memset(raw->data, 0, size - MAGNET_RECORD_HEADER - sizeof(*raw));
	if (dlen)
		memcpy(raw->data, data, dlen);
	return size;
}

ssize_t mg_record_encode_skb(void *buf, size_t len,
			     const struct mg_record_hdr *h,
			     const struct magnet_skb *skb, const void *data,
			     size_t cap_len)
{
	struct magnet_record *r = buf;
	struct magnet_skb *p;
	size_t size = mg_record_skb_size(cap_len);

	if (h->event_id < MAGNET_EVENT_FIRST_DYNAMIC || skb->caplen > cap_len ||
	    (skb->caplen && !data) || size > MAGNET_RECORD_MAX ||
	    skb->direction > MAGNET_SKB_DIR_IN || skb->layer > MAGNET_SKB_LAYER_LINK)
		return -EINVAL;
	if (len < size)
		return -ENOSPC;
	fill_header(r, h, size, h->event_id,
		    MAGNET_HANDLER_SKB << MAGNET_REC_HANDLER_SHIFT);
	p = (struct magnet_skb *)r->payload;
	memcpy(p, skb, sizeof(*p));
	memset(p->data, 0, size - MAGNET_RECORD_HEADER - sizeof(*p));
	if (skb->caplen)
		memcpy(p->data, data, skb->caplen);
	return size;
}

ssize_t mg_record_encode_switch(void *buf, size_t len,
				const struct mg_record_hdr *h,
				const struct magnet_switch *sw)
{
	struct magnet_record *r = buf;

	if (h->event_id < MAGNET_EVENT_FIRST_DYNAMIC || !switch_fields_ok(sw))
		return -EINVAL;
	if (len < MG_RECORD_SWITCH_SIZE)
		return -ENOSPC;
	fill_header(r, h, MG_RECORD_SWITCH_SIZE, h->event_id,
		    MAGNET_HANDLER_SWITCH << MAGNET_REC_HANDLER_SHIFT);
	memcpy(r->payload, sw, sizeof(*sw));
	return MG_RECORD_SWITCH_SIZE;
}

ssize_t mg_record_encode_task(void *buf, size_t len,
			      const struct mg_record_hdr *h, const char *comm)
{
	return mg_record_encode_task_as(buf, len, h, comm, MG_UID_UNKNOWN,
					MG_UID_UNKNOWN);
}

ssize_t mg_record_encode_task_as(void *buf, size_t len,
				 const struct mg_record_hdr *h, const char *comm,
				 __u32 uid, __u32 euid)
{
	struct magnet_record *r = buf;
	struct magnet_task *t;
	size_t size = MAGNET_RECORD_HEADER + sizeof(*t);

	if (len < size)
		return -ENOSPC;
	fill_header(r, h, size, MAGNET_EVENT_TASK, 0);
	t = (struct magnet_task *)r->payload;
	memset(t->comm, 0, sizeof(t->comm));	/* NUL-padded, as the kernel's */
	memcpy(t->comm, comm, strnlen(comm, sizeof(t->comm)));
	t->uid = uid;
	t->euid = euid;
	return size;
}

ssize_t mg_record_encode_job_lost(void *buf, size_t len,
				  const struct mg_record_hdr *h, __u64 cgroup, __u64 fair)
{
	struct magnet_record *r = buf;
	size_t size = MAGNET_RECORD_HEADER + sizeof(struct magnet_job_lost);
	struct mg_record_hdr jh = *h;

	if (len < size)
		return -ENOSPC;
	jh.cgroup = (__u32)cgroup;
	jh.abstract_id = cgroup;
	fill_header(r, &jh, size, MAGNET_EVENT_JOB_LOST, 0);
	((struct magnet_job_lost *)r->payload)->fair = fair;
	return size;
}

ssize_t mg_record_encode_lost(void *buf, size_t len,
			      const struct mg_record_hdr *h,
			      const struct magnet_lost *lost)
{
	struct magnet_record *r = buf;
	size_t size = MAGNET_RECORD_HEADER + sizeof(*lost);

	if (len < size)
		return -ENOSPC;
	fill_header(r, h, size, MAGNET_EVENT_LOST, 0);
	memcpy(r->payload, lost, sizeof(*lost));
	return size;
}
