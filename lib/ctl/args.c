// SPDX-License-Identifier: GPL-2.0
/*
 * magnet-ctl: words and values of the command line (numbers, sizes,
 * durations, CPU lists, probe targets), parsed and printed back. Pure
 * functions: tests/unit/test_ctl.c covers them.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

int ctl_match(const char *word, const char *const *words, char *cands,
	      size_t len)
{
	size_t wl = strlen(word), used = 0;
	int i, found = -ENOENT, n = 0;

	if (cands && len)
		cands[0] = '\0';
	if (!wl)
		return -ENOENT;
	for (i = 0; words[i]; i++)
		if (!strcmp(word, words[i]))
			return i;
	for (i = 0; words[i]; i++) {
		if (strncmp(word, words[i], wl))
			continue;
		found = i;
		n++;
		if (cands && used < len) {
			int w = snprintf(cands + used, len - used, "%s%s",
					 n > 1 ? ", " : "", words[i]);

			used += w > 0 ? (size_t)w : 0;
		}
	}
	return n > 1 ? -EAMBIGUOUS : found;
}

bool ctl_is_number(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/*
 * The number at the start of s, decimal or (if hex) 0x-hex; *end after it.
 * Digits first: strtoull() alone would take spaces and a sign.
 */
static int parse_num(const char *s, const char **end, __u64 *v, bool hex)
{
	int base = 10;
	char *e;

	if (hex && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		if (!isxdigit((unsigned char)s[2]))
			return -EINVAL;
	} else if (!isdigit((unsigned char)s[0])) {
		return -EINVAL;
	}
	errno = 0;
	*v = strtoull(s, &e, base);
	if (errno == ERANGE)
		return -ERANGE;
	*end = e;
	return 0;
}

int ctl_parse_u64(const char *s, __u64 max, __u64 *v)
{
	const char *end;
	__u64 x;
	int ret;

	ret = parse_num(s, &end, &x, true);
	if (ret)
		return ret;
	if (*end)
		return -EINVAL;
	if (x > max)
		return -ERANGE;
	*v = x;
	return 0;
}

int ctl_parse_size(const char *s, __u64 *v)
{
	static const struct {
		const char *suffix;
		unsigned int shift;
	} units[] = {
		{ "", 0 },
		{ "K", 10 }, { "KiB", 10 }, { "k", 10 },
		{ "M", 20 }, { "MiB", 20 }, { "m", 20 },
		{ "G", 30 }, { "GiB", 30 }, { "g", 30 },
	};
	const char *end;
	size_t i;
	__u64 x;
	int ret;

	ret = parse_num(s, &end, &x, true);
	if (ret)
		return ret;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].suffix))
			continue;
		if (x > (UINT64_MAX >> units[i].shift))
			return -ERANGE;
		*v = x << units[i].shift;
		return 0;
	}
	return -EINVAL;
}

int ctl_parse_duration(const char *s, __u64 *ns)
{
	static const struct {
		const char *unit;
		__u64 ns;
		unsigned int digits;	/* fraction digits that are whole ns */
	} units[] = {
		{ "ns", 1, 0 },
		{ "us", 1000, 3 },
		{ "ms", 1000000, 6 },
		{ "s", 1000000000, 9 },
	};
	const char *p = s, *frac = NULL;
	unsigned int nfrac = 0, i, k;
	__u64 whole = 0, f = 0;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		if (whole > (UINT64_MAX - (*p - '0')) / 10)
			return -ERANGE;
		whole = whole * 10 + (*p - '0');
	}
	if (*p == '.') {
		frac = ++p;
		for (; isdigit((unsigned char)*p); p++)
			nfrac++;
		if (!nfrac)
			return -EINVAL;
	}
	if (!*p) {
		/* Only zero needs no unit. */
		if (whole || frac) {
			if (whole || strspn(frac, "0") != nfrac)
				return -EINVAL;
		}
		*ns = 0;
		return 0;
	}
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(p, units[i].unit))
			continue;
		/* Fraction digits beyond whole ns must be zero. */
		for (k = 0; k < nfrac; k++) {
			if (k < units[i].digits)
				f = f * 10 + (frac[k] - '0');
			else if (frac[k] != '0')
				return -EINVAL;
		}
		for (k = nfrac; k < units[i].digits; k++)
			f *= 10;
		if (whole > (UINT64_MAX - f) / units[i].ns)
			return -ERANGE;
		*ns = whole * units[i].ns + f;
		return 0;
	}
	return -EINVAL;
}

