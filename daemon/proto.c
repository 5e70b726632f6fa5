// SPDX-License-Identifier: GPL-2.0
/*
 * magnetd's client protocol: command lines and line assembly
 * (docs/protocol.md).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "proto.h"

static const char *const cmd_names[MG_CMD_NR] = {
	[MG_CMD_HELLO] = "HELLO",
	[MG_CMD_PROBES] = "PROBES",
	[MG_CMD_STATS] = "STATS",
	[MG_CMD_SUBSCRIBE] = "SUBSCRIBE",
	[MG_CMD_AGG] = "AGG",
	[MG_CMD_UNSUBSCRIBE] = "UNSUBSCRIBE",
	[MG_CMD_QUIT] = "QUIT",
	[MG_CMD_TOTALS] = "TOTALS",
	[MG_CMD_AUTH] = "AUTH",
};

static const char *const agg_names[MG_AGG_NR] = {
	[MG_AGG_PROBE] = "probe",
	[MG_AGG_PID] = "pid",
	[MG_AGG_TGID] = "tgid",
	[MG_AGG_COMM] = "comm",
	[MG_AGG_NET] = "net",
	[MG_AGG_CGROUP] = "cgroup",
};

const char *mg_proto_cmd_name(enum mg_cmd_kind kind)
{
	return (unsigned int)kind < MG_CMD_NR ? cmd_names[kind] : "?";
}

const char *mg_proto_format_name(enum mg_format f)
{
	return f == MG_FORMAT_BINARY ? "binary" : "json";
}

const char *mg_proto_agg_key_name(enum mg_agg_key k)
{
	return (unsigned int)k < MG_AGG_NR ? agg_names[k] : "?";
}

/* A word of the line; words are separated by blanks. */
struct word {
	const char *s;
	size_t len;
};

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool word_is(const struct word *w, const char *kw)
{
	return strlen(kw) == w->len && !strncasecmp(w->s, kw, w->len);
}

/* Split [s, s + len) into at most max words; returns the count, or max + 1
 * if there are more. */
static size_t split(const char *s, size_t len, struct word *w, size_t max)
{
	size_t n = 0, i = 0, start;

	for (;;) {
		while (i < len && is_blank(s[i]))
			i++;
		if (i == len)
			return n;
		if (n == max)
			return max + 1;
		start = i;
		while (i < len && !is_blank(s[i]))
			i++;
		w[n].s = s + start;
		w[n].len = i - start;
		n++;
	}
}

