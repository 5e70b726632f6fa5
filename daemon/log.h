/* SPDX-License-Identifier: GPL-2.0 */
/*
 * magnetd's messages: to stderr as "magnetd: [error: |warning: ]message",
 * or to syslog(3) as ident "magnetd", facility LOG_DAEMON (docs/magnetd.md,
 * "Logging").
 *
 * One call is one line, written whole by one write(2) under a lock, so
 * threads never interleave. Control characters in the message (a newline
 * in something a client sent) are written as '?', so a message can never
 * forge a second line. errno is preserved, and %m works.
 *
 * When stderr is the systemd journal's stream ($JOURNAL_STREAM names it),
 * lines carry a "<N>" priority prefix instead of the level word: journald
 * files them under their real priority and adds the ident itself.
 */
#ifndef MAGNET_DAEMON_LOG_H
#define MAGNET_DAEMON_LOG_H

#include <stdbool.h>
#include <syslog.h>

#include "config.h"

/* Longest message written; longer ones are cut. */
#define MG_LOG_LINE_MAX	2048

/*
 * Where messages go from now on: MG_LOG_AUTO is stderr when foreground,
 * syslog otherwise. May be called again (SIGHUP) to switch. Before the
 * first call, messages go to stderr.
 */
void mg_log_open(enum mg_log_target t, bool foreground);

/* LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG (syslog.h priorities). */
void mg_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Messages less urgent than prio are dropped (default LOG_INFO: no
 * LOG_DEBUG lines).
 */
void mg_log_set_max(int prio);

#endif /* MAGNET_DAEMON_LOG_H */
