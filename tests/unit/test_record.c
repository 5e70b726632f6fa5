// SPDX-License-Identifier: GPL-2.0
/*
 * lib/record.c: encode/decode round trips (captures, sock and raw records
 * too), every validation error, fuzz.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "record.h"
#include "testutil.h"

/* 8-byte aligned scratch space for records. */
static __u64 buf64[65536 / 8];
#define BUF ((unsigned char *)buf64)

static const struct mg_record_hdr hdr = {
	.event_id = 42,
	.cpu = 1000,			/* no 64-CPU limit */
	.cgroup = 0x80000001,		/* any 32 bits: a cgroup id's low half */
	.abstract_id = 0xffff888012345678ULL,
	.timestamp = 0x123456789abcdefULL,
	.pid = 4242,
	.tgid = 4200,
};

static const __u64 args6[6] = {
	1, 0xffffffffffffffffULL, 0x8000000000000000ULL, 3, 4, 0xdeadbeef
};

static void check_header(const struct magnet_record *r, __u16 id)
{
	ck_assert_uint_eq(r->event_id, id);
	ck_assert_uint_eq(r->cpu, hdr.cpu);
	ck_assert_uint_eq(r->cgroup, hdr.cgroup);
	ck_assert_uint_eq(r->abstract_id, hdr.abstract_id);
	ck_assert_uint_eq(r->timestamp, hdr.timestamp);
	ck_assert_uint_eq(r->pid, hdr.pid);
	ck_assert_uint_eq(r->tgid, hdr.tgid);
}

static int check_at(size_t len)
{
	return mg_record_check(BUF, len, 0);
}

/* Encode at BUF, then walk: exactly one record, equal to what went in. */
static const struct magnet_record *decode_one(ssize_t len)
{
	const struct magnet_record *r = NULL;
	size_t off = 0;

	ck_assert_int_gt(len, 0);
	ck_assert_int_eq(mg_record_next(BUF, len, &off, &r), 1);
	ck_assert_ptr_eq(r, BUF);
	ck_assert_uint_eq(off, (size_t)len);
	ck_assert_uint_eq(r->size, (size_t)len);
	ck_assert_int_eq(mg_record_next(BUF, len, &off, &r), 0);
	return r;
}

START_TEST(kprobe_roundtrip)
{
	unsigned int nargs = _i, i;
	ssize_t len = mg_record_encode_kprobe(BUF, sizeof(buf64), &hdr, args6,
					      nargs);
	const struct magnet_record *r = decode_one(len);

	ck_assert_int_eq(len, 40 + 8 * nargs);
	check_header(r, hdr.event_id);
	ck_assert(!mg_record_is_return(r));
	ck_assert(!mg_record_is_lost(r));
	ck_assert_uint_eq(mg_record_nargs(r), nargs);
	for (i = 0; i < nargs; i++)
		ck_assert_uint_eq(mg_record_args(r)[i], args6[i]);
}
END_TEST

START_TEST(kretprobe_roundtrip)
{
	static const __s64 rets[] = { 0, -1, -11, INT64_MIN, INT64_MAX };
	unsigned int nargs = _i, i, k;

	for (k = 0; k < 5; k++) {
		ssize_t len = mg_record_encode_kretprobe(BUF, sizeof(buf64),
							 &hdr, rets[k], 12345 + k,
							 args6, nargs);
		const struct magnet_record *r = decode_one(len);

		ck_assert_int_eq(len, 56 + 8 * nargs);
		check_header(r, hdr.event_id);
		ck_assert(mg_record_is_return(r));
		ck_assert_uint_eq(mg_record_nargs(r), nargs);
		ck_assert_int_eq(mg_record_retval(r), rets[k]);
		ck_assert_uint_eq(mg_record_latency(r), 12345 + k);
		for (i = 0; i < nargs; i++)
			ck_assert_uint_eq(mg_record_args(r)[i], args6[i]);
	}
}
END_TEST

/* Capture lengths the round trips cover: below, at and above 8, and big. */
static const unsigned int cap_lens[] = { 1, 7, 8, 4000 };

/* Deterministic, position-dependent bytes that include 0 and 0xff. */
static unsigned char cap_byte(unsigned int i)
{
	return i * 37 + 11;
}

/* The record's capture: arg, len, data bytes, zero alignment bytes. */
static void check_capture(const struct magnet_record *r, bool ret,
			  unsigned int nargs, unsigned int len,
			  unsigned int arg, bool readable)
{
	const struct magnet_capture *c = mg_record_capture(r);
	size_t room = (len + 7) & ~7U, i;

	ck_assert(mg_record_has_capture(r));
	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_eq(c, (const unsigned char *)r +
			 mg_record_probe_size(ret, nargs));
	ck_assert_uint_eq(r->size, mg_record_probe_size(ret, nargs) + 8 + room);
	ck_assert_uint_eq(r->size, mg_record_capture_size(ret, nargs, len));
	ck_assert_uint_eq(mg_record_capture_room(r), room);
	ck_assert_uint_eq(c->len, readable ? len : 0);
	ck_assert_uint_eq(c->arg, arg);
	for (i = 0; i < room; i++)
		tu_assert_op(c->data[i], ==,
			     readable && i < len ? cap_byte(i) : 0);
}

START_TEST(capture_roundtrip)
{
	unsigned int nargs = _i, i, k, ret;
	unsigned char data[4000];

	for (i = 0; i < sizeof(data); i++)
		data[i] = cap_byte(i);
	for (ret = 0; ret < 2; ret++) {
		for (k = 0; k < 4; k++) {
			struct mg_record_cap cap = {
				.len = cap_lens[k],
				.arg = (nargs + k) % MAGNET_ARGS_MAX,
				.data = data,
			};
			const struct magnet_record *r;
			ssize_t len;

			/* Dirty the buffer: alignment bytes must be written. */
			memset(buf64, 0xa5, sizeof(buf64));
			len = ret ? mg_record_encode_kretprobe_cap(BUF, sizeof(buf64), &hdr,
								   -5, 777, args6, nargs, &cap)
				  : mg_record_encode_kprobe_cap(BUF, sizeof(buf64), &hdr,
								args6, nargs, &cap);
			r = decode_one(len);
			check_header(r, hdr.event_id);
			ck_assert_uint_eq(mg_record_is_return(r), ret);
			ck_assert_uint_eq(mg_record_nargs(r), nargs);
			for (i = 0; i < nargs; i++)
				ck_assert_uint_eq(mg_record_args(r)[i], args6[i]);
			if (ret) {
				ck_assert_int_eq(mg_record_retval(r), -5);
				ck_assert_uint_eq(mg_record_latency(r), 777);
			}
			check_capture(r, ret, nargs, cap.len, cap.arg, true);
		}
	}
}
END_TEST

/* Unreadable memory: len 0, data all zero, whatever the buffer held. */
START_TEST(capture_unreadable)
{
	unsigned int nargs = _i, k, ret;

	for (ret = 0; ret < 2; ret++) {
		for (k = 0; k < 4; k++) {
			struct mg_record_cap cap = {
				.len = cap_lens[k], .arg = 5, .data = NULL,
			};
			const struct magnet_record *r;
			ssize_t len;

			memset(buf64, 0xff, sizeof(buf64));
			len = ret ? mg_record_encode_kretprobe_cap(BUF, sizeof(buf64), &hdr,
								   0, 0, args6, nargs, &cap)
				  : mg_record_encode_kprobe_cap(BUF, sizeof(buf64), &hdr,
								args6, nargs, &cap);
			r = decode_one(len);
			check_capture(r, ret, nargs, cap.len, 5, false);
		}
	}
}
END_TEST

START_TEST(capture_accessors)
{
	const struct magnet_record *r = (const struct magnet_record *)BUF;
	struct mg_record_cap cap = { .len = 3, .arg = 2, .data = "abc" };
	struct magnet_lost l = { 0 };

	/* No capture flag: no capture. */
	mg_record_encode_kprobe(BUF, sizeof(buf64), &hdr, args6, 3);
	ck_assert(!mg_record_has_capture(r));
	ck_assert_ptr_null(mg_record_capture(r));
	mg_record_encode_kretprobe(BUF, sizeof(buf64), &hdr, 0, 0, args6, 3);
	ck_assert_ptr_null(mg_record_capture(r));
	mg_record_encode_lost(BUF, sizeof(buf64), &hdr, &l);
	ck_assert_ptr_null(mg_record_capture(r));
	/* The old encoders are the _cap ones without a capture. */
	ck_assert_int_eq(mg_record_encode_kprobe_cap(BUF, sizeof(buf64), &hdr, args6, 2, NULL), 56);
	ck_assert_ptr_null(mg_record_capture(r));
	ck_assert_int_eq(mg_record_encode_kretprobe_cap(BUF, sizeof(buf64), &hdr, 0, 0, NULL, 0, NULL), 56);
	ck_assert_ptr_null(mg_record_capture(r));
	/* The args stay where they were; the capture follows them. */
	ck_assert_int_eq(mg_record_encode_kretprobe_cap(BUF, sizeof(buf64), &hdr, 1, 2, args6, 2, &cap), 88);
	ck_assert_uint_eq(r->flags, MAGNET_REC_RETURN | MAGNET_REC_CAPTURE |
			  2 << MAGNET_REC_NARGS_SHIFT);
	ck_assert_uint_eq(mg_record_args(r)[1], args6[1]);
	ck_assert_ptr_eq(mg_record_capture(r), BUF + 72);
	ck_assert_int_eq(memcmp(mg_record_capture(r)->data, "abc\0\0\0\0\0", 8), 0);
	/* Sizes: rounded up to 8, header included. */
	ck_assert_uint_eq(mg_record_capture_size(false, 0, 1), 56);
	ck_assert_uint_eq(mg_record_capture_size(false, 0, 8), 56);
	ck_assert_uint_eq(mg_record_capture_size(false, 0, 9), 64);
	ck_assert_uint_eq(mg_record_capture_size(true, 6, 4000), 4112);
}
END_TEST

