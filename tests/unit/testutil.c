// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "record.h"
#include "testutil.h"

static unsigned long long state = 1;

void tu_seed(unsigned long long seed)
{
	state = seed | 1;
}

unsigned long long tu_rand(void)
{
	state ^= state >> 12;
	state ^= state << 25;
	state ^= state >> 27;
	return state * 2685821657736338717ULL;
}

void tu_random_sock(struct magnet_sock *s)
{
	static const __u16 families[] = { 0, AF_INET, AF_INET6 };
	unsigned int i;

	memset(s, 0, sizeof(*s));
	s->family = families[tu_rand() % 3];
	s->protocol = tu_rand() % 4 ? (tu_rand() % 2 ? 6 : 17) : tu_rand();
	s->state = tu_rand() % 16;
	s->size = tu_rand() >> (tu_rand() % 64);
	if (!s->family)
		return;		/* the module leaves the rest zero */
	s->sport = tu_rand();
	s->dport = tu_rand();
	for (i = 0; i < (s->family == AF_INET ? 4U : 16U); i++) {
		s->saddr[i] = tu_rand();
		s->daddr[i] = tu_rand();
	}
}

static ssize_t random_sock(void *buf, size_t cap, const struct mg_record_hdr *h)
{
	struct magnet_sock s;

	tu_random_sock(&s);
	return mg_record_encode_sock(buf, cap, h, &s);
}

/* A raw record of 0..300 bytes (fewer if cap is smaller), zeros likely. */
static ssize_t random_raw(void *buf, size_t cap, const struct mg_record_hdr *h)
{
	static const unsigned int maxlen[] = { 1, 9, 64, 301 };
	unsigned char data[300];
	size_t len = tu_rand() % maxlen[tu_rand() % 4], i;

	if (cap < mg_record_raw_size(0))
		return -ENOSPC;
	if (mg_record_raw_size(len) > cap)
		len = (cap & ~(size_t)7) - mg_record_raw_size(0);
	for (i = 0; i < len; i++)
		data[i] = tu_rand() % 4 ? tu_rand() : 0;
	return mg_record_encode_raw(buf, cap, h, data, len);
}

ssize_t tu_random_record(void *buf, size_t cap, __u32 cpu, __u64 ts,
			 __u64 abstract_id)
{
	struct mg_record_hdr h = {
		.event_id = MAGNET_EVENT_FIRST_DYNAMIC + tu_rand() % 100,
		.cpu = cpu,
		.abstract_id = abstract_id,
		.timestamp = ts,
		.pid = tu_rand() % 100000,
		.tgid = tu_rand() % 100000,
	};
	static const unsigned int maxlen[] = { 8, 16, 64, 300 };
	unsigned char data[300];
	struct mg_record_cap c, *cp = NULL;
	__u64 args[MAGNET_ARGS_MAX];
	unsigned int i, nargs = tu_rand() % (MAGNET_ARGS_MAX + 1), kind;
	size_t fixed;

	for (i = 0; i < nargs; i++)
		args[i] = tu_rand();
	kind = tu_rand() % 8;
	/* An eighth of the probe records are sock, an eighth raw. */
	if (kind) {
		switch (tu_rand() % 8) {
		case 0:
			return random_sock(buf, cap, &h);
		case 1:
			return random_raw(buf, cap, &h);
		}
	}
	/* A quarter of the probe records capture, as much as cap allows. */
	fixed = mg_record_probe_size(kind >= 1 && kind <= 3, nargs) +
		sizeof(struct magnet_capture);
	if (kind && tu_rand() % 4 == 0 && cap >= fixed + 8) {
		size_t room = (cap - fixed) & ~(size_t)7;

		c.len = 1 + tu_rand() % maxlen[tu_rand() % 4];
		if (c.len > room)
			c.len = room;
		c.arg = tu_rand() % MAGNET_ARGS_MAX;
		for (i = 0; i < c.len; i++)
			data[i] = tu_rand();
		/* Some are unreadable: len 0, zeroed data. */
		c.data = tu_rand() % 8 ? data : NULL;
		cp = &c;
	}
	switch (kind) {
	case 0: {
		struct magnet_lost l = {
			tu_rand() % 10, tu_rand() % 10, tu_rand() % 10,
			tu_rand() % 10
		};

		return mg_record_encode_lost(buf, cap, &h, &l);
	}
	case 1: case 2: case 3:
		return mg_record_encode_kretprobe_cap(buf, cap, &h, tu_rand(),
						      tu_rand() % 1000000, args,
						      nargs, cp);
	default:
		return mg_record_encode_kprobe_cap(buf, cap, &h, args, nargs, cp);
	}
}