static int __attribute__((format(printf, 2, 3)))
err(struct mg_cmd *cmd, const char *fmt, ...)
{
	va_list ap;

	memcpy(cmd->error, "ERR ", 4);
	va_start(ap, fmt);
	vsnprintf(cmd->error + 4, sizeof(cmd->error) - 4, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/*
 * Client words echoed in errors are cut, so every reason fits whole, and
 * their bytes 0x80-0xff shown as '?' (as the filter's errors do): a reply
 * is printable ASCII, whatever a terminal makes of other bytes.
 */
#define ECHO_MAX	32
static const char *echo(char *buf, const struct word *w)
{
	size_t i, n = w->len > ECHO_MAX ? ECHO_MAX : w->len;

	for (i = 0; i < n; i++)
		buf[i] = (unsigned char)w->s[i] < 0x7f ? w->s[i] : '?';
	strcpy(buf + n, w->len > n ? "..." : "");
	return buf;
}

static const struct {
	const char *name;
	__u64 ns;
} units[] = {
	{ "ns", 1ULL },
	{ "us", 1000ULL },
	{ "ms", 1000000ULL },
	{ "s", 1000000000ULL },
	{ "m", 60000000000ULL },
	{ "h", 3600000000000ULL },
};

int mg_proto_parse_interval(const char *s, size_t len, __u64 *ns, char *why)
{
	__u64 v = 0, mul = 0;
	size_t i, u;

	for (i = 0; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
		/* Anything this big is past the maximum anyway. */
		if (v > UINT64_MAX / 10 - 1)
			goto range;
		v = v * 10 + (s[i] - '0');
	}
	if (!i) {
		snprintf(why, MG_PROTO_ERR_MAX,
			 "interval must start with a decimal number");
		return -EINVAL;
	}
	for (u = 0; u < sizeof(units) / sizeof(units[0]); u++)
		if (strlen(units[u].name) == len - i &&
		    !memcmp(units[u].name, s + i, len - i))
			mul = units[u].ns;
	if (!mul) {
		snprintf(why, MG_PROTO_ERR_MAX,
			 "interval needs a unit: ns, us, ms, s, m or h");
		return -EINVAL;
	}
	if (v > MG_PROTO_EVERY_MAX_NS / mul)
		goto range;
	v *= mul;
	if (v < MG_PROTO_EVERY_MIN_NS || v > MG_PROTO_EVERY_MAX_NS)
		goto range;
	*ns = v;
	return 0;
range:
	snprintf(why, MG_PROTO_ERR_MAX, "interval must be 10ms to 24h");
	return -EINVAL;
}

/* Is p inside a "string" that starts at or after s? */
static bool quoted(const char *s, const char *p)
{
	bool in = false;

	for (; s < p; s++)
		in ^= *s == '"';
	return in;
}

static int parse_subscribe(struct mg_cmd *cmd, const char *line,
			   const char *s, size_t len)
{
	const char *end = s + len;
	struct word w[2];
	size_t n = 0;
	const char *p;
	char buf[ECHO_MAX + 4];

	/* The last two words, right to left. */
	p = end;
	while (n < 2) {
		while (p > s && is_blank(p[-1]))
			p--;
		if (p == s)
			break;
		w[n].len = 0;
		while (p > s && !is_blank(p[-1])) {
			p--;
			w[n].len++;
		}
		w[n].s = p;
		n++;
	}
	/* A FORMAT inside a quoted probe name is the name's. */
	if (n == 2 && word_is(&w[1], "FORMAT") && !quoted(s, w[1].s)) {
		if (word_is(&w[0], "json"))
			cmd->format = MG_FORMAT_JSON;
		else if (word_is(&w[0], "binary"))
			cmd->format = MG_FORMAT_BINARY;
		else
			return err(cmd, "unknown format '%s' (json or binary)",
				   echo(buf, &w[0]));
		end = w[1].s;
	} else if (n && word_is(&w[0], "FORMAT") && !quoted(s, w[0].s)) {
		return err(cmd, "FORMAT needs json or binary");
	}
	while (s < end && is_blank(end[-1]))
		end--;
	cmd->filter = s;
	cmd->filter_len = end - s;
	cmd->filter_col = s - line;
	return 0;
}

/* AUTH MUNGE <credential>: the one scheme; the credential is one word. */
static int parse_auth(struct mg_cmd *cmd, const char *s, size_t len)
{
	struct word w[3];
	size_t n = split(s, len, w, 3);
	char buf[ECHO_MAX + 4];

	if (n == 0)
		return err(cmd, "AUTH needs a scheme: AUTH MUNGE <credential>");
	if (!word_is(&w[0], "MUNGE"))
		return err(cmd, "unknown AUTH scheme '%s' (MUNGE)", echo(buf, &w[0]));
	if (n == 1)
		return err(cmd, "AUTH MUNGE needs a credential (munge -s magnetd)");
	if (n > 2)
		return err(cmd, "too many arguments to AUTH");
	cmd->cred = w[1].s;
	cmd->cred_len = w[1].len;
	return 0;
}

static int parse_agg(struct mg_cmd *cmd, const char *s, size_t len)
{
	struct word w[3];
	size_t n = split(s, len, w, 3);
	char buf[ECHO_MAX + 4], why[MG_PROTO_ERR_MAX];
	unsigned int k;

	if (n == 0)
		return err(cmd, "AGG needs a key: probe, pid, tgid, comm, cgroup or net");
	for (k = 0; k < MG_AGG_NR; k++)
		if (word_is(&w[0], agg_names[k]))
			break;
	if (k == MG_AGG_NR)
		return err(cmd, "unknown AGG key '%s' (probe, pid, tgid, comm, cgroup or net)",
			   echo(buf, &w[0]));
	cmd->agg_key = k;
	cmd->interval_ns = MG_PROTO_EVERY_DEFAULT_NS;
	if (n == 1)
		return 0;
	if (!word_is(&w[1], "EVERY"))
		return err(cmd, "expected EVERY after the AGG key, not '%s'",
			   echo(buf, &w[1]));
	if (n == 2)
		return err(cmd, "EVERY needs an interval, e.g. 500ms");
	if (n > 3)
		return err(cmd, "too many arguments to AGG");
	if (mg_proto_parse_interval(w[2].s, w[2].len, &cmd->interval_ns, why))
		return err(cmd, "%s", why);
	return 0;
}

int mg_proto_parse(const char *line, size_t len, struct mg_cmd *cmd)
{
	const char *rest;
	struct word w;
	char buf[ECHO_MAX + 4];
	size_t i, rlen;
	unsigned int k;

	memset(cmd, 0, sizeof(*cmd));
	if (len > MG_PROTO_LINE_MAX)
		return err(cmd, "line too long (max %d bytes)", MG_PROTO_LINE_MAX);
	/* Replies echo client words, and NUL would hide the rest of a filter:
	 * the line is printable text. */
	for (i = 0; i < len; i++) {
		unsigned char c = line[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return err(cmd, "control character 0x%02x at column %zu",
				   c, i);
	}
	if (split(line, len, &w, 1) == 0)
		return err(cmd, "empty command");
	for (k = 0; k < MG_CMD_NR; k++)
		if (word_is(&w, cmd_names[k]))
			break;
	if (k == MG_CMD_NR)
		return err(cmd, "unknown command '%s'", echo(buf, &w));
	cmd->kind = k;
	rest = w.s + w.len;
	rlen = line + len - rest;
	while (rlen && is_blank(*rest)) {
		rest++;
		rlen--;
	}
	switch (cmd->kind) {
	case MG_CMD_SUBSCRIBE:
		return parse_subscribe(cmd, line, rest, rlen);
	case MG_CMD_AGG:
		return parse_agg(cmd, rest, rlen);
	case MG_CMD_AUTH:
		return parse_auth(cmd, rest, rlen);
	default:
		if (rlen)
			return err(cmd, "%s takes no arguments", cmd_names[k]);
		return 0;
	}
}

void mg_linebuf_init(struct mg_linebuf *lb)
{
	lb->len = 0;
	lb->skipping = false;
	lb->buf[0] = '\0';
}

enum mg_line_status mg_linebuf_take(struct mg_linebuf *lb, const char **data,
				    size_t *len, const char **line,
				    size_t *line_len)
{
	const char *nl;
	size_t chunk, room;

	while (*len) {
		nl = memchr(*data, '\n', *len);
		if (lb->skipping) {
			if (!nl)
				break;
			*len -= nl + 1 - *data;
			*data = nl + 1;
			lb->skipping = false;
			continue;
		}
		chunk = nl ? (size_t)(nl - *data) : *len;
		room = MG_PROTO_LINE_MAX - lb->len;
		if (chunk > room) {
			/* Byte room is not the '\n': the line is too long. Say so
			 * now, not at a '\n' that may never come. */
			*data += room;
			*len -= room;
			lb->len = 0;
			lb->skipping = true;
			return MG_LINE_TOO_LONG;
		}
		memcpy(lb->buf + lb->len, *data, chunk);
		lb->len += chunk;
		if (!nl) {
			*data += chunk;
			*len -= chunk;
			return MG_LINE_MORE;
		}
		*data += chunk + 1;
		*len -= chunk + 1;
		if (lb->len && lb->buf[lb->len - 1] == '\r')
			lb->len--;
		lb->buf[lb->len] = '\0';
		*line = lb->buf;
		*line_len = lb->len;
		/* The next call starts a new line; buf stays valid till then. */
		lb->len = 0;
		return MG_LINE_READY;
	}
	if (lb->skipping)
		*data += *len;
	*len = 0;
	return MG_LINE_MORE;
}