int ctl_parse_cpus(const char *s, __u64 *mask, unsigned int *words)
{
	const char *p = s;
	unsigned int top = 0;
	bool any = false;

	memset(mask, 0, CTL_CPU_WORDS * sizeof(*mask));
	/* Decimal only, as in the kernel's own cpulist format. */
	for (;;) {
		__u64 lo, hi, c;
		int ret;

		ret = parse_num(p, &p, &lo, false);
		if (ret)
			return ret;
		hi = lo;
		if (*p == '-') {
			ret = parse_num(p + 1, &p, &hi, false);
			if (ret)
				return ret;
			if (hi < lo)
				return -EINVAL;
		}
		if (hi >= CTL_CPUS_MAX)
			return -ERANGE;
		for (c = lo; c <= hi; c++)
			mask[c / 64] |= 1ULL << (c % 64);
		if (hi + 1 > top)
			top = hi + 1;
		any = true;
		if (!*p)
			break;
		if (*p != ',')
			return -EINVAL;
		p++;
	}
	if (!any)
		return -EINVAL;
	*words = (top + 63) / 64;
	return 0;
}

int ctl_parse_target(const char *s, char *sym, size_t len, __u32 *offset,
		     bool *has_offset)
{
	const char *plus = strchr(s, '+');
	size_t n = plus ? (size_t)(plus - s) : strlen(s);
	size_t i;

	*has_offset = false;
	*offset = 0;
	if (!n)
		return -EINVAL;
	if (n >= len)
		return -ERANGE;
	for (i = 0; i < n; i++)
		if (!isgraph((unsigned char)s[i]) || s[i] == '@')
			return -EINVAL;
	if (plus) {
		__u64 off;
		int ret = ctl_parse_u64(plus + 1, UINT32_MAX, &off);

		if (ret)
			return ret;
		*offset = off;
		*has_offset = true;
	}
	memcpy(sym, s, n);
	sym[n] = '\0';
	return 0;
}

int ctl_parse_capture(const char *s, __u16 *len, __u8 *arg)
{
	const char *at = strchr(s, '@');
	char buf[32];
	__u64 l, a = 0;
	size_t n = at ? (size_t)(at - s) : strlen(s);
	int ret;

	if (n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	ret = ctl_parse_u64(buf, MAGNET_PAYLOAD_MAX, &l);
	if (ret)
		return ret;
	if (!l)
		return -ERANGE;
	if (at) {
		ret = ctl_parse_u64(at + 1, MAGNET_ARGS_MAX - 1, &a);
		if (ret)
			return ret;
	}
	*len = l;
	*arg = a;
	return 0;
}

unsigned int ctl_capture_max(__u8 type, unsigned int nargs)
{
	unsigned int fixed = sizeof(struct magnet_capture) + 8 * nargs;

	if (type == MAGNET_PROBE_KRETPROBE)
		fixed += 16;		/* retval, latency */
	return MAGNET_PAYLOAD_MAX - fixed;
}

void ctl_format_cpus(char *buf, size_t len, const __u64 *mask,
		     unsigned int words)
{
	unsigned int c, n = words * 64;
	size_t used = 0;
	bool first = true;

	buf[0] = '\0';
	for (c = 0; c < n; c++) {
		unsigned int e;
		int w;

		if (!(mask[c / 64] & (1ULL << (c % 64))))
			continue;
		for (e = c; e + 1 < n && (mask[(e + 1) / 64] & (1ULL << ((e + 1) % 64))); e++)
			;
		if (used >= len)
			break;
		if (e == c)
			w = snprintf(buf + used, len - used, "%s%u",
				     first ? "" : ",", c);
		else
			w = snprintf(buf + used, len - used, "%s%u-%u",
				     first ? "" : ",", c, e);
		used += w > 0 ? (size_t)w : 0;
		first = false;
		c = e;
	}
	if (first)
		snprintf(buf, len, "none");
}

void ctl_format_size(char *buf, size_t len, __u64 v)
{
	static const char units[] = "GMK";
	unsigned int i;

	for (i = 0; i < 3; i++) {
		unsigned int shift = 30 - 10 * i;

		if (v && !(v & ((1ULL << shift) - 1))) {
			snprintf(buf, len, "%llu%c",
				 (unsigned long long)(v >> shift), units[i]);
			return;
		}
	}
	snprintf(buf, len, "%llu", (unsigned long long)v);
}

void ctl_format_duration(char *buf, size_t len, __u64 ns)
{
	static const struct {
		const char *unit;
		__u64 ns;
	} units[] = {
		{ "s", 1000000000 }, { "ms", 1000000 }, { "us", 1000 },
	};
	unsigned int i;

	for (i = 0; i < 3; i++) {
		if (ns && !(ns % units[i].ns)) {
			snprintf(buf, len, "%llu%s",
				 (unsigned long long)(ns / units[i].ns),
				 units[i].unit);
			return;
		}
	}
	snprintf(buf, len, "%llu%s", (unsigned long long)ns, ns ? "ns" : "");
}
