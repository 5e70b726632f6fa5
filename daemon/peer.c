// SPDX-License-Identifier: GPL-2.0
/*
 * The uid at the other end of a local TCP connection; see peer.h.
 *
 * A line of /proc/net/tcp (net/ipv4/tcp_ipv4.c, get_tcp4_sock):
 *
 *   sl  local_address rem_address   st tx_queue:rx_queue tr:tm->when retrnsmt   uid ...
 *    3: 0100007F:9C40 0100007F:21CA 01 00000000:00000000 00:00000000 00000000 65534 ...
 *
 * Addresses are the network-order 32-bit words printed as numbers of the
 * host's order (%08X), four of them for tcp6; ports are in host order
 * (%04X). Formatting the wanted pair the same way makes the match a string
 * comparison.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peer.h"

#define TCP_TIME_WAIT	0x06	/* listed with uid 0: never the client */
#define TCP_LISTEN	0x0A

/* One end as the table prints it: 8 or 32 hex digits, ':', 4. */
#define END_MAX		(32 + 1 + 4 + 1)

static void fmt_v4(char *buf, const struct in_addr *a, unsigned int port)
{
	uint32_t w;

	memcpy(&w, a, sizeof(w));
	snprintf(buf, END_MAX, "%08X:%04X", w, port);
}

static void fmt_v6(char *buf, const struct in6_addr *a, unsigned int port)
{
	uint32_t w[4];

	memcpy(w, a, sizeof(w));
	snprintf(buf, END_MAX, "%08X%08X%08X%08X:%04X", w[0], w[1], w[2], w[3],
		 port);
}

/* The IPv4 address inside ::ffff:a.b.c.d. */
static bool mapped_v4(const struct in6_addr *a, struct in_addr *v4)
{
	if (!IN6_IS_ADDR_V4MAPPED(a))
		return false;
	memcpy(v4, &a->s6_addr[12], sizeof(*v4));
	return true;
}

/*
 * An end in both notations: v4 for /proc/net/tcp ("" if it has none), v6
 * for /proc/net/tcp6 (an IPv4 address in its mapped form).
 */
static int fmt_end(const struct sockaddr *sa, char *v4, char *v6)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;
		struct in6_addr m = { .s6_addr = { [10] = 0xff, [11] = 0xff } };

		fmt_v4(v4, &in->sin_addr, ntohs(in->sin_port));
		memcpy(&m.s6_addr[12], &in->sin_addr, 4);
		fmt_v6(v6, &m, ntohs(in->sin_port));
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;
		struct in_addr a;

		v4[0] = '\0';
		if (mapped_v4(&in6->sin6_addr, &a))
			fmt_v4(v4, &a, ntohs(in6->sin6_port));
		fmt_v6(v6, &in6->sin6_addr, ntohs(in6->sin6_port));
		return 0;
	}
	return -EAFNOSUPPORT;
}

/* Find the socket with this local and remote end in one table. */
static int scan(const char *path, const char *want_local,
		const char *want_remote, uid_t *uid)
{
	char *line = NULL;
	size_t cap = 0;
	int ret = -ENOENT;
	FILE *f;

	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		char la[END_MAX + 8], ra[END_MAX + 8];
		unsigned int st;
		unsigned long u;

		/* The header line does not parse: no number before ':'. */
		if (sscanf(line, " %*u: %44s %44s %x %*s %*s %*s %lu", la, ra,
			   &st, &u) != 4)
			continue;
		if (st == TCP_TIME_WAIT || st == TCP_LISTEN)
			continue;
		if (strcmp(la, want_local) || strcmp(ra, want_remote))
			continue;
		*uid = (uid_t)u;
		ret = 0;
		break;
	}
	free(line);
	fclose(f);
	return ret;
}

int mg_peer_uid(const char *proc_net, const struct sockaddr *local,
		const struct sockaddr *peer, uid_t *uid)
{
	/* The client's socket: its local end is our peer, and the reverse. */
	char c_local4[END_MAX], c_local6[END_MAX];
	char c_remote4[END_MAX], c_remote6[END_MAX];
	char path[4096];
	int r4 = -ENOENT, r6;

	if (fmt_end(peer, c_local4, c_local6) ||
	    fmt_end(local, c_remote4, c_remote6))
		return -EAFNOSUPPORT;
	if (c_local4[0] && c_remote4[0]) {
		snprintf(path, sizeof(path), "%s/tcp", proc_net);
		r4 = scan(path, c_local4, c_remote4, uid);
		if (!r4)
			return 0;
	}
	snprintf(path, sizeof(path), "%s/tcp6", proc_net);
	r6 = scan(path, c_local6, c_remote6, uid);
	if (!r6)
		return 0;
	/* Not found anywhere is a remote client; a table we could not read
	 * matters only when no table could be read. */
	if (r4 == -ENOENT || r6 == -ENOENT)
		return -ENOENT;
	return r6;
}