START_TEST(lost_roundtrip)
{
	struct magnet_lost l = { 1, 2, 3, UINT64_MAX }, sum = { 0 };
	ssize_t len = mg_record_encode_lost(BUF, sizeof(buf64), &hdr, &l);
	const struct magnet_record *r = decode_one(len);

	ck_assert_int_eq(len, 72);
	check_header(r, MAGNET_EVENT_LOST);
	ck_assert_uint_eq(r->flags, 0);
	ck_assert(mg_record_is_lost(r));
	ck_assert_uint_eq(mg_record_lost(r)->full, 1);
	ck_assert_uint_eq(mg_record_lost(r)->too_big, 2);
	ck_assert_uint_eq(mg_record_lost(r)->nesting, 3);
	ck_assert_uint_eq(mg_record_lost(r)->overwritten, UINT64_MAX);
	mg_lost_add(&sum, mg_record_lost(r));
	mg_lost_add(&sum, mg_record_lost(r));
	ck_assert_uint_eq(sum.nesting, 6);
	l.overwritten = 4;
	ck_assert_uint_eq(mg_lost_total(&l), 10);
}
END_TEST

START_TEST(job_lost_roundtrip)
{
	ssize_t len = mg_record_encode_job_lost(BUF, sizeof(buf64), &hdr, 0x100000007ULL, 42);
	const struct magnet_record *r = decode_one(len);

	ck_assert_int_eq(len, 48);
	ck_assert_uint_eq(r->event_id, MAGNET_EVENT_JOB_LOST);
	ck_assert_uint_eq(r->flags, 0);
	ck_assert(mg_record_is_job_lost(r) && mg_record_is_meta(r) && !mg_record_is_lost(r));
	ck_assert_str_eq(mg_record_type(r), "job_lost");
	ck_assert_uint_eq(r->abstract_id, 0x100000007ULL);	/* the job, whole */
	ck_assert_uint_eq(r->cgroup, 7);
	ck_assert_uint_eq(mg_record_job_lost(r), 42);
	ck_assert_uint_eq(r->timestamp, hdr.timestamp);
	/* Its one layout: a byte more or less is refused. */
	((struct magnet_record *)BUF)->size = 56;
	ck_assert_int_eq(mg_record_check(BUF, 56, 0), -MG_REC_LAYOUT);
}
END_TEST

/* No generic payload on a named handler's record. */
static void check_no_generic(const struct magnet_record *r)
{
	ck_assert(!mg_record_is_lost(r));
	ck_assert(!mg_record_is_return(r));
	ck_assert(!mg_record_has_capture(r));
	ck_assert_ptr_null(mg_record_capture(r));
	ck_assert_uint_eq(mg_record_nargs(r), 0);
}

START_TEST(sock_roundtrip)
{
	static const __u16 families[] = { 0, AF_INET, AF_INET6 };
	struct magnet_sock s = {
		.protocol = IPPROTO_TCP,
		.state = 1,
		.sport = htons(5001),
		.dport = htons(80),
		.size = 0xfedcba9876543210ULL,
	};
	const struct magnet_record *r;
	unsigned int k, i;
	ssize_t len;

	for (i = 0; i < 16; i++) {
		s.saddr[i] = i + 1;
		s.daddr[i] = 0xff - i;
	}
	for (k = 0; k < 3; k++) {
		s.family = families[k];
		memset(buf64, 0xa5, sizeof(buf64));
		len = mg_record_encode_sock(BUF, sizeof(buf64), &hdr, &s);
		ck_assert_int_eq(len, 88);
		ck_assert_int_eq(len, MG_RECORD_SOCK_SIZE);
		r = decode_one(len);
		check_header(r, hdr.event_id);
		ck_assert_uint_eq(r->flags, MAGNET_HANDLER_SOCK << MAGNET_REC_HANDLER_SHIFT);
		ck_assert_uint_eq(mg_record_handler(r), MAGNET_HANDLER_SOCK);
		ck_assert_str_eq(mg_record_type(r), "kprobe");
		check_no_generic(r);
		ck_assert_ptr_null(mg_record_raw(r));
		ck_assert_ptr_eq(mg_record_sock(r), r->payload);
		ck_assert_int_eq(memcmp(mg_record_sock(r), &s, sizeof(s)), 0);
		ck_assert_uint_eq(mg_record_sock(r)->family, families[k]);
		ck_assert_uint_eq(ntohs(mg_record_sock(r)->dport), 80);
		ck_assert_uint_eq(mg_record_sock(r)->size, s.size);
	}
	/* Random ones, every family. */
	tu_seed(99);
	for (k = 0; k < 1000; k++) {
		tu_random_sock(&s);
		len = mg_record_encode_sock(BUF, sizeof(buf64), &hdr, &s);
		tu_assert_int(len, ==, 88);
		tu_assert_int(mg_record_check(BUF, len, 0), ==, 0);
		tu_assert(!memcmp(mg_record_sock((struct magnet_record *)BUF), &s, sizeof(s)));
	}
}
END_TEST

/* Raw lengths the round trips cover: empty, around 8, the largest. */
static const unsigned int raw_lens[] = {
	0, 1, 7, 8, 9, 16, 100, MAGNET_PAYLOAD_MAX - 8
};

START_TEST(raw_roundtrip)
{
	unsigned char data[MAGNET_PAYLOAD_MAX];
	const struct magnet_record *r;
	const struct magnet_raw *raw;
	unsigned int k, i;
	size_t room;
	ssize_t len;

	for (i = 0; i < sizeof(data); i++)
		data[i] = cap_byte(i);
	for (k = 0; k < sizeof(raw_lens) / sizeof(raw_lens[0]); k++) {
		room = (raw_lens[k] + 7) & ~7U;
		/* Dirty the buffer: alignment bytes must be written. */
		memset(buf64, 0xff, sizeof(buf64));
		len = mg_record_encode_raw(BUF, sizeof(buf64), &hdr, data, raw_lens[k]);
		ck_assert_int_eq(len, 48 + room);
		ck_assert_uint_eq(mg_record_raw_size(raw_lens[k]), 48 + room);
		r = decode_one(len);
		check_header(r, hdr.event_id);
		ck_assert_uint_eq(r->flags, MAGNET_HANDLER_RAW << MAGNET_REC_HANDLER_SHIFT);
		ck_assert_uint_eq(mg_record_handler(r), MAGNET_HANDLER_RAW);
		ck_assert_str_eq(mg_record_type(r), "custom");
		check_no_generic(r);
		ck_assert_ptr_null(mg_record_sock(r));
		raw = mg_record_raw(r);
		ck_assert_ptr_eq(raw, r->payload);
		ck_assert_uint_eq(raw->len, raw_lens[k]);
		ck_assert_uint_eq(raw->reserved, 0);
		for (i = 0; i < room; i++)
			tu_assert_op(raw->data[i], ==, i < raw_lens[k] ? cap_byte(i) : 0);
	}
	/* The largest fills MAGNET_RECORD_MAX; no data may be NULL. */
	ck_assert_uint_eq(mg_record_raw_size(MAGNET_PAYLOAD_MAX - 8), MAGNET_RECORD_MAX);
	ck_assert_int_eq(mg_record_encode_raw(BUF, sizeof(buf64), &hdr, NULL, 0), 48);
	ck_assert_int_eq(check_at(48), 0);
}
END_TEST

START_TEST(handler_accessors)
{
	const struct magnet_record *r = (const struct magnet_record *)BUF;
	struct magnet_lost l = { 0 };

	/* Generic records and LOST: handler 0, no sock, no raw. */
	mg_record_encode_kprobe(BUF, sizeof(buf64), &hdr, args6, 3);
	ck_assert_uint_eq(mg_record_handler(r), MAGNET_HANDLER_GENERIC);
	ck_assert_ptr_null(mg_record_sock(r));
	ck_assert_ptr_null(mg_record_raw(r));
	ck_assert_str_eq(mg_record_type(r), "kprobe");
	mg_record_encode_kretprobe(BUF, sizeof(buf64), &hdr, 0, 0, args6, 3);
	ck_assert_uint_eq(mg_record_handler(r), MAGNET_HANDLER_GENERIC);
	ck_assert_ptr_null(mg_record_sock(r));
	ck_assert_str_eq(mg_record_type(r), "kretprobe");
	mg_record_encode_lost(BUF, sizeof(buf64), &hdr, &l);
	ck_assert_uint_eq(mg_record_handler(r), MAGNET_HANDLER_GENERIC);
	ck_assert_ptr_null(mg_record_raw(r));
	ck_assert_str_eq(mg_record_type(r), "lost");
	ck_assert_uint_eq(sizeof(struct magnet_sock), 48);
	ck_assert_uint_eq(sizeof(struct magnet_raw), 8);
}
END_TEST

