// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the gmond module's client of magnetd
 * (monitors/ganglia/totals.c): what a magnetd, or whatever listens in its
 * place, sends back to TOTALS. The input is that reply:
 *
 *   1. assembly as it arrives (mgg_rx_more), the input cut into reads in
 *      several ways, each read's bytes in a buffer of exactly their
 *      length: the same answer (the reply's length, more to come, or
 *      refused) whatever the cuts;
 *   2. the reply so assembled (or the whole input) through mgg_parse: a
 *      reply that mgg_rx_more took whole is never "cut" nor "longer" to
 *      mgg_parse; an accepted one has the probe and job lines a model
 *      counts, counters that are integers from 0 to 2^64, and names
 *      without NUL; reasons are one printable line;
 *   3. every name, and the input as a name, through mgg_safe_name at
 *      several sizes: within the size, only bytes gmond and gmetad pass
 *      as XML allows, and it decodes back to the name (or, cut, to the
 *      name's end).
 *
 * Any broken invariant abort()s, so libFuzzer reports it with the input.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "totals.h"

#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "fuzz_ganglia: %s:%d: %s\n",	\
				__FILE__, __LINE__, #cond);		\
			abort();					\
		}							\
	} while (0)

/* An exact-size heap copy, so reads past len are ASan's to catch. */
static char *dup_exact(const void *s, size_t len)
{
	char *p = malloc(len ? len : 1);

	CHECK(p);
	memcpy(p, s, len);
	return p;
}

/* What gmond's and gmetad's XML take as is (see tests/unit/test_ganglia.c). */
static bool xml_safe(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f ||
		    strchr("<>&\"'", *s))
			return false;
	return true;
}

static bool one_printable_line(const char *why, size_t size)
{
	const char *end = memchr(why, '\0', size);

	if (!end || end == why)
		return false;
	for (; why < end; why++)
		if ((unsigned char)*why < 0x20 || (unsigned char)*why >= 0x7f)
			return false;
	return true;
}

static int hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* mgg_safe_name's output back to bytes: n of them, or -1 if not its form. */
static long decode(char *dst, const char *s)
{
	long n = 0;

	while (*s) {
		if (*s == '%') {
			if (hex(s[1]) < 0 || hex(s[2]) < 0)
				return -1;
			dst[n++] = (char)(hex(s[1]) << 4 | hex(s[2]));
			s += 3;
		} else {
			dst[n++] = *s++;
		}
	}
	return n;
}

/* Bytes mgg_safe_name writes as they are: the rest is %XX. */
static size_t escaped_len(unsigned char c)
{
	return c >= 0x20 && c < 0x7f && !strchr("%<>&\"'", c) ? 1 : 3;
}

static void check_safe_name(const char *name, size_t size)
{
	size_t len = strlen(name), need = 0, i, o;
	char *out = malloc(size), *back = malloc(size + 1);
	long n;

	CHECK(out && back);
	for (i = 0; i < len; i++)
		need += escaped_len(name[i]);
	mgg_safe_name(out, size, name);
	o = strlen(out);
	CHECK(o < size);
	CHECK(xml_safe(out));
	if (size < 4) {
		CHECK(!o);
	} else if (need <= size - 1) {
		n = decode(back, out);
		CHECK(o == need && n >= 0 && (size_t)n == len && !memcmp(back, name, len));
	} else {
		/* Cut: "..." and as much of the name's end as fits. */
		CHECK(!strncmp(out, "...", 3));
		n = decode(back, out + 3);
		CHECK(n >= 0 && (size_t)n < len && !memcmp(back, name + len - n, n));
		CHECK(o + escaped_len(name[len - n - 1]) > size - 1);
	}
	free(out);
	free(back);
}

static void check_names(const struct mgg_counter *v, size_t n)
{
	static const size_t sizes[] = { 64, 4, 11, 256 };
	size_t i, k;

	for (i = 0; i < n; i++) {
		CHECK(v[i].name);
		CHECK(v[i].events >= 0 && v[i].events <= 18446744073709551616.0 &&
		      v[i].events == floor(v[i].events));
		CHECK(v[i].sock_bytes >= 0 && v[i].sock_bytes <= 18446744073709551616.0 &&
		      v[i].sock_bytes == floor(v[i].sock_bytes));
		for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
			check_safe_name(v[i].name, sizes[k]);
	}
}

static bool counter(double v)
{
	return isfinite(v) && v >= 0 && v <= 18446744073709551616.0 && v == floor(v);
}

