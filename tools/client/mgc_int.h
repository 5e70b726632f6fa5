/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mgclient's private helpers, shared by its two halves: mgclient.c (the
 * transport: addresses, framing, the connection) and mgreply.c (the reply
 * parsers). Error sentences and word splitting, as both quote input.
 */
#ifndef MAGNET_CLIENT_MGC_INT_H
#define MAGNET_CLIENT_MGC_INT_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "mgclient.h"

/* Bytes of an offending line quoted in an error. */
#define MGC_EXCERPT		40

static inline void vwhy(char *why, size_t whylen, const char *fmt,
			va_list ap)
{
	if (why && whylen)
		vsnprintf(why, whylen, fmt, ap);
}

/* Input that breaks the protocol: why, and -EPROTO. */
__attribute__((format(printf, 3, 4)))
static inline int fail(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwhy(why, whylen, fmt, ap);
	va_end(ap);
	return -EPROTO;
}

/* A cut copy of untrusted bytes, to quote in an error (mgc_quote()). */
static inline const char *excerpt(char *buf, size_t size, const char *s,
				  size_t len)
{
	return mgc_quote(buf, size, s, len > MGC_EXCERPT ? MGC_EXCERPT : len,
			 len > MGC_EXCERPT);
}

static inline bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/*
 * Next blank-separated word of [*p, end): *w and *wl, *p moved past it.
 * false when only blanks are left.
 */
static inline bool next_word(const char **p, const char *end,
			     const char **w, size_t *wl)
{
	const char *s = *p;

	while (s < end && is_blank(*s))
		s++;
	if (s == end) {
		*p = s;
		return false;
	}
	*w = s;
	while (s < end && !is_blank(*s))
		s++;
	*wl = s - *w;
	*p = s;
	return true;
}

static inline bool word_eq(const char *w, size_t wl, const char *s)
{
	return wl == strlen(s) && !memcmp(w, s, wl);
}

#endif /* MAGNET_CLIENT_MGC_INT_H */
