// SPDX-License-Identifier: GPL-2.0
/*
 * sd_notify without libsystemd. See notify.h. The protocol is a datagram
 * on an AF_UNIX socket; systemd reads the sender's credentials itself
 * (SO_PASSCRED on its end), so there is nothing to attach.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "notify.h"

int mg_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sun;
	size_t plen, slen;
	socklen_t alen;
	ssize_t n;
	int fd, ret = 0;

	if (!path || !*path)
		return 0;
	if (!state || !*state)
		return -EINVAL;
	if (path[0] != '/' && path[0] != '@')
		return -EAFNOSUPPORT;
	plen = strlen(path);
	if (plen > sizeof(sun.sun_path) - (path[0] == '/'))
		return -ENAMETOOLONG;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, path, plen);
	/*
	 * An abstract name is its bytes after a NUL, exactly as long as the
	 * address length says: no terminating NUL may be counted.
	 */
	if (path[0] == '@')
		sun.sun_path[0] = '\0';
	alen = offsetof(struct sockaddr_un, sun_path) + plen;

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	slen = strlen(state);
	do {
		n = sendto(fd, state, slen, MSG_NOSIGNAL, (struct sockaddr *)&sun,
			   alen);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		ret = -errno;
	else if ((size_t)n != slen)
		ret = -EMSGSIZE;
	close(fd);
	return ret;
}

int mg_notifyf(const char *fmt, ...)
{
	char *s;
	va_list ap;
	int ret;

	if (!getenv("NOTIFY_SOCKET"))
		return 0;
	va_start(ap, fmt);
	ret = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (ret < 0)
		return -ENOMEM;
	ret = mg_notify(s);
	free(s);
	return ret;
}

int mg_notify_reloading(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return mg_notifyf("RELOADING=1\nMONOTONIC_USEC=%llu",
			  (unsigned long long)ts.tv_sec * 1000000ULL +
			  ts.tv_nsec / 1000);
}
