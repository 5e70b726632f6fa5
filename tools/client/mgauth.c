// SPDX-License-Identifier: GPL-2.0
/* The client's half of AUTH MUNGE; see mgauth.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include <munge.h>

#include "mgauth.h"
#include "mgmunge.h"

#define AUTH_WORDS	"AUTH MUNGE "
/* Bytes of a server's reply quoted in an error. */
#define QUOTE_MAX	200

bool mga_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

bool mga_wanted(enum mga_munge mode, const struct sockaddr *peer)
{
	if (peer->sa_family != AF_INET && peer->sa_family != AF_INET6)
		return false;	/* a Unix socket: the kernel says who we are */
	switch (mode) {
	case MGA_MUNGE_ALWAYS:
		return true;
	case MGA_MUNGE_AUTO:
		return !mga_loopback(peer);
	default:
		return false;
	}
}

int mga_munge_command(const char *socket, char **cmd, char *why,
		      size_t whylen)
{
	munge_ctx_t ctx = munge_ctx_create();
	const char *detail;
	char *cred = NULL;
	munge_err_t e;
	int ret = -1;

	*cmd = NULL;
	if (!ctx) {
		snprintf(why, whylen, "cannot mint a MUNGE credential: out of memory");
		return -1;
	}
	e = socket && *socket ? munge_ctx_set(ctx, MUNGE_OPT_SOCKET, socket) :
				EMUNGE_SUCCESS;
	if (e == EMUNGE_SUCCESS)
		e = munge_encode(&cred, ctx, MG_MUNGE_PAYLOAD, MG_MUNGE_PAYLOAD_LEN);
	if (e != EMUNGE_SUCCESS) {
		detail = munge_ctx_strerror(ctx);
		snprintf(why, whylen, "cannot mint a MUNGE credential: %s%s",
			 e == EMUNGE_SOCKET ? "munged unreachable: " : "",
			 detail ? detail : munge_strerror(e));
		goto out;
	}
	*cmd = malloc(strlen(AUTH_WORDS) + strlen(cred) + 1);
	if (!*cmd) {
		snprintf(why, whylen, "cannot mint a MUNGE credential: out of memory");
		goto out;
	}
	strcpy(*cmd, AUTH_WORDS);
	strcat(*cmd, cred);
	ret = 0;
out:
	free(cred);
	munge_ctx_destroy(ctx);
	return ret;
}

int mga_reply(const char *line, size_t len, char *why, size_t whylen)
{
	char quote[4 * QUOTE_MAX + 4];
	size_t i, n = 0, skip = 0;

	if (len >= 7 && !memcmp(line, "OK AUTH", 7) && (len == 7 || line[7] == ' '))
		return 0;
	if (len >= 4 && !memcmp(line, "ERR ", 4))
		skip = 4;
	/* The server's words, but never a control byte to the terminal. */
	for (i = skip; i < len && i - skip < QUOTE_MAX; i++) {
		unsigned char c = line[i];

		if (c >= 0x20 && c < 0x7f && c != '\\')
			quote[n++] = c;
		else
			n += snprintf(quote + n, sizeof(quote) - n, "\\x%02x", c);
	}
	quote[n] = '\0';
	if (skip)
		snprintf(why, whylen, "%s%s", quote, i < len ? "..." : "");
	else
		snprintf(why, whylen, "unexpected reply to AUTH: '%s%s'", quote,
			 i < len ? "..." : "");
	return -1;
}