START_TEST(encode_named_errors)
{
	static const unsigned char data[MAGNET_PAYLOAD_MAX];
	struct magnet_sock s = { .family = AF_INET };
	struct mg_record_hdr h = hdr;
	unsigned int fam;

	/* sock: an inet family or none, room for 88 bytes. */
	for (fam = 0; fam < 65536; fam++) {
		s.family = fam;
		tu_assert_int(mg_record_encode_sock(BUF, sizeof(buf64), &h, &s), ==,
			      fam == 0 || fam == AF_INET || fam == AF_INET6 ? 88 : -EINVAL);
	}
	s.family = AF_INET6;
	ck_assert_int_eq(mg_record_encode_sock(BUF, 87, &h, &s), -ENOSPC);
	ck_assert_int_eq(mg_record_encode_sock(BUF, 88, &h, &s), 88);
	/* raw: data for every byte, at most 4088 of them. */
	ck_assert_int_eq(mg_record_encode_raw(BUF, sizeof(buf64), &h, NULL, 1), -EINVAL);
	ck_assert_int_eq(mg_record_encode_raw(BUF, sizeof(buf64), &h, data,
					      MAGNET_PAYLOAD_MAX - 7), -EINVAL);
	ck_assert_int_eq(mg_record_encode_raw(BUF, sizeof(buf64), &h, data,
					      SIZE_MAX), -EINVAL);
	ck_assert_int_eq(mg_record_encode_raw(BUF, sizeof(buf64), &h, data,
					      MAGNET_PAYLOAD_MAX - 8), MAGNET_RECORD_MAX);
	/* Buffer space counts the alignment bytes. */
	ck_assert_int_eq(mg_record_encode_raw(BUF, 63, &h, data, 9), -ENOSPC);
	ck_assert_int_eq(mg_record_encode_raw(BUF, 64, &h, data, 9), 64);
	ck_assert_int_eq(mg_record_encode_raw(BUF, 47, &h, NULL, 0), -ENOSPC);
	/* Both need a probe's event id. */
	h.event_id = MAGNET_EVENT_LOST;
	ck_assert_int_eq(mg_record_encode_sock(BUF, sizeof(buf64), &h, &s), -EINVAL);
	ck_assert_int_eq(mg_record_encode_raw(BUF, sizeof(buf64), &h, data, 1), -EINVAL);
	h.event_id = MAGNET_EVENT_FIRST_DYNAMIC - 1;
	ck_assert_int_eq(mg_record_encode_sock(BUF, sizeof(buf64), &h, &s), -EINVAL);
	ck_assert_int_eq(mg_record_encode_raw(BUF, sizeof(buf64), &h, NULL, 0), -EINVAL);
	h.event_id = MAGNET_EVENT_FIRST_DYNAMIC;
	ck_assert_int_eq(mg_record_encode_sock(BUF, sizeof(buf64), &h, &s), 88);
	ck_assert_int_eq(mg_record_encode_raw(BUF, sizeof(buf64), &h, NULL, 0), 48);
}
END_TEST

START_TEST(encode_errors)
{
	struct mg_record_hdr h = hdr;
	struct magnet_lost l = { 0 };

	ck_assert_int_eq(mg_record_encode_kprobe(BUF, sizeof(buf64), &h, args6, 7), -EINVAL);
	ck_assert_int_eq(mg_record_encode_kretprobe(BUF, sizeof(buf64), &h, 0, 0, args6, 7), -EINVAL);
	ck_assert_int_eq(mg_record_encode_kprobe(BUF, sizeof(buf64), &h, NULL, 1), -EINVAL);
	ck_assert_int_eq(mg_record_encode_kprobe(BUF, sizeof(buf64), &h, NULL, 0), 40);
	ck_assert_int_eq(mg_record_encode_kprobe(BUF, 47, &h, args6, 1), -ENOSPC);
	ck_assert_int_eq(mg_record_encode_kprobe(BUF, 48, &h, args6, 1), 48);
	ck_assert_int_eq(mg_record_encode_kretprobe(BUF, 55, &h, 0, 0, NULL, 0), -ENOSPC);
	ck_assert_int_eq(mg_record_encode_lost(BUF, 71, &h, &l), -ENOSPC);
	h.event_id = MAGNET_EVENT_FIRST_DYNAMIC - 1;
	ck_assert_int_eq(mg_record_encode_kprobe(BUF, sizeof(buf64), &h, NULL, 0), -EINVAL);
	h.event_id = MAGNET_EVENT_LOST;
	ck_assert_int_eq(mg_record_encode_kretprobe(BUF, sizeof(buf64), &h, 0, 0, NULL, 0), -EINVAL);
	h.event_id = MAGNET_EVENT_MAX;
	ck_assert_int_eq(mg_record_encode_kprobe(BUF, sizeof(buf64), &h, NULL, 0), 40);
}
END_TEST

START_TEST(encode_capture_errors)
{
	static const unsigned char data[MAGNET_PAYLOAD_MAX];
	struct mg_record_cap cap = { .len = 1, .arg = 0, .data = data };
	struct mg_record_hdr h = hdr;

	/* Capture length 0 and arguments past the sixth do not exist. */
	cap.len = 0;
	ck_assert_int_eq(mg_record_encode_kprobe_cap(BUF, sizeof(buf64), &h, NULL, 0, &cap), -EINVAL);
	cap.len = 1;
	cap.arg = MAGNET_ARGS_MAX;
	ck_assert_int_eq(mg_record_encode_kprobe_cap(BUF, sizeof(buf64), &h, NULL, 0, &cap), -EINVAL);
	cap.arg = MAGNET_ARGS_MAX - 1;
	ck_assert_int_eq(mg_record_encode_kprobe_cap(BUF, sizeof(buf64), &h, NULL, 0, &cap), 56);
	/* The whole record must fit MAGNET_RECORD_MAX. */
	cap.len = MAGNET_PAYLOAD_MAX - 8;
	ck_assert_int_eq(mg_record_encode_kprobe_cap(BUF, sizeof(buf64), &h, NULL, 0, &cap),
			 MAGNET_RECORD_MAX);
	ck_assert_int_eq(mg_record_check(BUF, MAGNET_RECORD_MAX, 0), 0);
	cap.len = MAGNET_PAYLOAD_MAX - 7;
	ck_assert_int_eq(mg_record_encode_kprobe_cap(BUF, sizeof(buf64), &h, NULL, 0, &cap), -EINVAL);
	cap.len = MAGNET_PAYLOAD_MAX - 8 - 16 - 48;
	ck_assert_int_eq(mg_record_encode_kretprobe_cap(BUF, sizeof(buf64), &h, 0, 0, args6, 6, &cap),
			 MAGNET_RECORD_MAX);
	cap.len++;
	ck_assert_int_eq(mg_record_encode_kretprobe_cap(BUF, sizeof(buf64), &h, 0, 0, args6, 6, &cap), -EINVAL);
	cap.len = UINT32_MAX;
	ck_assert_int_eq(mg_record_encode_kprobe_cap(BUF, sizeof(buf64), &h, NULL, 0, &cap), -EINVAL);
	/* Buffer space counts the alignment bytes. */
	cap.len = 9;
	ck_assert_int_eq(mg_record_encode_kprobe_cap(BUF, 63, &h, NULL, 0, &cap), -ENOSPC);
	ck_assert_int_eq(mg_record_encode_kprobe_cap(BUF, 64, &h, NULL, 0, &cap), 64);
	ck_assert_int_eq(mg_record_encode_kretprobe_cap(BUF, 79, &h, 0, 0, NULL, 0, &cap), -ENOSPC);
	/* The other checks still apply. */
	ck_assert_int_eq(mg_record_encode_kprobe_cap(BUF, sizeof(buf64), &h, args6, 7, &cap), -EINVAL);
	ck_assert_int_eq(mg_record_encode_kprobe_cap(BUF, sizeof(buf64), &h, NULL, 1, &cap), -EINVAL);
	h.event_id = MAGNET_EVENT_LOST;
	ck_assert_int_eq(mg_record_encode_kretprobe_cap(BUF, sizeof(buf64), &h, 0, 0, NULL, 0, &cap), -EINVAL);
}
END_TEST

/* A valid kprobe with 2 args (size 56) at BUF, as a mutable record. */
static struct magnet_record *good(void)
{
	memset(buf64, 0, sizeof(buf64));
	ck_assert_int_eq(mg_record_encode_kprobe(BUF, sizeof(buf64), &hdr, args6, 2), 56);
	return (struct magnet_record *)BUF;
}

