/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Supermon's mon protocol over magnetd's totals (totals.h), on an opt-in
 * listener (Supermon's port 2709): single-line requests, s-expression
 * replies, a category mask per client. Grammar and an example exchange:
 * docs/supermon.md.
 */
#ifndef MAGNET_DAEMON_SUPERMON_H
#define MAGNET_DAEMON_SUPERMON_H

#include <stdbool.h>
#include <stdio.h>

#include "totals.h"

/* Categories, one per concern, and their bits. */
#define MG_SM_NODE	0x1
#define MG_SM_PROBES	0x2
#define MG_SM_JOBS	0x4
#define MG_SM_NET	0x8	/* jobs' traffic per protocol */
#define MG_SM_PEERS	0x10	/* jobs' traffic per peer host */
#define MG_SM_ALL	(MG_SM_NODE | MG_SM_PROBES | MG_SM_JOBS | MG_SM_NET | \
			 MG_SM_PEERS)

/* What mon keeps per client. */
struct mg_supermon_client {
	unsigned int mask;	/* categories its samples hold; MG_SM_ALL at first */
};

void mg_supermon_client_init(struct mg_supermon_client *c);

/* Whether answering this request line needs the totals (# and S). */
bool mg_supermon_wants_view(const char *line, size_t len);

/*
 * Answer one request line (without its newline): write the reply to out.
 * A blank line is no request: no reply. A malformed request gets an error
 * s-expression and changes nothing. v may be NULL for a request that does
 * not want it. Returns 1 when the client asked to close, else 0.
 */
int mg_supermon_handle(FILE *out, const char *line, size_t len,
		       struct mg_supermon_client *c,
		       const struct mg_totals_view *v);

/* The error reply for a request line over the server's line limit. */
void mg_supermon_too_long(FILE *out, size_t max);

#endif /* MAGNET_DAEMON_SUPERMON_H */
