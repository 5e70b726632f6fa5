/* SPDX-License-Identifier: GPL-2.0 */
/*
 * systemd's readiness protocol (sd_notify(3)) without libsystemd: a state
 * is one datagram of "KEY=VALUE" lines sent to the AF_UNIX socket named by
 * $NOTIFY_SOCKET, a path, or a name in the abstract namespace when it
 * starts with '@'. magnetd sends READY=1 once its rings are open and it
 * listens, STATUS=... lines as it goes, RELOADING=1 / READY=1 around a
 * SIGHUP reload and STOPPING=1 at shutdown (docs/magnetd.md, "systemd").
 *
 * Not being run by systemd is not an error: with $NOTIFY_SOCKET unset or
 * empty every call does nothing and returns 0.
 */
#ifndef MAGNET_DAEMON_NOTIFY_H
#define MAGNET_DAEMON_NOTIFY_H

/*
 * Send state ("READY=1", "STATUS=serving 3 clients", lines joined by
 * '\n'). 0 when sent or when there is no $NOTIFY_SOCKET; a negative errno
 * otherwise: -EINVAL for an empty state, -EAFNOSUPPORT for a
 * $NOTIFY_SOCKET that is neither a path nor '@'name (e.g. vsock:),
 * -ENAMETOOLONG, or the socket's error (-ENOENT, -ECONNREFUSED, ...).
 * Thread-safe. Like sd_notify it waits while systemd's queue is full,
 * rather than lose a READY=1 that systemd would time the start out on.
 */
int mg_notify(const char *state);

/* mg_notify of a formatted state: mg_notifyf("STATUS=%u clients", n). */
int mg_notifyf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * "RELOADING=1" with the MONOTONIC_USEC= that systemd (253 and later)
 * expects with it; send READY=1 once the reload is done.
 */
int mg_notify_reloading(void);

#endif /* MAGNET_DAEMON_NOTIFY_H */