/* The model: probe and job lines among the n lines after the first. */
static void count_lines(const char *t, size_t len, size_t *probes, size_t *jobs)
{
	const char *end = t + len, *p = memchr(t, '\n', len), *eol;
	long n = strtol(t + 3, NULL, 10);	/* t is NUL-terminated */

	*probes = *jobs = 0;
	for (p++; n-- > 0; p = eol + 1) {
		eol = memchr(p, '\n', end - p);
		*probes += eol - p >= 6 && !memcmp(p, "probe ", 6);
		*jobs += eol - p >= 4 && !memcmp(p, "job ", 4);
	}
}

static void check_parse(const uint8_t *data, size_t len, bool whole)
{
	struct mgg_snapshot s;
	char why[128], *b = dup_exact(data, len), *z;
	size_t probes, jobs;
	int ret;

	memset(why, 0, sizeof(why));
	ret = mgg_parse(b, len, &s, why);
	if (ret) {
		CHECK(ret == -EINVAL || ret == -ENOMEM);
		CHECK(one_printable_line(why, sizeof(why)));
		CHECK(!whole || (strncmp(why, "TOTALS reply cut", 16) &&
				 strncmp(why, "TOTALS reply longer", 19)));
		CHECK(!s.nprobes && !s.njobs && !s.probes_v && !s.jobs_v);
		free(b);
		return;
	}
	CHECK(isfinite(s.ts) && s.ts >= 0 && s.ts <= 1.9e10);	/* ns / 1e9 */
	CHECK(counter(s.uptime) && counter(s.records) && counter(s.bytes));
	CHECK(counter(s.kernel_lost) && counter(s.daemon_dropped) && counter(s.probes));
	CHECK(s.nprobes + s.njobs <= MGG_LINES_MAX);
	z = calloc(1, len + 1);
	CHECK(z);
	memcpy(z, data, len);
	count_lines(z, len, &probes, &jobs);
	CHECK(probes == s.nprobes && jobs == s.njobs);
	check_names(s.probes_v, s.nprobes);
	check_names(s.jobs_v, s.njobs);
	mgg_free(&s);
	free(z);
	free(b);
}

/* mgg_rx_more over the input in reads ending at cuts[]; its answer. */
static long rx_cut(const uint8_t *data, size_t len, const size_t *cuts, size_t ncuts,
		   char *why)
{
	struct mgg_rx rx = { 0 };
	size_t i;
	long ret = 0;

	for (i = 0; i < ncuts && !ret; i++) {
		char *b = dup_exact(data, cuts[i]);

		ret = mgg_rx_more(&rx, b, cuts[i], why);
		free(b);
	}
	return ret;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	size_t cuts[10], n, i;
	char why[128], *name;
	long whole, got;
	uint32_t h = 2166136261u;

	/* 1. Assembly: one read, then reads cut where a hash of the input says. */
	cuts[0] = len;
	memset(why, 0, sizeof(why));
	whole = rx_cut(data, len, cuts, 1, why);
	CHECK(whole >= -EINVAL && (whole <= 0 || (size_t)whole <= len));
	if (whole < 0)
		CHECK(whole == -EINVAL && one_printable_line(why, sizeof(why)));
	for (i = 0; i < len; i++)
		h = (h ^ data[i]) * 16777619u;
	for (n = 0; n < 9 && len; n++) {
		h = h * 1103515245u + 12345u;
		cuts[n] = len * (n + 1) / 10 + (len > 10 ? (h >> 8) % (len / 10) : 0);
		if (cuts[n] > len)
			cuts[n] = len;
		if (n && cuts[n] < cuts[n - 1])
			cuts[n] = cuts[n - 1];
	}
	cuts[n++] = len;
	got = rx_cut(data, len, cuts, n, why);
	CHECK(got == whole);
	for (i = 0; i < 3; i++) {	/* byte by byte over a stretch */
		size_t k, from = i * len / 3;

		for (n = 0, k = 0; k < 8 && from + k <= len; k++)
			cuts[n++] = from + k;
		cuts[n++] = len;
		got = rx_cut(data, len, cuts, n, why);
		CHECK(got == whole);
	}

	/* 2. The parser, on the reply as assembled and on the whole input. */
	if (whole > 0)
		check_parse(data, whole, true);
	check_parse(data, len, false);

	/* 3. The input as a name. */
	name = calloc(1, len + 1);
	CHECK(name);
	memcpy(name, data, len);
	check_safe_name(name, 64);
	check_safe_name(name, 4 + len % 61);
	free(name);
	return 0;
}
