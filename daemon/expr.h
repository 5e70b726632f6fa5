/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Filter expressions over record header fields (docs/protocol.md, Filters):
 *
 *     probe == tcp_sendmsg && tgid == 1234 || cpu == 2
 *     !(pid == 1) && abstract >= 0x1000
 *
 * Parsed once per subscription into a compact tree, then evaluated for
 * every record the daemon reads, so evaluation neither allocates nor
 * recurses deeper than the nesting limit.
 */
#ifndef MAGNET_DAEMON_EXPR_H
#define MAGNET_DAEMON_EXPR_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/magnet.h>

/* Comparisons, &&, || and ! each take a node; a longer filter is refused. */
#define MG_EXPR_MAX_NODES	256
/* Enclosing '(' and '!' of any part of a filter. */
#define MG_EXPR_MAX_DEPTH	32
/* An error message, "at column N" included, with its NUL. */
#define MG_EXPR_ERR_MAX		160

struct mg_expr;

/*
 * Probe name to event id, for "probe == NAME": 0 with *id set, or any
 * negative value for an unknown name. name is not NUL-terminated.
 */
typedef int (*mg_expr_lookup_fn)(void *arg, const char *name, size_t len,
				 unsigned int *id);

struct mg_expr_error {
	size_t column;			/* 0-based byte offset in the text */
	char msg[MG_EXPR_ERR_MAX];	/* "expected ... at column N" */
};

/*
 * Parse len bytes of text (need not be NUL-terminated). lookup may be NULL:
 * then every probe name is unknown. Returns 0 with *out set (free it with
 * mg_expr_free), -EINVAL with *err filled for a malformed filter, or
 * -ENOMEM. Empty text, or "*", matches every record.
 */
int mg_expr_parse(const char *text, size_t len, mg_expr_lookup_fn lookup,
		  void *arg, struct mg_expr **out, struct mg_expr_error *err);

/* Does r match? A NULL expression matches everything. */
bool mg_expr_match(const struct mg_expr *e, const struct magnet_record *r);

/* Does every record match (NULL, empty text, "*")? */
bool mg_expr_all(const struct mg_expr *e);

/* Nodes the expression holds (1 for match-all), at most MG_EXPR_MAX_NODES. */
unsigned int mg_expr_nodes(const struct mg_expr *e);

void mg_expr_free(struct mg_expr *e);

#endif /* MAGNET_DAEMON_EXPR_H */
