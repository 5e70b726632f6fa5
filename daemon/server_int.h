/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The server's state, shared by its three files: server.c (the loop,
 * listeners, timers), client.c (queues and commands) and fanout.c
 * (records to clients, totals, reports). Not an API: server.h is.
 */
#ifndef MAGNET_DAEMON_SERVER_INT_H
#define MAGNET_DAEMON_SERVER_INT_H

#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>

#include "access.h"
#include "client.h"
#include "config.h"
#include "cgmap.h"
#include "owners.h"
#include "print.h"
#include "probes.h"
#include "server.h"
#include "tasks.h"
#include "totals.h"

#define MAX_LISTENERS	4

/* A listening socket and the protocol its clients speak. */
struct listener {
	struct ev_src src;	/* TAG_LISTEN */
	int fd;
	enum mg_listen_kind kind;
	bool unix_sock;		/* AF_UNIX: clients known by SO_PEERCRED */
};

/* A kind of log line written at most once per interval (server.c). */
struct ratelog {
	__u64 next_ns;			/* none before */
	unsigned long skipped;		/* not written since the last */
};

struct mg_server {
	struct mg_config cfg;		/* a copy; probes not used here */
	struct mg_access_rules rules;	/* cfg's access_all, access_totals */
	struct mg_server_env env;
	int epfd, timer_fd;
	struct listener listeners[MAX_LISTENERS];
	unsigned int nlisteners;
	/* Out of descriptors: the listeners unwatched until then (0: not). */
	__u64 accept_paused_until;
	struct ratelog refused_log, accept_log;
	bool quit;
	__u64 start_ns;

	/*
	 * Live clients, dense (a closed one's place takes the last). Closed
	 * ones are freed after the epoll batch that may still name them.
	 */
	struct client **clients;
	unsigned int nclients, cap, nsubs, naggs;
	struct client *dead;
	/* Only the totals want the records: batch them until then (server.c). */
	__u64 gather_until;

	/* The probe table, for filters, JSON names and AGG labels. */
	struct mg_probe_table probes;
	__u64 probes_read_ns;

	/*
	 * Who wrote the records: the job from the record's cgroup (cgmap:
	 * its path), the thread's name from the TASK records (tasks: a
	 * mirror of the module's slots, fed each CPU's chunks in stream
	 * order, which is the queue's order).
	 */
	struct mg_cgmap *cgmap;
	struct ev_src cgmap_src;	/* TAG_CGMAP: cgroups made */
	struct mg_tasks *tasks;
	__u64 tasks_dropped;		/* queue drops seen: mirror reset */
	unsigned int tasks_reloads;	/* module reloads seen: the same */
	__u64 now;			/* mono ns of the chunk being handled */

	/* Per chunk. */
	const struct magnet_record **recs;
	size_t nrecs, maxrecs;
	/* rec_task[i]: record i's thread as named then; NULL: unknown. */
	const struct mg_task **rec_task;
	struct mg_task *task_copy;	/* the names, copied as fed */
	const struct mg_task *cur_task;	/* the record the agg key is for */
	const struct magnet_record **pick;	/* a binary client's matches */
	size_t *pick_idx;			/* their places in recs */
	/* Each record's JSON line, as read [0] and scrubbed [1] (fanout.c). */
	struct mg_json_line {
		size_t off, len;
		bool done;
	} *json_lines[2];
	__u64 *scrubbed;		/* a record, scrubbed (MAGNET_RECORD_MAX) */
	struct mg_owners *owners;	/* whose job a cgroup is */
	struct membuf json;
	FILE *json_f;
	struct mg_print_opts popts;
	__u64 seen_queue_dropped;

	/* Counted by the collection thread (env.totals), for TOTALS and
	 * the monitors (totals.h). */
	struct mg_totals *totals;
	__u64 jobs_checked_ns;
	/*
	 * The view Prometheus and Supermon are answered from, rebuilt at
	 * most every MONITOR_VIEW_NS (client.c): a flood of their cheap
	 * requests does not build a view of every job each.
	 */
	struct mg_totals_view mon_view;
	__u64 mon_view_ns;
	bool mon_view_ok;
	/* A reply rendered through a FILE (monitors), then queued. */
	struct membuf scratch;
	FILE *scratch_f;

	/* Counters for STATS. */
	__u64 sent, client_dropped, cut_off, idle_closed, refused;
};

/* nsubs or naggs changed: whether the collection thread queues every read. */
void mg_server_streams(struct mg_server *s);

#endif /* MAGNET_DAEMON_SERVER_INT_H */
