/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Small helpers of the tools and magnetd: hex digits, UTF-8 sequences, and
 * the command-line tools' fatal errors.
 */
#ifndef MAGNET_LIB_UTIL_H
#define MAGNET_LIB_UTIL_H

#include <stdarg.h>
#include <stddef.h>

/* The value of a hex digit (either case), or -1. */
static inline int mg_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * The valid UTF-8 sequence at s (NUL-terminated, or long enough): its
 * length with *cp its code point, or 0 for a stray, overlong or surrogate
 * sequence, or one past U+10FFFF. ASCII is a sequence of 1.
 */
size_t mg_utf8_decode(const unsigned char *s, unsigned int *cp);

/*
 * A tool's end: stdout flushed, "prog: " and the message with a newline on
 * stderr, exit(code).
 */
__attribute__((format(printf, 3, 0), noreturn))
void mg_vdie(const char *prog, int code, const char *fmt, va_list ap);

#endif /* MAGNET_LIB_UTIL_H */