START_TEST(err_size_small)
{
	static const __u32 sizes[] = { 0, 8, 32, 39 };
	unsigned int i;

	for (i = 0; i < 4; i++) {
		good()->size = sizes[i];
		ck_assert_int_eq(check_at(56), -MG_REC_SIZE_SMALL);
	}
}
END_TEST

START_TEST(err_size_align)
{
	good()->size = 60;
	ck_assert_int_eq(check_at(64), -MG_REC_SIZE_ALIGN);
	good()->size = 41;
	ck_assert_int_eq(check_at(64), -MG_REC_SIZE_ALIGN);
}
END_TEST

START_TEST(err_size_big)
{
	good()->size = MAGNET_RECORD_MAX + 8;
	ck_assert_int_eq(check_at(sizeof(buf64)), -MG_REC_SIZE_BIG);
	good()->size = UINT32_MAX & ~7U;
	ck_assert_int_eq(check_at(sizeof(buf64)), -MG_REC_SIZE_BIG);
	/* MAGNET_RECORD_MAX itself is allowed by the size check. */
	good()->size = MAGNET_RECORD_MAX;
	ck_assert_int_eq(check_at(sizeof(buf64)), -MG_REC_LAYOUT);
}
END_TEST

START_TEST(err_truncated)
{
	size_t len;

	good();
	for (len = 0; len < 56; len++)
		ck_assert_int_eq(check_at(len), -MG_REC_TRUNCATED);
	ck_assert_int_eq(check_at(56), 0);
	ck_assert_int_eq(mg_record_check(BUF, 56, 57), -MG_REC_TRUNCATED);
}
END_TEST

START_TEST(task_record)
{
	struct magnet_record *r = (struct magnet_record *)BUF;
	char comm[17];
	ssize_t n;
	__u32 uid, euid;

	memset(buf64, 0xaa, 128);
	n = mg_record_encode_task(BUF, sizeof(buf64), &hdr, "kworker/u4:2-events");
	ck_assert_int_eq(n, 64);
	ck_assert_int_eq(check_at(64), 0);
	ck_assert(mg_record_is_task(r) && mg_record_is_meta(r));
	ck_assert_str_eq(mg_record_type(r), "task");
	ck_assert_uint_eq(r->flags, 0);
	ck_assert_uint_eq(r->cgroup, hdr.cgroup);
	/* 16 bytes, not terminated when the name fills them. */
	ck_assert_str_eq(mg_record_task_comm(r, comm), "kworker/u4:2-eve");
	n = mg_record_encode_task(BUF, sizeof(buf64), &hdr, "sh");
	ck_assert_str_eq(mg_record_task_comm(r, comm), "sh");
	ck_assert_int_eq(r->payload[15], 0);	/* NUL-padded */
	ck_assert_int_eq(mg_record_encode_task(BUF, 63, &hdr, "sh"), -ENOSPC);
	ck_assert_ptr_null(mg_record_task_comm(good(), comm));
	/* The owner: unknown unless given. */
	mg_record_task_uids(r, &uid, &euid);
	ck_assert_uint_eq(uid, MG_UID_UNKNOWN);
	ck_assert_uint_eq(euid, MG_UID_UNKNOWN);
	n = mg_record_encode_task_as(BUF, sizeof(buf64), &hdr, "sh", 1000, 0);
	ck_assert_int_eq(n, 64);
	mg_record_task_uids(r, &uid, &euid);
	ck_assert_uint_eq(uid, 1000);
	ck_assert_uint_eq(euid, 0);
	/* A format 3/4 record (56 bytes, no uids) is valid, its owner unknown. */
	r->size = 56;
	ck_assert_int_eq(check_at(56), 0);
	mg_record_task_uids(r, &uid, &euid);
	ck_assert_uint_eq(uid, MG_UID_UNKNOWN);
	ck_assert_str_eq(mg_record_task_comm(r, comm), "sh");
	/* Other sizes are not; flags 0 (not even INTR). */
	r->size = 72;
	ck_assert_int_eq(check_at(72), -MG_REC_LAYOUT);
	r->size = 48;
	ck_assert_int_eq(check_at(48), -MG_REC_LAYOUT);
	mg_record_encode_task(BUF, sizeof(buf64), &hdr, "sh");
	r->flags = MAGNET_REC_INTR;
	ck_assert_int_eq(check_at(64), -MG_REC_FLAGS);
}
END_TEST

START_TEST(skb_record)
{
	static const unsigned char pkt[20] = { 0x45, 0, 0, 20, [9] = 17 };
	struct magnet_skb meta = {
		.len = 1500, .caplen = 20, .ifindex = 1, .protocol = htons(0x0800),
		.direction = MAGNET_SKB_DIR_OUT, .layer = MAGNET_SKB_LAYER_NETWORK,
	};
	struct magnet_record *r = (struct magnet_record *)BUF;
	const struct magnet_skb *k;
	ssize_t n;

	memset(buf64, 0xaa, 256);
	n = mg_record_encode_skb(BUF, sizeof(buf64), &hdr, &meta, pkt, 30);
	ck_assert_int_eq(n, (ssize_t)mg_record_skb_size(30));
	ck_assert_int_eq(n, 40 + 24 + 32);
	ck_assert_int_eq(check_at(n), 0);
	k = mg_record_skb(r);
	ck_assert_ptr_nonnull(k);
	ck_assert(!mg_record_sock(r) && !mg_record_raw(r) && !mg_record_capture(r));
	ck_assert_uint_eq(k->len, 1500);
	ck_assert_mem_eq(k->data, pkt, 20);
	ck_assert_int_eq(k->data[20], 0);	/* zeros past caplen */
	ck_assert_int_eq(k->data[31], 0);
	/* caplen past the room, bytes past caplen, undefined fields. */
	((struct magnet_skb *)k)->caplen = 33;
	ck_assert_int_eq(check_at(n), -MG_REC_SKB_LEN);
	mg_record_encode_skb(BUF, sizeof(buf64), &hdr, &meta, pkt, 30);
	((struct magnet_skb *)k)->data[25] = 1;
	ck_assert_int_eq(check_at(n), -MG_REC_SKB_PAD);
	mg_record_encode_skb(BUF, sizeof(buf64), &hdr, &meta, pkt, 30);
	((struct magnet_skb *)k)->layer = 3;
	ck_assert_int_eq(check_at(n), -MG_REC_SKB_FIELD);
	mg_record_encode_skb(BUF, sizeof(buf64), &hdr, &meta, pkt, 30);
	((struct magnet_skb *)k)->direction = 3;
	ck_assert_int_eq(check_at(n), -MG_REC_SKB_FIELD);
	mg_record_encode_skb(BUF, sizeof(buf64), &hdr, &meta, pkt, 30);
	r->flags |= MAGNET_REC_RETURN;
	ck_assert_int_eq(check_at(n), -MG_REC_FLAGS);
	mg_record_encode_skb(BUF, sizeof(buf64), &hdr, &meta, pkt, 30);
	r->size = 48;
	ck_assert_int_eq(check_at(48), -MG_REC_LAYOUT);
	/* No capture at all: metadata only. */
	meta.caplen = 0;
	ck_assert_int_eq(mg_record_encode_skb(BUF, sizeof(buf64), &hdr, &meta, NULL, 0), 64);
	ck_assert_int_eq(check_at(64), 0);
	/* The encoder refuses what the checker would. */
	meta.caplen = 31;
	ck_assert_int_eq(mg_record_encode_skb(BUF, sizeof(buf64), &hdr, &meta, pkt, 30), -EINVAL);
	meta.caplen = 0;
	ck_assert_int_eq(mg_record_encode_skb(BUF, sizeof(buf64), &hdr, &meta, NULL,
					      MAGNET_PAYLOAD_MAX), -EINVAL);
	ck_assert_int_eq(mg_record_encode_skb(BUF, 95, &hdr, &meta, NULL, 30), -ENOSPC);
}
END_TEST

