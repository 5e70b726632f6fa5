/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A TCP client's identity from a MUNGE credential (`AUTH MUNGE`,
 * docs/protocol.md): munged on this node decodes it with the cluster's
 * shared key, so a uid and gid minted on any node of the cluster are
 * trusted here as they are by Slurm.
 *
 * What is checked: munged's own checks (the key, the MAC, the time to live
 * and replay: a credential is taken once), then the payload, which must be
 * exactly MG_MUNGE_PAYLOAD. munged answers in about 50 us; the call blocks
 * while it does, and libmunge gives up on a munged that accepts no
 * connection after about 4 s.
 */
#ifndef MAGNET_DAEMON_AUTH_H
#define MAGNET_DAEMON_AUTH_H

#include <stddef.h>
#include <sys/types.h>

/*
 * munged's socket (config key munge_socket): path, or NULL or "" for
 * libmunge's default (/run/munge/munge.socket.2). Copied; not thread-safe
 * against a concurrent mg_auth_munge.
 */
void mg_auth_munge_socket(const char *path);

/*
 * Decode the armored credential cred (len bytes, no NUL needed, as it came
 * on the wire). 0 with *uid and *gid the identity that minted it; -1 with
 * why (whylen bytes) saying why it was refused, for the client's ERR:
 * "expired credential", "replayed credential", "munged unreachable: ...",
 * "not a MUNGE credential", "credential not minted for magnetd", ...
 */
int mg_auth_munge(const char *cred, size_t len, uid_t *uid, gid_t *gid,
		  char *why, size_t whylen);

#endif /* MAGNET_DAEMON_AUTH_H */
