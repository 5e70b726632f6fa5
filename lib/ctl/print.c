// SPDX-License-Identifier: GPL-2.0
/*
 * magnet-ctl: the one output path. Every printer calls these in the order
 * of the documented keys, and the mode decides the form:
 *
 *   text     for people: each field has its own format (or is left out)
 *   -j JSON  "key":value in call order; arrays of objects; a document per
 *            command (monitor: one object per line)
 *   -m       tab-separated: a record is one line, its tag first, then
 *            every field in call order (the JSON keys, in that order)
 *
 * so the three forms cannot drift apart. Formats: docs/magnet-ctl.md.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "escape.h"

#define PR_DEPTH	16

static enum pr_mode mode;
static int depth;			/* open JSON containers */
static bool need_comma[PR_DEPTH];
static bool line_open;			/* machine mode: a record's line */

void pr_start(enum pr_mode m)
{
	mode = m;
	depth = 0;
	line_open = false;
	memset(need_comma, 0, sizeof(need_comma));
}

enum pr_mode pr_mode(void)
{
	return mode;
}

void pr_end(void)
{
	if (mode == PR_MACHINE && line_open) {
		fputc('\n', ctl_outf);
		line_open = false;
	}
	fflush(ctl_outf);
}

/* Text and -m: one word (lib/escape.h, as magnet-top's labels). */
const char *pr_escape(char *buf, size_t len, const char *str)
{
	return mg_escape(buf, len, str, MG_ESC_SPACE);
}

/* Before a JSON value: the comma, and the key inside an object. */
static void json_prefix(const char *key)
{
	FILE *f = ctl_outf;

	if (depth > 0 && need_comma[depth])
		putc(',', f);
	if (depth > 0)
		need_comma[depth] = true;
	if (key)
		fprintf(f, "\"%s\":", key);
}

static void json_open(const char *key, char c)
{
	json_prefix(key);
	putc(c, ctl_outf);
	if (depth + 1 < PR_DEPTH)
		depth++;
	need_comma[depth] = false;
}

static void json_close(char c)
{
	putc(c, ctl_outf);
	if (depth > 0)
		depth--;
	if (!depth)
		putc('\n', ctl_outf);
}

void pr_record_open(const char *tag)
{
	if (mode == PR_JSON) {
		json_open(NULL, '{');
	} else if (mode == PR_MACHINE) {
		if (line_open)
			fputc('\n', ctl_outf);
		fputs(tag, ctl_outf);
		line_open = true;
	}
}

void pr_record_close(void)
{
	if (mode == PR_JSON) {
		json_close('}');
	} else if (mode == PR_MACHINE && line_open) {
		fputc('\n', ctl_outf);
		line_open = false;
	}
}

void pr_array_open(const char *key)
{
	if (mode == PR_JSON)
		json_open(key, '[');
}

void pr_array_close(void)
{
	if (mode == PR_JSON)
		json_close(']');
}

void pr_object_open(const char *key)
{
	if (mode == PR_JSON)
		json_open(key, '{');
}

void pr_object_close(void)
{
	if (mode == PR_JSON)
		json_close('}');
}

/* An integer field: decimal, or "0x"-hex (a JSON string: no hex literals). */
static void pr_int(const char *key, const char *text, __u64 v, bool hex)
{
	unsigned long long x = v;

	switch (mode) {
	case PR_JSON:
		json_prefix(key);
		fprintf(ctl_outf, hex ? "\"0x%llx\"" : "%llu", x);
		break;
	case PR_MACHINE:
		fprintf(ctl_outf, hex ? "\t0x%llx" : "\t%llu", x);
		break;
	case PR_TEXT:
		if (text)
			fprintf(ctl_outf, text, x);
		break;
	}
}

void pr_u64(const char *key, const char *text, __u64 v)
{
	pr_int(key, text, v, false);
}

void pr_hex(const char *key, const char *text, __u64 v)
{
	pr_int(key, text, v, true);
}

void pr_str(const char *key, const char *text, const char *s)
{
	static char buf[4096];

	switch (mode) {
	case PR_JSON:
		json_prefix(key);
		mg_json_string(ctl_outf, s);
		break;
	case PR_MACHINE:
		fprintf(ctl_outf, "\t%s", pr_escape(buf, sizeof(buf), s));
		break;
	case PR_TEXT:
		if (text)
			fprintf(ctl_outf, text, pr_escape(buf, sizeof(buf), s));
		break;
	}
}

void pr_bool(const char *key, const char *text, bool v)
{
	switch (mode) {
	case PR_JSON:
		json_prefix(key);
		fputs(v ? "true" : "false", ctl_outf);
		break;
	case PR_MACHINE:
		fputs(v ? "\t1" : "\t0", ctl_outf);
		break;
	case PR_TEXT:
		if (text && v)
			fputs(text, ctl_outf);
		break;
	}
}

void pr_text(const char *fmt, ...)
{
	va_list ap;

	if (mode != PR_TEXT)
		return;
	va_start(ap, fmt);
	vfprintf(ctl_outf, fmt, ap);
	va_end(ap);
}