START_TEST(switch_record)
{
	struct magnet_switch sw = {
		.prev_pid = 100, .prev_tgid = 99, .next_pid = 200, .next_tgid = 200,
		.prev_state = 1, .next_cgroup = 0x1234, .prev_comm = "pinger",
		.next_comm = "ponger",
	};
	struct magnet_record *r = (struct magnet_record *)BUF;
	const struct magnet_switch *k;
	ssize_t n;

	memset(buf64, 0xaa, 256);
	n = mg_record_encode_switch(BUF, sizeof(buf64), &hdr, &sw);
	ck_assert_int_eq(n, MG_RECORD_SWITCH_SIZE);
	ck_assert_int_eq(n, 40 + 64);
	ck_assert_int_eq(check_at(n), 0);
	k = mg_record_switch(r);
	ck_assert_ptr_nonnull(k);
	ck_assert(!mg_record_skb(r) && !mg_record_sock(r) && !mg_record_capture(r));
	ck_assert_uint_eq(mg_record_nargs(r), 0);
	ck_assert_uint_eq(k->next_pid, 200);
	ck_assert_str_eq(k->next_comm, "ponger");
	/* Undefined fields, flags, a size of another layout. */
	((struct magnet_switch *)k)->preempt = 2;
	ck_assert_int_eq(check_at(n), -MG_REC_SWITCH_FIELD);
	mg_record_encode_switch(BUF, sizeof(buf64), &hdr, &sw);
	((struct magnet_switch *)k)->reserved[2] = 1;
	ck_assert_int_eq(check_at(n), -MG_REC_SWITCH_FIELD);
	mg_record_encode_switch(BUF, sizeof(buf64), &hdr, &sw);
	r->flags |= MAGNET_REC_CAPTURE;
	ck_assert_int_eq(check_at(n), -MG_REC_FLAGS);
	mg_record_encode_switch(BUF, sizeof(buf64), &hdr, &sw);
	r->size = 96;
	ck_assert_int_eq(check_at(96), -MG_REC_LAYOUT);
	/* Handler 5 is undefined. */
	mg_record_encode_switch(BUF, sizeof(buf64), &hdr, &sw);
	r->flags = 5 << MAGNET_REC_HANDLER_SHIFT;
	ck_assert_int_eq(check_at(n), -MG_REC_HANDLER);
	/* The encoder refuses what the checker would. */
	sw.preempt = 7;
	ck_assert_int_eq(mg_record_encode_switch(BUF, sizeof(buf64), &hdr, &sw), -EINVAL);
	sw.preempt = 1;
	ck_assert_int_eq(mg_record_encode_switch(BUF, 103, &hdr, &sw), -ENOSPC);
	ck_assert_int_eq(mg_record_encode_switch(BUF, 104, &hdr, &sw), 104);
}
END_TEST

START_TEST(intr_flag)
{
	struct mg_record_hdr h = hdr;
	struct magnet_record *r = (struct magnet_record *)BUF;
	struct magnet_sock sock = { .family = AF_INET };

	h.intr = true;
	ck_assert_int_gt(mg_record_encode_kprobe(BUF, sizeof(buf64), &h, args6, 2), 0);
	ck_assert(mg_record_is_intr(r));
	ck_assert_int_eq(check_at(r->size), 0);
	ck_assert_int_gt(mg_record_encode_sock(BUF, sizeof(buf64), &h, &sock), 0);
	ck_assert(mg_record_is_intr(r));
	ck_assert_int_eq(check_at(r->size), 0);
	ck_assert_int_gt(mg_record_encode_raw(BUF, sizeof(buf64), &h, "x", 1), 0);
	ck_assert(mg_record_is_intr(r));
	ck_assert_int_eq(check_at(r->size), 0);
	/* Magnet's own records never carry it. */
	ck_assert_int_gt(mg_record_encode_lost(BUF, sizeof(buf64), &h,
					      &(struct magnet_lost){ .full = 1 }), 0);
	ck_assert(!mg_record_is_intr(r));
	r->flags = MAGNET_REC_INTR;
	ck_assert_int_eq(check_at(r->size), -MG_REC_FLAGS);
}
END_TEST

START_TEST(err_event)
{
	unsigned int id;

	good()->event_id = MAGNET_EVENT_PAD;
	ck_assert_int_eq(check_at(56), -MG_REC_PAD);
	/* A probe layout under the TASK id: TASK records have no flags. */
	good()->event_id = MAGNET_EVENT_TASK;
	ck_assert_int_eq(check_at(56), -MG_REC_FLAGS);
	/* A probe layout under the JOB_LOST id: JOB_LOST records have none. */
	good()->event_id = MAGNET_EVENT_JOB_LOST;
	ck_assert_int_eq(check_at(56), -MG_REC_FLAGS);
	for (id = 4; id < MAGNET_EVENT_FIRST_DYNAMIC; id++) {
		good()->event_id = id;
		ck_assert_int_eq(check_at(56), -MG_REC_EVENT);
	}
	good()->event_id = MAGNET_EVENT_FIRST_DYNAMIC;
	ck_assert_int_eq(check_at(56), 0);
}
END_TEST

START_TEST(err_flags)
{
	unsigned int bit, n;

	for (bit = 3; bit < 16; bit++) {	/* 2 is MAGNET_REC_INTR */
		if (bit >= MAGNET_REC_NARGS_SHIFT && bit < MAGNET_REC_NARGS_SHIFT + 4)
			continue;
		good()->flags |= 1U << bit;
		/* Bits 8..10: sock, raw or switch with args; 11: no such handler. */
		ck_assert_int_eq(check_at(56), bit == 11 ? -MG_REC_HANDLER : -MG_REC_FLAGS);
	}
	for (n = MAGNET_ARGS_MAX + 1; n < 16; n++) {
		struct magnet_record *r = good();

		r->flags = n << MAGNET_REC_NARGS_SHIFT;
		r->size = mg_record_probe_size(false, n);
		ck_assert_int_eq(check_at(sizeof(buf64)), -MG_REC_FLAGS);
	}
}
END_TEST

START_TEST(err_layout)
{
	struct magnet_lost l = { 0 };
	struct magnet_record *r;

	/* kprobe, 2 args, but 3 args' worth of bytes. */
	good()->size = 64;
	ck_assert_int_eq(check_at(64), -MG_REC_LAYOUT);
	/* kprobe flagged as kretprobe: no room for retval/latency. */
	good()->flags |= MAGNET_REC_RETURN;
	ck_assert_int_eq(check_at(56), -MG_REC_LAYOUT);
	/* kretprobe with 0 args claiming 1. */
	ck_assert_int_eq(mg_record_encode_kretprobe(BUF, sizeof(buf64), &hdr, 1, 2, NULL, 0), 56);
	((struct magnet_record *)BUF)->flags |= 1 << MAGNET_REC_NARGS_SHIFT;
	ck_assert_int_eq(check_at(56), -MG_REC_LAYOUT);
	/* LOST: exact size and no flags. */
	mg_record_encode_lost(BUF, sizeof(buf64), &hdr, &l);
	r = (struct magnet_record *)BUF;
	r->size = 80;
	ck_assert_int_eq(check_at(80), -MG_REC_LAYOUT);
	r->size = 64;
	ck_assert_int_eq(check_at(80), -MG_REC_LAYOUT);
	r->size = 72;
	r->flags = MAGNET_REC_RETURN;
	ck_assert_int_eq(check_at(80), -MG_REC_FLAGS);
}
END_TEST

/*
 * A valid capture record at BUF: kprobe, nargs args, capture length len
 * from arg 1, data 'A', 'B', ...; returns it mutable.
 */
static struct magnet_record *good_cap(bool ret, unsigned int nargs,
				      unsigned int len, bool readable)
{
	static unsigned char data[MAGNET_PAYLOAD_MAX];
	struct mg_record_cap cap = {
		.len = len, .arg = 1, .data = readable ? data : NULL,
	};
	ssize_t n;
	unsigned int i;

	for (i = 0; i < sizeof(data); i++)
		data[i] = 'A' + i % 26;
	memset(buf64, 0, sizeof(buf64));
	n = ret ? mg_record_encode_kretprobe_cap(BUF, sizeof(buf64), &hdr, 0, 0,
						 args6, nargs, &cap)
		: mg_record_encode_kprobe_cap(BUF, sizeof(buf64), &hdr, args6,
					      nargs, &cap);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(check_at(n), 0);
	return (struct magnet_record *)BUF;
}

static struct magnet_capture *cap_of(struct magnet_record *r)
{
	return (struct magnet_capture *)mg_record_capture(r);
}

START_TEST(err_capture_layout)
{
	struct magnet_record *r;
	unsigned int ret;

	for (ret = 0; ret < 2; ret++) {
		size_t fixed = mg_record_probe_size(ret, 2);

		/* The capture flag on a record without a capture. */
		r = good_cap(ret, 2, 20, true);
		r->size = fixed;
		ck_assert_int_eq(check_at(sizeof(buf64)), -MG_REC_LAYOUT);
		/* Room for the capture header, but no data: length 0 does
		 * not exist (a probe captures at least 1 byte). */
		r = good_cap(ret, 2, 20, true);
		r->size = fixed + 8;
		ck_assert_int_eq(check_at(sizeof(buf64)), -MG_REC_LAYOUT);
		r->size = fixed + 16;
		ck_assert_int_eq(check_at(sizeof(buf64)), -MG_REC_CAPTURE_LEN);
		/* Less room than a retval and latency need. */
		r = good_cap(false, 0, 1, true);
		r->flags |= MAGNET_REC_RETURN;
		ck_assert_int_eq(check_at(sizeof(buf64)), -MG_REC_LAYOUT);
	}
	/* A kprobe without the flag but with a capture's size. */
	r = good_cap(false, 2, 20, true);
	r->flags &= ~MAGNET_REC_CAPTURE;
	ck_assert_int_eq(check_at(sizeof(buf64)), -MG_REC_LAYOUT);
	/* The flag on a LOST record is still a bad flag. */
	r = good_cap(false, 0, 24, true);
	r->event_id = MAGNET_EVENT_LOST;
	ck_assert_int_eq(check_at(sizeof(buf64)), -MG_REC_FLAGS);
}
END_TEST

