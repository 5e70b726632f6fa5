/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Who is at the other end of a TCP connection magnetd accepted, for the
 * per-user client limit (docs/magnetd.md, max_clients_per_user).
 *
 * SO_PEERCRED exists for unix sockets only. For TCP, a client on this host
 * (in magnetd's network namespace, whatever address it used: loopback or
 * one of the host's own) has a socket of its own in the kernel's table, and
 * /proc/net/tcp and /proc/net/tcp6 list it with the uid that owns it: the
 * socket whose local address and port are the connection's peer end, and
 * whose remote address and port are magnetd's end. The 4-tuple names one
 * live connection in the namespace, so the match is exact. The uid is the
 * socket's owner (the fsuid of the process that created it, in magnetd's
 * user namespace), as `ss -e` shows it. A client not found there (another
 * host, another network namespace, or gone already) has no uid: callers
 * fall back to its address.
 */
#ifndef MAGNET_DAEMON_PEER_H
#define MAGNET_DAEMON_PEER_H

#include <sys/socket.h>
#include <sys/types.h>

/* Where the tables are; the unit tests point elsewhere. */
#define MG_PEER_PROC_NET	"/proc/net"

/*
 * The uid of the local socket at the other end of the connection whose
 * local end (getsockname) is local and whose peer (accept, getpeername) is
 * peer, both AF_INET or AF_INET6 (an IPv4-mapped IPv6 address matches the
 * IPv4 socket, or the IPv6 socket using the mapped address). Reads
 * proc_net/tcp and proc_net/tcp6. 0 with *uid set; -ENOENT when no socket
 * matches (a remote client); -EAFNOSUPPORT for another family; -errno when
 * neither table can be read.
 */
int mg_peer_uid(const char *proc_net, const struct sockaddr *local,
		const struct sockaddr *peer, uid_t *uid);

#endif /* MAGNET_DAEMON_PEER_H */
