/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Prometheus' text exposition format (version 0.0.4) of magnetd's totals
 * (totals.h), served on an opt-in HTTP listener (docs/monitors.md).
 */
#ifndef MAGNET_DAEMON_PROM_H
#define MAGNET_DAEMON_PROM_H

#include <stdio.h>

#include "totals.h"

/* The metrics page: # HELP, # TYPE and samples of every family. */
int mg_prom_render(FILE *out, const struct mg_totals_view *v);

/*
 * A whole HTTP/1.x response to a request whose request line is `line`
 * (the headers after it are read and ignored by the server): 200 and the
 * page for GET or HEAD of /metrics (HEAD: no body), 404 for another
 * path, 405 for another method, 400 for a line that is not a request.
 * The server closes the connection once the response is out.
 */
int mg_prom_respond(FILE *out, const char *line, const struct mg_totals_view *v);

#endif /* MAGNET_DAEMON_PROM_H */