START_TEST(err_capture_len)
{
	unsigned int k, ret, len, room;

	for (ret = 0; ret < 2; ret++) {
		for (k = 0; k < 4; k++) {
			struct magnet_record *r;

			room = (cap_lens[k] + 7) & ~7U;
			/* Every len the room allows is valid: room - 7..room,
			 * and 0; one outside either end is not. */
			for (len = room - 7; len <= room; len++) {
				r = good_cap(ret, 3, room, true);
				cap_of(r)->len = len;
				memset(cap_of(r)->data + len, 0, room - len);
				ck_assert_int_eq(check_at(r->size), 0);
			}
			r = good_cap(ret, 3, cap_lens[k], false);
			ck_assert_int_eq(check_at(r->size), 0);
			r = good_cap(ret, 3, room, true);
			cap_of(r)->len = room + 1;
			ck_assert_int_eq(check_at(r->size), -MG_REC_CAPTURE_LEN);
			if (room > 8) {
				r = good_cap(ret, 3, room, true);
				cap_of(r)->len = room - 8;
				memset(cap_of(r)->data + room - 8, 0, 8);
				ck_assert_int_eq(check_at(r->size), -MG_REC_CAPTURE_LEN);
			}
			r = good_cap(ret, 3, cap_lens[k], true);
			cap_of(r)->len = UINT32_MAX;
			ck_assert_int_eq(check_at(r->size), -MG_REC_CAPTURE_LEN);
			/* The size grows by 8: len no longer matches. */
			r = good_cap(ret, 3, room, true);
			r->size += 8;
			ck_assert_int_eq(check_at(r->size), -MG_REC_CAPTURE_LEN);
		}
	}
	/* A capture of 8 or less: len 1 fits room 8, so a shrunk len
	 * cannot be detected there, but a shrunk size can. */
	good_cap(false, 0, 16, true)->size -= 8;
	ck_assert_int_eq(check_at(sizeof(buf64)), -MG_REC_CAPTURE_LEN);
}
END_TEST

START_TEST(err_capture_arg)
{
	static const __u32 bad[] = { MAGNET_ARGS_MAX, 7, 255, 0x80000000, UINT32_MAX };
	unsigned int i;

	for (i = 0; i < MAGNET_ARGS_MAX; i++) {
		struct magnet_record *r = good_cap(i % 2, i, 9, true);

		cap_of(r)->arg = i;
		ck_assert_int_eq(check_at(r->size), 0);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct magnet_record *r = good_cap(i % 2, 2, 9, true);

		cap_of(r)->arg = bad[i];
		ck_assert_int_eq(check_at(r->size), -MG_REC_CAPTURE_ARG);
		/* Unreadable captures carry the argument too. */
		r = good_cap(i % 2, 2, 9, false);
		cap_of(r)->arg = bad[i];
		ck_assert_int_eq(check_at(r->size), -MG_REC_CAPTURE_ARG);
	}
}
END_TEST

START_TEST(err_capture_pad)
{
	struct magnet_record *r;
	unsigned int i;

	/* Alignment bytes after the data. */
	for (i = 5; i < 8; i++) {
		r = good_cap(false, 1, 5, true);
		cap_of(r)->data[i] = 0x80;
		ck_assert_int_eq(check_at(r->size), -MG_REC_CAPTURE_PAD);
	}
	/* Any byte of an unreadable capture, first to last. */
	for (i = 0; i < 4000; i += 333) {
		r = good_cap(true, 6, 4000, false);
		cap_of(r)->data[i] = 1;
		ck_assert_int_eq(check_at(r->size), -MG_REC_CAPTURE_PAD);
	}
	r = good_cap(true, 6, 4000, false);
	cap_of(r)->data[3999] = 1;
	ck_assert_int_eq(check_at(r->size), -MG_REC_CAPTURE_PAD);
	/* Data inside len may be anything, zeros included. */
	r = good_cap(false, 0, 16, true);
	memset(cap_of(r)->data, 0, 16);
	ck_assert_int_eq(check_at(r->size), 0);
	memset(cap_of(r)->data, 0xff, 16);
	ck_assert_int_eq(check_at(r->size), 0);
}
END_TEST

START_TEST(err_handler)
{
	struct magnet_sock s = { .family = AF_INET };
	unsigned int hd, bit;
	struct magnet_record *r;

	/* Handlers 5..15 do not exist, whatever the layout around them. */
	for (hd = MAGNET_HANDLER_SWITCH + 1; hd < 16; hd++) {
		good()->flags |= hd << MAGNET_REC_HANDLER_SHIFT;
		ck_assert_int_eq(check_at(56), -MG_REC_HANDLER);
		r = good();
		r->flags = hd << MAGNET_REC_HANDLER_SHIFT;
		ck_assert_int_eq(check_at(56), -MG_REC_HANDLER);
		mg_record_encode_sock(BUF, sizeof(buf64), &hdr, &s);
		r->flags = hd << MAGNET_REC_HANDLER_SHIFT;
		ck_assert_int_eq(check_at(88), -MG_REC_HANDLER);
		mg_record_encode_raw(BUF, sizeof(buf64), &hdr, "abc", 3);
		r->flags = hd << MAGNET_REC_HANDLER_SHIFT;
		ck_assert_int_eq(check_at(56), -MG_REC_HANDLER);
		/* Undefined bits outside the handler field come first. */
		r->flags |= 1U << 12;
		ck_assert_int_eq(check_at(56), -MG_REC_FLAGS);
	}
	/* A LOST record has no handler either. */
	for (bit = MAGNET_REC_HANDLER_SHIFT; bit < MAGNET_REC_HANDLER_SHIFT + 4; bit++) {
		struct magnet_lost l = { 0 };

		mg_record_encode_lost(BUF, sizeof(buf64), &hdr, &l);
		((struct magnet_record *)BUF)->flags |= 1U << bit;
		ck_assert_int_eq(check_at(72), -MG_REC_FLAGS);
	}
}
END_TEST

/* A valid sock record at BUF (family fam), mutable. */
static struct magnet_record *good_sock(__u16 fam)
{
	struct magnet_sock s = {
		.family = fam, .protocol = IPPROTO_UDP, .state = 7,
		.sport = htons(53), .dport = htons(5353), .size = 512,
		.saddr = { 10, 0, 0, 1 }, .daddr = { 10, 0, 0, 2 },
	};

	memset(buf64, 0, sizeof(buf64));
	ck_assert_int_eq(mg_record_encode_sock(BUF, sizeof(buf64), &hdr, &s), 88);
	ck_assert_int_eq(check_at(88), 0);
	return (struct magnet_record *)BUF;
}

static struct magnet_sock *sock_of(struct magnet_record *r)
{
	return (struct magnet_sock *)mg_record_sock(r);
}

START_TEST(err_sock)
{
	static const __u32 sizes[] = { 40, 48, 80, 96, 128, MAGNET_RECORD_MAX };
	struct magnet_record *r;
	unsigned int bit, i, fam;

	/* No RETURN, CAPTURE or NARGS bits: the layout is fixed. */
	for (bit = 0; bit < MAGNET_REC_HANDLER_SHIFT; bit++) {
		if (1U << bit == MAGNET_REC_INTR)
			continue;	/* intr_flag */
		good_sock(AF_INET)->flags |= 1U << bit;
		ck_assert_int_eq(check_at(88), -MG_REC_FLAGS);
	}
	/* Exactly 88 bytes, whatever the buffer holds. */
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		good_sock(AF_INET6)->size = sizes[i];
		ck_assert_int_eq(check_at(sizeof(buf64)), -MG_REC_LAYOUT);
	}
	for (i = 0; i < 88; i++) {
		good_sock(AF_INET);
		ck_assert_int_eq(check_at(i), -MG_REC_TRUNCATED);
	}
	/* Family: none, AF_INET, AF_INET6; nothing else. */
	for (fam = 0; fam < 65536; fam++) {
		r = good_sock(AF_INET);
		sock_of(r)->family = fam;
		tu_assert_int(check_at(88), ==,
			      fam == 0 || fam == AF_INET || fam == AF_INET6 ?
			      0 : -MG_REC_SOCK_FAMILY);
	}
	/* Any protocol, state, ports, addresses and size are data. */
	r = good_sock(AF_INET6);
	memset((unsigned char *)sock_of(r) + 2, 0xff, sizeof(struct magnet_sock) - 2);
	ck_assert_int_eq(check_at(88), 0);
}
END_TEST

/* A valid raw record at BUF holding len bytes 'A', 'B', ..., mutable. */
static struct magnet_record *good_raw(unsigned int len)
{
	static unsigned char data[MAGNET_PAYLOAD_MAX];
	ssize_t n;
	unsigned int i;

	for (i = 0; i < sizeof(data); i++)
		data[i] = 'A' + i % 26;
	memset(buf64, 0, sizeof(buf64));
	n = mg_record_encode_raw(BUF, sizeof(buf64), &hdr, data, len);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(check_at(n), 0);
	return (struct magnet_record *)BUF;
}

static struct magnet_raw *raw_of(struct magnet_record *r)
{
	return (struct magnet_raw *)mg_record_raw(r);
}

