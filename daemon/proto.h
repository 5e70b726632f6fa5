/* SPDX-License-Identifier: GPL-2.0 */
/*
 * magnetd's client protocol, version 2 (docs/protocol.md): line assembly
 * from a socket's bytes, and parsing of one command line. The filter of
 * SUBSCRIBE is only cut out here; the daemon parses it with mg_expr_parse,
 * which needs its probe table.
 */
#ifndef MAGNET_DAEMON_PROTO_H
#define MAGNET_DAEMON_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

/* 2: probes named by their names; AGG entry lines start with "E". */
#define MG_PROTO_VERSION	2
/* Bytes of a line before its '\n' (a '\r' before it counts). */
#define MG_PROTO_LINE_MAX	4096
/* An "ERR ..." reply, without the '\n', with its NUL. */
#define MG_PROTO_ERR_MAX	160
/* AGG EVERY bounds, and the interval without EVERY. */
#define MG_PROTO_EVERY_MIN_NS	10000000ULL		/* 10ms */
#define MG_PROTO_EVERY_MAX_NS	86400000000000ULL	/* 24h */
#define MG_PROTO_EVERY_DEFAULT_NS 1000000000ULL		/* 1s */

#define MG_PROTO_ERR_TOO_LONG	"ERR line too long (max 4096 bytes)"

enum mg_cmd_kind {
	MG_CMD_HELLO,
	MG_CMD_PROBES,
	MG_CMD_STATS,
	MG_CMD_SUBSCRIBE,
	MG_CMD_AGG,
	MG_CMD_UNSUBSCRIBE,
	MG_CMD_QUIT,
	MG_CMD_TOTALS,
	MG_CMD_AUTH,
	MG_CMD_NR
};

enum mg_format { MG_FORMAT_JSON, MG_FORMAT_BINARY };

enum mg_agg_key {
	MG_AGG_PROBE,
	MG_AGG_PID,
	MG_AGG_TGID,
	MG_AGG_COMM,
	MG_AGG_CGROUP,
	MG_AGG_NET,		/* packets per job and peer: netview.h */
	MG_AGG_NR
};

struct mg_cmd {
	enum mg_cmd_kind kind;
	/*
	 * SUBSCRIBE: the filter, pointing into the parsed line (valid as long
	 * as it is), blanks around it trimmed; filter_len 0 for none.
	 * filter_col is its offset in the line, for clients that want an
	 * expression error's column relative to the whole line.
	 */
	const char *filter;
	size_t filter_len;
	size_t filter_col;
	enum mg_format format;		/* SUBSCRIBE, default JSON */
	enum mg_agg_key agg_key;	/* AGG */
	__u64 interval_ns;		/* AGG, default EVERY_DEFAULT_NS */
	/* AUTH MUNGE: the credential, pointing into the line. */
	const char *cred;
	size_t cred_len;
	char error[MG_PROTO_ERR_MAX];	/* "ERR <reason>" when parsing fails */
};

/*
 * Parse one line (its '\n' and any '\r' before it removed; need not be
 * NUL-terminated). 0 with *cmd filled, or -EINVAL with cmd->error set to
 * the reply to send.
 */
int mg_proto_parse(const char *line, size_t len, struct mg_cmd *cmd);

/*
 * "500ms", "1s", "2m": a decimal count and a unit (ns, us, ms, s, m, h),
 * within the EVERY bounds. 0, or -EINVAL with the reason (no "ERR ") in
 * why (MG_PROTO_ERR_MAX bytes).
 */
int mg_proto_parse_interval(const char *s, size_t len, __u64 *ns, char *why);

/* Upper-case command word, lower-case format and key names. */
const char *mg_proto_cmd_name(enum mg_cmd_kind kind);
const char *mg_proto_format_name(enum mg_format f);
const char *mg_proto_agg_key_name(enum mg_agg_key k);

/*
 * Line assembly. Feed each read's bytes; every call takes bytes until it has
 * something to report:
 *   MG_LINE_READY     a whole line: line/line_len (NUL-terminated, '\n'
 *                     and a '\r' before it removed), valid until the next
 *                     call;
 *   MG_LINE_TOO_LONG  the current line passed MG_PROTO_LINE_MAX: send
 *                     MG_PROTO_ERR_TOO_LONG. Reported once per line, as soon
 *                     as it is known; the rest of the line, up to and
 *                     including its '\n', is then skipped (resync);
 *   MG_LINE_MORE      every byte was taken, no line is complete.
 * Call it again until MG_LINE_MORE: *data and *len advance past the bytes
 * taken.
 */
enum mg_line_status { MG_LINE_MORE, MG_LINE_READY, MG_LINE_TOO_LONG };

struct mg_linebuf {
	size_t len;		/* bytes of the unfinished line */
	bool skipping;		/* discarding a too-long line up to its '\n' */
	char buf[MG_PROTO_LINE_MAX + 1];
};

void mg_linebuf_init(struct mg_linebuf *lb);
enum mg_line_status mg_linebuf_take(struct mg_linebuf *lb, const char **data,
				    size_t *len, const char **line,
				    size_t *line_len);

#endif /* MAGNET_DAEMON_PROTO_H */
