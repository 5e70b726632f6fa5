// SPDX-License-Identifier: GPL-2.0
/* The module's AUTH MUNGE; see auth.h. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sys/socket.h>

#include "auth.h"
#include "totals.h"
#include "mgauth.h"

/* The reply line: "OK AUTH uid=N access=LEVEL", or an ERR and its reason. */
#define REPLY_MAX	512

static enum mga_munge mode = MGA_MUNGE_AUTO;
static char munge_socket[4096];

int mgg_auth_param(const char *key, const char *value, char *why,
		   size_t whylen)
{
	if (!strcasecmp(key, "munge")) {
		if (!strcasecmp(value, "auto"))
			mode = MGA_MUNGE_AUTO;
		else if (!strcasecmp(value, "yes"))
			mode = MGA_MUNGE_ALWAYS;
		else if (!strcasecmp(value, "no"))
			mode = MGA_MUNGE_NEVER;
		else {
			snprintf(why, whylen, "param munge: '%s' is not auto, yes or no",
				 value);
			return -1;
		}
		return 1;
	}
	if (!strcasecmp(key, "munge_socket")) {
		if (*value && *value != '/') {
			snprintf(why, whylen, "param munge_socket: '%s' is not an absolute path",
				 value);
			return -1;
		}
		if (strlen(value) >= sizeof(munge_socket)) {
			snprintf(why, whylen, "param munge_socket: longer than %zu bytes",
				 sizeof(munge_socket) - 1);
			return -1;
		}
		strcpy(munge_socket, value);
		return 1;
	}
	return 0;
}

/* The whole line, sent on a non-blocking socket by the deadline. */
static int send_line(int fd, const char *s, size_t len, long long deadline)
{
	size_t done = 0;
	int ret;

	while (done < len) {
		ssize_t n = send(fd, s + done, len - done, MSG_NOSIGNAL);

		if (n > 0) {
			done += n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		ret = mgg_wait_fd(fd, POLLOUT, deadline);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * One line, byte by byte: nothing past its '\n' is taken, so TOTALS' reply
 * is left to the caller. *len excludes the '\n'.
 */
static int recv_line(int fd, char *buf, size_t cap, size_t *len,
		     long long deadline)
{
	size_t n = 0;
	int ret;

	for (;;) {
		ssize_t r = recv(fd, buf + n, 1, 0);

		if (r == 1) {
			if (buf[n] == '\n')
				break;
			if (++n == cap)
				return -EMSGSIZE;
			continue;
		}
		if (!r)
			return -ECONNRESET;
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		ret = mgg_wait_fd(fd, POLLIN, deadline);
		if (ret)
			return ret;
	}
	*len = n;
	return 0;
}

int mgg_authenticate(int fd, const struct sockaddr *peer, long long deadline,
		     char *why, size_t whylen)
{
	char reply[REPLY_MAX], rwhy[REPLY_MAX], *cmd;
	size_t len;
	int ret;

	if (!mga_wanted(mode, peer))
		return 0;
	if (mga_munge_command(munge_socket, &cmd, why, whylen))
		return -EINVAL;
	len = strlen(cmd);
	cmd[len] = '\n';	/* over the NUL: sent by length */
	ret = send_line(fd, cmd, len + 1, deadline);
	free(cmd);
	if (!ret)
		ret = recv_line(fd, reply, sizeof(reply), &len, deadline);
	if (ret)
		return ret;
	if (mga_reply(reply, len, rwhy, sizeof(rwhy))) {
		snprintf(why, whylen, "MUNGE authentication refused: %s", rwhy);
		return -EINVAL;
	}
	return 0;
}
