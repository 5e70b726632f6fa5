/* SPDX-License-Identifier: GPL-2.0 */
/* Records to the totals and the clients; AGG reports (fanout.c). */
#ifndef MAGNET_DAEMON_FANOUT_H
#define MAGNET_DAEMON_FANOUT_H

#include <stdbool.h>
#include <linux/types.h>

#include "agg.h"
#include "totals.h"

struct mg_server;
struct client;
struct magnet_record;

/* Re-read magnet/probes (force, or at most once per second). */
void mg_fanout_refresh_probes(struct mg_server *s, bool force);
/* The totals now, with names: what TOTALS and the monitors show. */
int mg_fanout_totals_view(struct mg_server *s, struct mg_totals_view *v);
/* mg_agg's key callback: the record's key and label for an AGG. */
int mg_fanout_agg_key(void *arg, enum mg_agg_key kind,
		      const struct magnet_record *r, __u64 *key, char *label);
/* Take up to max queued chunks; true if more wait. */
bool mg_fanout_drain(struct mg_server *s, unsigned int max);
/* A new binary subscriber: a "B" frame of the threads named so far. */
void mg_fanout_replay_tasks(struct mg_server *s, struct client *c);
/* c's AGG report for the interval ending now. */
void mg_fanout_agg_report(struct mg_server *s, struct client *c, __u64 now);

#endif /* MAGNET_DAEMON_FANOUT_H */