int tu_tmpfile(char *path)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(path, 64, "%.40s/magnet-test-XXXXXX", dir ? dir : "/tmp");
	fd = mkstemp(path);
	if (fd < 0) {
		perror("mkstemp");
		abort();
	}
	return fd;
}

void *tu_read_file(const char *path, size_t *len)
{
	struct stat st;
	char *buf;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st))
		abort();
	buf = malloc(st.st_size + 1);
	if (!buf || read(fd, buf, st.st_size) != st.st_size)
		abort();
	close(fd);
	*len = st.st_size;
	return buf;
}

void tu_write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || write(fd, buf, len) != (ssize_t)len)
		abort();
	close(fd);
}

int tu_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

size_t tu_token_soup(char *buf, size_t len, const char *const *toks, size_t ntoks,
		     unsigned int raw_one_in)
{
	size_t n = 0;

	while (n < len) {
		if (tu_rand() % raw_one_in == 0) {
			buf[n++] = tu_rand();
		} else {
			const char *t = toks[tu_rand() % ntoks];
			size_t l = strlen(t);

			if (n + l > len)
				break;
			memcpy(buf + n, t, l);
			n += l;
		}
	}
	return n;
}

void tu_tcp_header(unsigned char *tcp, __u32 seq, unsigned int payload,
		   unsigned int len, __u8 flags)
{
	static __u32 next = 1;

	if (!seq)
		seq = next;
	tcp[4] = seq >> 24;
	tcp[5] = seq >> 16;
	tcp[6] = seq >> 8;
	tcp[7] = seq;
	tcp[12] = (len / 4) << 4;
	tcp[13] = flags;
	next = seq + payload;
}

ssize_t tu_skb_record(void *buf, size_t cap, const struct tu_packet *p)
{
	struct mg_record_hdr h = { .event_id = 20, .cpu = 0, .pid = 7, .tgid = 7,
				   .cgroup = p->cgroup };
	unsigned char b[80] = { 0 };
	size_t ip = p->family == AF_INET ? 20 : 40, l4 = 0, total;
	struct magnet_skb k = {
		.ifindex = 1, .sk_cgroup = p->sk_cgroup,
		.direction = p->out ? MAGNET_SKB_DIR_OUT : MAGNET_SKB_DIR_IN,
		.layer = MAGNET_SKB_LAYER_NETWORK,
		.protocol = htons(p->family == AF_INET ? 0x0800 : 0x86dd),
	};

	if (p->proto == IPPROTO_TCP)
		l4 = 20;
	else if (p->proto == IPPROTO_UDP)
		l4 = 8;
	total = ip + l4 + p->payload;
	if (p->family == AF_INET) {
		b[0] = 0x45;
		b[2] = total >> 8;
		b[3] = total;
		b[8] = 64;
		b[9] = p->proto;
		if (inet_pton(AF_INET, p->src, b + 12) != 1 ||
		    inet_pton(AF_INET, p->dst, b + 16) != 1)
			return -EINVAL;
	} else {
		b[0] = 0x60;
		b[4] = (l4 + p->payload) >> 8;
		b[5] = l4 + p->payload;
		b[6] = p->proto;
		b[7] = 64;
		if (inet_pton(AF_INET6, p->src, b + 8) != 1 ||
		    inet_pton(AF_INET6, p->dst, b + 24) != 1)
			return -EINVAL;
	}
	if (l4) {
		b[ip] = p->sport >> 8;
		b[ip + 1] = p->sport;
		b[ip + 2] = p->dport >> 8;
		b[ip + 3] = p->dport;
	}
	if (p->proto == IPPROTO_TCP)
		tu_tcp_header(b + ip, p->seq, p->payload, 20, 0);
	k.len = total;
	k.caplen = ip + l4;
	return mg_record_encode_skb(buf, cap, &h, &k, b, k.caplen);
}
