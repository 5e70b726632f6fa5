/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The module's MUNGE authentication (params munge and munge_socket,
 * docs/ganglia.md): `AUTH MUNGE` (docs/protocol.md) before TOTALS, so that
 * magnetd knows gmond's user. The credential is minted by
 * tools/client/mgauth.c, shared with magnet-cat.
 */
#ifndef MAGNET_GANGLIA_AUTH_H
#define MAGNET_GANGLIA_AUTH_H

#include <stddef.h>
#include <sys/socket.h>

/*
 * A module param, if it is one of ours: 1 taken; 0 not ours; -1 with why
 * for a bad value. munge = auto (when magnetd is not on loopback, the
 * default), yes or no; munge_socket = munged's socket (libmunge's default).
 */
int mgg_auth_param(const char *key, const char *value, char *why,
		   size_t whylen);

/*
 * On fd, just connected to peer: AUTH MUNGE when the params want it, and
 * its reply, by deadline (CLOCK_MONOTONIC ms). 0; -EINVAL with why (no
 * credential minted, or magnetd refused it: its reason); -ETIMEDOUT or
 * another -errno, why untouched.
 */
int mgg_authenticate(int fd, const struct sockaddr *peer, long long deadline,
		     char *why, size_t whylen);

#endif /* MAGNET_GANGLIA_AUTH_H */
