/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one way every tool writes a string that came from outside (probe
 * and event names, a trace's hostname, labels): as a JSON string, or as
 * text for a terminal or a field. Whatever the bytes, neither form lets
 * through one that could end a line, drive a terminal or make the output
 * invalid. The forms are documented in docs/magnet-dump.md ("Strings").
 */
#ifndef MAGNET_LIB_ESCAPE_H
#define MAGNET_LIB_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

/*
 * The len bytes at s as a JSON string literal, quotes included; always
 * valid JSON (RFC 8259), so always valid UTF-8:
 *   - '"' and '\' as \" and \\; \b, \f, \n, \r, \t; the other controls
 *     (U+0000-U+001F), DEL and the C1 controls (U+0080-U+009F) as \u00XX,
 *     U+2028 and U+2029 as \u2028 and \u2029;
 *   - every other valid UTF-8 sequence (RFC 3629: shortest form, no
 *     surrogate, at most U+10FFFF) as it is;
 *   - each byte of anything else (a stray continuation byte, a truncated,
 *     overlong or surrogate sequence, 0xF5-0xFF) as \u00XX, XX its value:
 *     such bytes read as Latin-1.
 */
void mg_json_write(FILE *f, const void *s, size_t len);

/* The NUL-terminated s, as mg_json_write(). */
void mg_json_string(FILE *f, const char *s);

/* mg_escape() flags */
#define MG_ESC_SPACE	(1U << 0)	/* spaces as \x20 too: one word */

/*
 * s as text into buf (size bytes, always NUL-terminated; cut before a
 * character or escape that does not fit): '\' as \\; control bytes, DEL,
 * the C1 controls and bytes that are not valid UTF-8 as \xNN, one per
 * byte (lower-case hex); printable ASCII (and, with MG_ESC_SPACE, not the
 * space) and printable UTF-8 (U+00A0 and up) as they are. Returns buf.
 */
const char *mg_escape(char *buf, size_t size, const char *s,
		      unsigned int flags);

/* s as mg_escape() has it, whole, to f. */
void mg_escape_write(FILE *f, const char *s, unsigned int flags);

/*
 * The len bytes at s (NULs included, as \x00) as mg_escape() has them,
 * into buf as above. Returns the bytes of s written: len when whole.
 */
size_t mg_escape_mem(char *buf, size_t size, const void *s, size_t len,
		     unsigned int flags);

/*
 * How many of the len bytes at s, from the first, a terminal only shows:
 * printable ASCII, the space and printable UTF-8 (what mg_escape() leaves
 * as it is, '\' aside). len when all are; mg_json_write()'s output is.
 */
size_t mg_text_inert(const void *s, size_t len);

#endif /* MAGNET_LIB_ESCAPE_H */
