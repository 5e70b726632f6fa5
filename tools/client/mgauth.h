/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The client's half of `AUTH MUNGE` (docs/protocol.md): a credential
 * minted by the local munged, with magnetd's payload, as the first command
 * of a TCP connection. Shared by mgclient (magnet-cat, magnet-top) and the
 * gmond module, so no mgclient or APR here: libc and libmunge only.
 */
#ifndef MAGNET_CLIENT_MGAUTH_H
#define MAGNET_CLIENT_MGAUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/* When a TCP connection authenticates (docs/magnet-cat.md, -M). */
enum mga_munge {
	MGA_MUNGE_AUTO,		/* when the server is not on loopback */
	MGA_MUNGE_ALWAYS,	/* on every TCP connection */
	MGA_MUNGE_NEVER,
};

/* 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104. */
bool mga_loopback(const struct sockaddr *sa);

/* Whether a TCP connection to peer authenticates under mode. */
bool mga_wanted(enum mga_munge mode, const struct sockaddr *peer);

/*
 * "AUTH MUNGE <credential>" (no newline) into a malloc'd *cmd, minted by
 * the munged at socket (NULL or "": libmunge's default). 0, or -1 with why:
 * "cannot mint a MUNGE credential: munged unreachable: Failed to access
 * ...: No such file or directory (Did you start munged?)".
 */
int mga_munge_command(const char *socket, char **cmd, char *why,
		      size_t whylen);

/*
 * The server's reply line (len bytes, no newline) to it: 0 for "OK AUTH
 * ...", -1 with why: an ERR's reason ("auth: expired credential ..."), or
 * "unexpected reply to AUTH: '...'", cut, control bytes as \xNN.
 */
int mga_reply(const char *line, size_t len, char *why, size_t whylen);

#endif /* MAGNET_CLIENT_MGAUTH_H */