START_TEST(err_raw_layout)
{
	struct magnet_record *r;
	unsigned int bit;

	/* Flags: the handler only. */
	for (bit = 0; bit < MAGNET_REC_HANDLER_SHIFT; bit++) {
		if (1U << bit == MAGNET_REC_INTR)
			continue;	/* intr_flag */
		r = good_raw(5);
		r->flags |= 1U << bit;
		ck_assert_int_eq(check_at(r->size), -MG_REC_FLAGS);
	}
	/* No room for struct magnet_raw. */
	good_raw(0)->size = 40;
	ck_assert_int_eq(check_at(48), -MG_REC_LAYOUT);
	/* The payload's reserved field. */
	r = good_raw(20);
	raw_of(r)->reserved = 1;
	ck_assert_int_eq(check_at(r->size), -MG_REC_RAW_RESERVED);
	r = good_raw(0);
	raw_of(r)->reserved = 0x80000000;
	ck_assert_int_eq(check_at(r->size), -MG_REC_RAW_RESERVED);
	/* Raw flags on a LOST record are bad flags. */
	r = good_raw(24);
	r->event_id = MAGNET_EVENT_LOST;
	ck_assert_int_eq(check_at(r->size), -MG_REC_FLAGS);
	r = good_raw(24);
	r->event_id = 5;
	ck_assert_int_eq(check_at(r->size), -MG_REC_EVENT);
}
END_TEST

START_TEST(err_raw_len)
{
	unsigned int k, len, room;
	struct magnet_record *r;

	for (k = 0; k < sizeof(raw_lens) / sizeof(raw_lens[0]); k++) {
		room = (raw_lens[k] + 7) & ~7U;
		/* Every len the room allows is valid: room - 7..room (0 for
		 * an empty room); one outside either end is not. */
		for (len = room ? room - 7 : 0; len <= room; len++) {
			r = good_raw(room);
			raw_of(r)->len = len;
			memset(raw_of(r)->data + len, 0, room - len);
			ck_assert_int_eq(check_at(r->size), 0);
		}
		r = good_raw(raw_lens[k]);
		raw_of(r)->len = room + 1;
		ck_assert_int_eq(check_at(r->size), -MG_REC_RAW_LEN);
		r = good_raw(raw_lens[k]);
		raw_of(r)->len = UINT32_MAX;
		ck_assert_int_eq(check_at(r->size), -MG_REC_RAW_LEN);
		if (room) {
			r = good_raw(room);
			raw_of(r)->len = room - 8;
			memset(raw_of(r)->data + room - 8, 0, 8);
			ck_assert_int_eq(check_at(r->size), -MG_REC_RAW_LEN);
		}
		/* The size grows or shrinks by 8: len no longer matches. */
		if (raw_lens[k] + 8 <= MAGNET_PAYLOAD_MAX - 8) {
			r = good_raw(raw_lens[k]);
			r->size += 8;
			ck_assert_int_eq(check_at(r->size), -MG_REC_RAW_LEN);
		}
		if (room) {
			r = good_raw(raw_lens[k]);
			r->size -= 8;
			ck_assert_int_eq(check_at(r->size), -MG_REC_RAW_LEN);
		}
	}
}
END_TEST

START_TEST(err_raw_pad)
{
	struct magnet_record *r;
	unsigned int i, len;

	/* Every alignment byte, for every len short of a multiple of 8. */
	for (len = 1; len < 8; len++) {
		for (i = len; i < 8; i++) {
			r = good_raw(16 + len);
			raw_of(r)->data[16 + i] = 0x01;
			ck_assert_int_eq(check_at(r->size), -MG_REC_RAW_PAD);
		}
	}
	r = good_raw(MAGNET_PAYLOAD_MAX - 9);
	raw_of(r)->data[MAGNET_PAYLOAD_MAX - 9] = 0x80;
	ck_assert_int_eq(check_at(r->size), -MG_REC_RAW_PAD);
	/* Data inside len may be anything, zeros included. */
	r = good_raw(16);
	memset(raw_of(r)->data, 0, 16);
	ck_assert_int_eq(check_at(r->size), 0);
	memset(raw_of(r)->data, 0xff, 16);
	ck_assert_int_eq(check_at(r->size), 0);
}
END_TEST

START_TEST(err_misaligned)
{
	const struct magnet_record *r;
	size_t off = 4;

	good();
	memmove(BUF + 8, BUF, 56);
	ck_assert_int_eq(mg_record_next(BUF, 64, &off, &r), -MG_REC_MISALIGNED);
	ck_assert_uint_eq(off, 4);
	ck_assert_int_eq(mg_record_check(BUF + 4, 60, 4), 0);
	ck_assert_int_eq(mg_record_check(BUF + 4, 60, 0), -MG_REC_MISALIGNED);
}
END_TEST

START_TEST(strerror_all)
{
	int i, j;

	for (i = 0; i < MG_REC_NERR; i++) {
		ck_assert_ptr_nonnull(mg_record_strerror(i));
		ck_assert_str_eq(mg_record_strerror(i), mg_record_strerror(-i));
		for (j = 0; j < i; j++)
			ck_assert_str_ne(mg_record_strerror(i), mg_record_strerror(j));
	}
	ck_assert_str_eq(mg_record_strerror(MG_REC_NERR), "unknown record error");
	ck_assert_str_eq(mg_record_strerror(-1000), "unknown record error");
}
END_TEST

/* A stream of n random records at BUF; offsets of each in offs[]. */
static size_t make_stream(unsigned int n, size_t *offs)
{
	size_t len = 0;
	unsigned int i;

	for (i = 0; i < n; i++) {
		ssize_t r = tu_random_record(BUF + len, sizeof(buf64) - len, 3,
					     1000 + i, i);

		ck_assert_int_gt(r, 0);
		offs[i] = len;
		len += r;
	}
	offs[n] = len;
	return len;
}

START_TEST(next_sequence)
{
	const struct magnet_record *r;
	size_t offs[41], len, off = 0;
	unsigned int i;

	tu_seed(7);
	len = make_stream(40, offs);
	ck_assert_int_le(len, sizeof(buf64));
	for (i = 0; i < 40; i++) {
		ck_assert_int_eq(mg_record_next(BUF, len, &off, &r), 1);
		ck_assert_uint_eq(r->timestamp, 1000 + i);
		ck_assert_uint_eq(off, offs[i + 1]);
	}
	ck_assert_int_eq(mg_record_next(BUF, len, &off, &r), 0);
	ck_assert_int_eq(mg_record_next(BUF, 0, &(size_t){ 0 }, &r), 0);

	/* Break record 17: the walk stops there and the offset says where. */
	((struct magnet_record *)(BUF + offs[17]))->event_id = 5;
	off = 0;
	for (i = 0; i < 17; i++)
		ck_assert_int_eq(mg_record_next(BUF, len, &off, &r), 1);
	ck_assert_int_eq(mg_record_next(BUF, len, &off, &r), -MG_REC_EVENT);
	ck_assert_uint_eq(off, offs[17]);
	/* And it stays there: the cursor never skips a bad record. */
	ck_assert_int_eq(mg_record_next(BUF, len, &off, &r), -MG_REC_EVENT);
	ck_assert_uint_eq(off, offs[17]);
}
END_TEST

