// SPDX-License-Identifier: GPL-2.0
/*
 * magnetd's messages: stderr or syslog. See log.h.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static bool to_syslog;		/* under log_lock */
static bool to_journal;		/* stderr is journald's stream */
static atomic_int max_prio = LOG_INFO;

/* $JOURNAL_STREAM is "DEV:INO" of the stream systemd gave us as stderr. */
static bool stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 ||
	    fstat(STDERR_FILENO, &st))
		return false;
	return st.st_dev == dev && st.st_ino == ino;
}

void mg_log_open(enum mg_log_target t, bool foreground)
{
	bool sys = t == MG_LOG_SYSLOG || (t == MG_LOG_AUTO && !foreground);

	pthread_mutex_lock(&log_lock);
	/* LOG_NDELAY: connect now, while /dev/log is surely reachable. */
	if (sys && !to_syslog)
		openlog("magnetd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
	else if (!sys && to_syslog)
		closelog();
	to_syslog = sys;
	to_journal = !sys && stderr_is_journal();
	pthread_mutex_unlock(&log_lock);
}

void mg_log_set_max(int prio)
{
	atomic_store(&max_prio, LOG_PRI(prio));
}

static void write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return;	/* nowhere left to say so */
		}
		buf += n;
		len -= n;
	}
}

void mg_log(int prio, const char *fmt, ...)
{
	/* prefix ("magnetd: warning: " or "<4>") + message + "...\n" */
	char line[32 + MG_LOG_LINE_MAX + 8];
	char *msg = line + 32;
	int saved = errno, n, pri = LOG_PRI(prio);
	size_t len, i, plen;
	const char *level;
	va_list ap;

	if (pri > atomic_load(&max_prio))
		return;

	va_start(ap, fmt);
	errno = saved;	/* for %m */
	n = vsnprintf(msg, MG_LOG_LINE_MAX + 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	len = (size_t)n;
	if (len > MG_LOG_LINE_MAX) {
		len = MG_LOG_LINE_MAX;
		memcpy(msg + len, "...", 3);
		len += 3;
	}
	/* One call, one line: nothing in the message may start another. */
	for (i = 0; i < len; i++) {
		unsigned char ch = msg[i];

		if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
			msg[i] = '?';
	}
	msg[len] = '\0';

	pthread_mutex_lock(&log_lock);
	if (to_syslog) {
		syslog(pri, "%s", msg);
	} else {
		char prefix[32];

		if (to_journal) {
			plen = snprintf(prefix, sizeof(prefix), "<%d>", pri);
		} else {
			level = pri <= LOG_ERR ? "error: " :
				pri == LOG_WARNING ? "warning: " : "";
			plen = snprintf(prefix, sizeof(prefix), "magnetd: %s", level);
		}
		/* The prefix goes right before the message: one write. */
		memcpy(msg - plen, prefix, plen);
		msg[len] = '\n';
		write_all(STDERR_FILENO, msg - plen, plen + len + 1);
	}
	pthread_mutex_unlock(&log_lock);
	errno = saved;
}
