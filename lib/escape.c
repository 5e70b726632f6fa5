// SPDX-License-Identifier: GPL-2.0
#include <stdbool.h>
#include <string.h>

#include "escape.h"
#include "util.h"

/*
 * The valid UTF-8 sequence at s, of at most len bytes: its length with
 * *cp, or 0. mg_utf8_decode() may look at 4 bytes: a shorter tail is
 * copied and padded with NULs, which end any sequence.
 */
static size_t utf8_at(const unsigned char *s, size_t len, unsigned int *cp)
{
	unsigned char tail[4] = { 0 };

	if (len >= sizeof(tail))
		return mg_utf8_decode(s, cp);
	memcpy(tail, s, len);
	return mg_utf8_decode(tail, cp);
}

/* ASCII that JSON takes as it is: the common case, written in runs. */
static bool json_plain(unsigned char c)
{
	return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
}

void mg_json_write(FILE *f, const void *data, size_t len)
{
	const unsigned char *s = data, *end = s + len;

	putc('"', f);
	while (s < end) {
		const unsigned char *run = s;
		unsigned int cp;
		size_t n;

		while (s < end && json_plain(*s))
			s++;
		if (s > run)
			fwrite(run, 1, s - run, f);
		if (s == end)
			break;
		n = utf8_at(s, end - s, &cp);
		if (!n) {
			/* Not UTF-8: the byte, as the code point of its value. */
			fprintf(f, "\\u%04x", *s++);
			continue;
		}
		switch (cp) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\b':
			fputs("\\b", f);
			break;
		case '\f':
			fputs("\\f", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			/*
			 * C0, DEL and C1 are not for terminals; U+2028/9 end
			 * lines for JavaScript. Escaped, they stay what they are.
			 */
			if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0) ||
			    cp == 0x2028 || cp == 0x2029)
				fprintf(f, "\\u%04x", cp);
			else
				fwrite(s, 1, n, f);
		}
		s += n;
	}
	putc('"', f);
}

void mg_json_string(FILE *f, const char *s)
{
	mg_json_write(f, s, strlen(s));
}

/*
 * The length of the character at s (len bytes left) if a terminal only
 * shows it: printable ASCII, the space, and valid UTF-8 from U+00A0 (the
 * C1 controls, U+0080-U+009F, drive some terminals); else 0.
 */
static size_t inert_at(const unsigned char *s, size_t len)
{
	unsigned int cp;
	size_t n;

	if (*s >= ' ' && *s < 0x7f)
		return 1;
	if (*s < 0x80)
		return 0;
	n = utf8_at(s, len, &cp);
	return n && cp >= 0xa0 ? n : 0;
}

size_t mg_text_inert(const void *data, size_t len)
{
	const unsigned char *s = data;
	size_t off = 0, n;

	while (off < len && (n = inert_at(s + off, len - off)))
		off += n;
	return off;
}

/*
 * The text form of the character at s (len > 0 bytes left) into out: its
 * length; *used gets the bytes of s it stands for.
 */
static size_t text_piece(const unsigned char *s, size_t len,
			 unsigned int flags, char out[8], size_t *used)
{
	size_t n;

	*used = 1;
	if (*s == '\\') {
		memcpy(out, "\\\\", 2);
		return 2;
	}
	n = *s == ' ' && (flags & MG_ESC_SPACE) ? 0 : inert_at(s, len);
	if (n) {
		memcpy(out, s, n);
		*used = n;
		return n;
	}
	return snprintf(out, 8, "\\x%02x", *s);
}

size_t mg_escape_mem(char *buf, size_t size, const void *data, size_t len,
		     unsigned int flags)
{
	const unsigned char *s = data;
	size_t used = 0, off = 0, n, k;
	char piece[8];

	if (!size)
		return 0;
	while (off < len) {
		n = text_piece(s + off, len - off, flags, piece, &k);
		if (used + n >= size)
			break;
		memcpy(buf + used, piece, n);
		used += n;
		off += k;
	}
	buf[used] = '\0';
	return off;
}

const char *mg_escape(char *buf, size_t size, const char *str,
		      unsigned int flags)
{
	mg_escape_mem(buf, size, str, strlen(str), flags);
	return buf;
}

void mg_escape_write(FILE *f, const char *str, unsigned int flags)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t len = strlen(str), off = 0, k;
	char piece[8];

	while (off < len) {
		size_t run = off;

		/* Runs of plain ASCII in one write: every record's name. */
		while (off < len && ((s[off] > ' ' && s[off] < 0x7f && s[off] != '\\') ||
				     (s[off] == ' ' && !(flags & MG_ESC_SPACE))))
			off++;
		if (off > run)
			fwrite(s + run, 1, off - run, f);
		if (off == len)
			break;
		fwrite(piece, 1, text_piece(s + off, len - off, flags, piece, &k), f);
		off += k;
	}
}