START_TEST(fuzz_random_bytes)
{
	static const __u16 fams[] = { 0, AF_INET, AF_INET6, 1, 3, 0x200 };
	unsigned int iter, i, captures = 0, socks = 0, raws = 0;

	tu_seed(0x5eed);
	for (iter = 0; iter < 20000; iter++) {
		size_t len = tu_rand() % 600, off = 0;
		const struct magnet_record *r;
		int ret;

		for (i = 0; i < len; i++)
			BUF[i] = tu_rand();
		/* Sometimes make the first size plausible, to get deeper. */
		if (iter % 2 && len >= 4)
			((struct magnet_record *)BUF)->size = 40 + 8 * (tu_rand() % 8);
		/* And sometimes a whole plausible capture record header, so
		 * the capture checks see near misses: small len, arg, zeros. */
		if (iter % 4 == 3 && len >= 64) {
			struct magnet_record *h = (struct magnet_record *)BUF;
			unsigned int nargs = tu_rand() % 7;
			size_t fixed = mg_record_probe_size(iter % 8 == 7, nargs);
			struct magnet_capture *c;

			if (fixed + 8 <= len) {
				h->size = fixed + 8 + 8 * (tu_rand() % 4);
				h->event_id = MAGNET_EVENT_FIRST_DYNAMIC + tu_rand() % 4;
				h->flags = MAGNET_REC_CAPTURE |
					   (iter % 8 == 7 ? MAGNET_REC_RETURN : 0) |
					   nargs << MAGNET_REC_NARGS_SHIFT;
				h->cgroup = tu_rand();
				c = (struct magnet_capture *)(BUF + fixed);
				c->len = tu_rand() % 40;
				c->arg = tu_rand() % 8;
				if (tu_rand() % 2)
					memset(c->data, 0, len - fixed - 8);
			}
		}
		/* Near misses of the named handlers' layouts too. */
		if (iter % 4 == 1 && len >= 104) {
			struct magnet_record *h = (struct magnet_record *)BUF;

			h->event_id = MAGNET_EVENT_FIRST_DYNAMIC + tu_rand() % 4;
			h->cgroup = tu_rand();
			if (iter % 8 == 1) {
				h->flags = MAGNET_HANDLER_SOCK << MAGNET_REC_HANDLER_SHIFT;
				h->size = tu_rand() % 4 ? 88 : 80 + 8 * (tu_rand() % 3);
				((struct magnet_sock *)h->payload)->family =
					fams[tu_rand() % 6];
			} else {
				struct magnet_raw *raw = (struct magnet_raw *)h->payload;
				size_t room = 8 * (tu_rand() % 8);
				long l = (long)room + 1 - (long)(tu_rand() % 10);

				h->flags = MAGNET_HANDLER_RAW << MAGNET_REC_HANDLER_SHIFT;
				h->size = 48 + room;
				raw->len = l < 0 ? 0 : l;
				raw->reserved = tu_rand() % 8 ? 0 : 1;
				if (tu_rand() % 2 && raw->len < room)
					memset(raw->data + raw->len, 0, room - raw->len);
			}
			if (tu_rand() % 8 == 0)
				h->flags |= 1U << (tu_rand() % 16);
		}
		while ((ret = mg_record_next(BUF, len, &off, &r)) == 1) {
			tu_assert_op(off, <=, len);
			tu_assert_op(r->size, >=, 40);
			tu_assert((const unsigned char *)r >= BUF);
			tu_assert_op((size_t)((unsigned char *)r - BUF) + r->size, <=, len);
			tu_assert_int(mg_record_check(BUF, len, (unsigned char *)r - BUF), ==, 0);
			if (mg_record_has_capture(r)) {
				const struct magnet_capture *c = mg_record_capture(r);

				tu_assert_op(c->len, <=, mg_record_capture_room(r));
				tu_assert_op(c->arg, <, MAGNET_ARGS_MAX);
				captures++;
			}
			if (mg_record_sock(r)) {
				__u16 fam = mg_record_sock(r)->family;

				tu_assert_op(r->size, ==, 88);
				tu_assert(fam == 0 || fam == AF_INET || fam == AF_INET6);
				tu_assert_op(r->flags & ~MAGNET_REC_INTR, ==,
					     MAGNET_HANDLER_SOCK << MAGNET_REC_HANDLER_SHIFT);
				socks++;
			}
			if (mg_record_raw(r)) {
				tu_assert_op(r->size, ==, mg_record_raw_size(mg_record_raw(r)->len));
				tu_assert_op(mg_record_raw(r)->reserved, ==, 0);
				raws++;
			}
			tu_assert_op(mg_record_handler(r), <=, MAGNET_HANDLER_SKB);
		}
		tu_assert_int(ret, <=, 0);
		tu_assert_int(ret, >, -MG_REC_NERR);
		tu_assert_op(off, <=, len);
		tu_assert_op(off % 8, ==, 0);
	}
	/* The near misses include hits: capture, sock and raw records got
	 * through. */
	tu_assert_op(captures, >, 100);
	tu_assert_op(socks, >, 100);
	tu_assert_op(raws, >, 100);
}
END_TEST

/* Records with a capture among offs[0..n). */
static unsigned int count_captures(unsigned int n, const size_t *offs)
{
	unsigned int i, k = 0;

	for (i = 0; i < n; i++)
		k += mg_record_has_capture((const struct magnet_record *)(BUF + offs[i]));
	return k;
}

/* Records of this handler among offs[0..n). */
static unsigned int count_handler(unsigned int n, const size_t *offs,
				  unsigned int handler)
{
	unsigned int i, k = 0;

	for (i = 0; i < n; i++) {
		const struct magnet_record *r = (const void *)(BUF + offs[i]);

		k += !mg_record_is_lost(r) && mg_record_handler(r) == handler;
	}
	return k;
}

START_TEST(fuzz_truncation)
{
	size_t offs[301], len, cut;
	unsigned int k = 0;

	tu_seed(11);
	len = make_stream(300, offs);
	tu_assert_op(count_captures(300, offs), >, 30);
	tu_assert_op(count_handler(300, offs, MAGNET_HANDLER_SOCK), >, 10);
	tu_assert_op(count_handler(300, offs, MAGNET_HANDLER_RAW), >, 10);
	/* Every truncation point: records before it, then TRUNCATED or end. */
	for (cut = 0; cut <= len; cut++) {
		const struct magnet_record *r;
		size_t off = 0;
		unsigned int n = 0;
		int ret;

		while (k < 300 && offs[k + 1] <= cut)
			k++;
		while ((ret = mg_record_next(BUF, cut, &off, &r)) == 1)
			n++;
		tu_assert_op(n, ==, k);
		tu_assert_op(off, ==, offs[k]);
		tu_assert_int(ret, ==, cut == offs[k] ? 0 : -MG_REC_TRUNCATED);
	}
}
END_TEST

START_TEST(fuzz_bitflips)
{
	static __u64 orig64[sizeof(buf64) / 8];
	unsigned char *orig = (unsigned char *)orig64;
	size_t offs[201], len;
	unsigned int iter;

	tu_seed(12);
	len = make_stream(200, offs);
	tu_assert_op(count_captures(200, offs), >, 20);
	tu_assert_op(count_handler(200, offs, MAGNET_HANDLER_SOCK), >, 5);
	tu_assert_op(count_handler(200, offs, MAGNET_HANDLER_RAW), >, 5);
	memcpy(orig, BUF, len);
	for (iter = 0; iter < 5000; iter++) {
		size_t bit = tu_rand() % (len * 8), victim = 0, off = 0;
		const struct magnet_record *r;
		unsigned int flips = 1 + tu_rand() % 3, f;
		int ret;

		memcpy(BUF, orig, len);
		for (f = 0; f < flips; f++) {
			BUF[bit / 8] ^= 1U << (bit % 8);
			bit = (bit + tu_rand() % 64) % (len * 8);
		}
		/* The first changed record is where trust ends (two flips
		 * of one bit change nothing: victim 200, the end). */
		while (victim < 200 &&
		       memcmp(BUF + offs[victim], orig + offs[victim],
			      offs[victim + 1] - offs[victim]) == 0)
			victim++;
		while ((ret = mg_record_next(BUF, len, &off, &r)) == 1) {
			size_t at = (unsigned char *)r - BUF;

			if (at < offs[victim])
				tu_assert_int(memcmp(r, orig + at, r->size), ==, 0);
			tu_assert_op(at + r->size, <=, len);
		}
		tu_assert_int(ret, <=, 0);
		tu_assert_op(off, <=, len);
		tu_assert_op(off % 8, ==, 0);
		if (ret < 0)
			tu_assert_op(off, >=, offs[victim]);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("record");
	TCase *tc = tcase_create("codec");

	tcase_add_loop_test(tc, kprobe_roundtrip, 0, MAGNET_ARGS_MAX + 1);
	tcase_add_loop_test(tc, kretprobe_roundtrip, 0, MAGNET_ARGS_MAX + 1);
	tcase_add_loop_test(tc, capture_roundtrip, 0, MAGNET_ARGS_MAX + 1);
	tcase_add_loop_test(tc, capture_unreadable, 0, MAGNET_ARGS_MAX + 1);
	tcase_add_test(tc, capture_accessors);
	tcase_add_test(tc, lost_roundtrip);
	tcase_add_test(tc, job_lost_roundtrip);
	tcase_add_test(tc, sock_roundtrip);
	tcase_add_test(tc, raw_roundtrip);
	tcase_add_test(tc, handler_accessors);
	tcase_add_test(tc, encode_named_errors);
	tcase_add_test(tc, encode_errors);
	tcase_add_test(tc, encode_capture_errors);
	tcase_add_test(tc, err_size_small);
	tcase_add_test(tc, err_size_align);
	tcase_add_test(tc, err_size_big);
	tcase_add_test(tc, err_truncated);
	tcase_add_test(tc, task_record);
	tcase_add_test(tc, intr_flag);
	tcase_add_test(tc, skb_record);
	tcase_add_test(tc, switch_record);
	tcase_add_test(tc, err_event);
	tcase_add_test(tc, err_flags);
	tcase_add_test(tc, err_layout);
	tcase_add_test(tc, err_capture_layout);
	tcase_add_test(tc, err_capture_len);
	tcase_add_test(tc, err_capture_arg);
	tcase_add_test(tc, err_capture_pad);
	tcase_add_test(tc, err_handler);
	tcase_add_test(tc, err_sock);
	tcase_add_test(tc, err_raw_layout);
	tcase_add_test(tc, err_raw_len);
	tcase_add_test(tc, err_raw_pad);
	tcase_add_test(tc, err_misaligned);
	tcase_add_test(tc, strerror_all);
	tcase_add_test(tc, next_sequence);
	suite_add_tcase(s, tc);

	tc = tcase_create("fuzz");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, fuzz_random_bytes);
	tcase_add_test(tc, fuzz_truncation);
	tcase_add_test(tc, fuzz_bitflips);
	suite_add_tcase(s, tc);

	return tu_run(s);
}
