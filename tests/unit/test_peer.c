// SPDX-License-Identifier: GPL-2.0
/*
 * daemon/peer.c: the uid of a local TCP client, from /proc/net/tcp{,6}.
 * Tables written here (IPv4, IPv6, IPv4-mapped, TIME_WAIT and LISTEN
 * lines that must not match, the reverse direction that must not match,
 * the header), then real connections over 127.0.0.1, ::1 and a dual-stack
 * listener, made by this process and (as root) by a child that dropped to
 * uid 65534.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "peer.h"
#include "testutil.h"

static char dir[64];

static void setup(void)
{
	strcpy(dir, "/tmp/magnet-test-peer.XXXXXX");
	ck_assert_ptr_ne(mkdtemp(dir), NULL);
}

static void teardown(void)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/tcp", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/tcp6", dir);
	unlink(path);
	rmdir(dir);
}

static void table(const char *name, const char *text)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	tu_write_file(path, text, strlen(text));
}

static struct sockaddr_storage sa(const char *ip, unsigned int port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, ip, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons(port);
	} else {
		ck_assert_int_eq(inet_pton(AF_INET6, ip, &in6->sin6_addr), 1);
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
	}
	return ss;
}

static int lookup(const char *local, unsigned int lport, const char *peer,
		  unsigned int pport, uid_t *uid)
{
	struct sockaddr_storage l = sa(local, lport), p = sa(peer, pport);

	return mg_peer_uid(dir, (struct sockaddr *)&l, (struct sockaddr *)&p,
			   uid);
}

#define HEAD4 "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
#define HEAD6 "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"

/* 127.0.0.1:8650 is 0100007F:21CA; 127.0.0.1:40000 is 0100007F:9C40. */
START_TEST(tables)
{
	uid_t uid = 12345;

	table("tcp", HEAD4
	      /* the server's listener and its own end: not the client */
	      "   0: 0100007F:21CA 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 100 1 0000000000000000 100 0 0 10 0\n"
	      "   1: 0100007F:21CA 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 101 1 0000000000000000 20 4 30 10 -1\n"
	      /* an old connection of the same ends, in TIME_WAIT (uid 0) */
	      "   2: 0100007F:9C41 0100007F:21CA 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000000000000000\n"
	      /* the client */
	      "   3: 0100007F:9C40 0100007F:21CA 01 00000000:00000000 00:00000000 00000000 65534        0 102 1 0000000000000000 20 4 30 10 -1\n");
	table("tcp6", HEAD6);
	ck_assert_int_eq(lookup("127.0.0.1", 8650, "127.0.0.1", 40000, &uid), 0);
	ck_assert_uint_eq(uid, 65534);
	/* TIME_WAIT never matches; an unknown port is a remote client. */
	ck_assert_int_eq(lookup("127.0.0.1", 8650, "127.0.0.1", 40001, &uid), -ENOENT);
	ck_assert_int_eq(lookup("127.0.0.1", 8650, "127.0.0.1", 40002, &uid), -ENOENT);
	/* (Line 1, the server's own end, comes first and was not taken.) */
	/* A dual-stack listener sees the IPv4 client as ::ffff:127.0.0.1. */
	uid = 1;
	ck_assert_int_eq(lookup("::ffff:127.0.0.1", 8650, "::ffff:127.0.0.1", 40000, &uid), 0);
	ck_assert_uint_eq(uid, 65534);

	/* IPv6: ::1 is 00000000000000000000000001000000. */
	table("tcp6", HEAD6
	      "   0: 00000000000000000000000001000000:9C42 00000000000000000000000001000000:21CA 01 00000000:00000000 00:00000000 00000000  1000        0 103 1 0000000000000000 20 4 30 10 -1\n"
	      /* an IPv6 socket connected to ::ffff:127.0.0.1 */
	      "   1: 0000000000000000FFFF00000100007F:9C43 0000000000000000FFFF00000100007F:21CA 01 00000000:00000000 00:00000000 00000000  1001        0 104 1 0000000000000000 20 4 30 10 -1\n");
	ck_assert_int_eq(lookup("::1", 8650, "::1", 40002, &uid), 0);
	ck_assert_uint_eq(uid, 1000);
	ck_assert_int_eq(lookup("127.0.0.1", 8650, "127.0.0.1", 40003, &uid), 0);
	ck_assert_uint_eq(uid, 1001);
	ck_assert_int_eq(lookup("::1", 8650, "::1", 40000, &uid), -ENOENT);

	/* No tables at all (a namespace without IPv4 or IPv6): remote. */
	teardown();
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	ck_assert_int_eq(lookup("127.0.0.1", 8650, "127.0.0.1", 40000, &uid), -ENOENT);
	{
		struct sockaddr_storage l = sa("127.0.0.1", 1), p = sa("127.0.0.1", 2);

		l.ss_family = AF_UNIX;
		ck_assert_int_eq(mg_peer_uid(dir, (struct sockaddr *)&l,
					     (struct sockaddr *)&p, &uid),
				 -EAFNOSUPPORT);
	}
}
END_TEST

/*
 * Listen on addr, connect to it (as uid, by a child, when root), and ask
 * the real tables who the client is.
 */
static void real(int family, const char *addr, const char *connect_to,
		 uid_t as)
{
	struct sockaddr_storage ls = sa(addr, 0), cs, l, p;
	socklen_t len = sizeof(ls), pl = sizeof(p);
	int lfd, fd, one = 0, st;
	uid_t uid = 12345;
	pid_t pid;

	lfd = socket(family, SOCK_STREAM, 0);
	ck_assert_int_ge(lfd, 0);
	if (family == AF_INET6)
		setsockopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&ls, len), 0);
	ck_assert_int_eq(listen(lfd, 1), 0);
	ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&ls, &len), 0);
	cs = sa(connect_to, ntohs(((struct sockaddr_in *)&ls)->sin_port));
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		int c;

		if (as != geteuid() &&
		    (setgroups(0, NULL) || setresgid(as, as, as) || setresuid(as, as, as)))
			_exit(2);
		c = socket(cs.ss_family, SOCK_STREAM, 0);
		if (c < 0 || connect(c, (struct sockaddr *)&cs,
				     cs.ss_family == AF_INET ? sizeof(struct sockaddr_in) :
				     sizeof(struct sockaddr_in6)))
			_exit(3);
		/* Hold it until the parent has looked. */
		(void)!read(c, &one, 1);
		_exit(0);
	}
	fd = accept(lfd, (struct sockaddr *)&p, &pl);
	ck_assert_int_ge(fd, 0);
	len = sizeof(l);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&l, &len), 0);
	ck_assert_int_eq(mg_peer_uid(MG_PEER_PROC_NET, (struct sockaddr *)&l,
				     (struct sockaddr *)&p, &uid), 0);
	ck_assert_uint_eq(uid, as);
	close(fd);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && !WEXITSTATUS(st));
	close(lfd);
}

START_TEST(real_connections)
{
	uid_t other = geteuid() ? geteuid() : 65534;

	real(AF_INET, "127.0.0.1", "127.0.0.1", geteuid());
	real(AF_INET, "127.0.0.1", "127.0.0.1", other);
	/* The host may have no IPv6 (a container without ::1). */
	if (socket(AF_INET6, SOCK_STREAM, 0) >= 0 && access("/proc/net/if_inet6", F_OK) == 0) {
		real(AF_INET6, "::1", "::1", other);
		/* A dual-stack listener, an IPv4 client. */
		real(AF_INET6, "::", "127.0.0.1", other);
	}
}
END_TEST

static Suite *peer_suite(void)
{
	Suite *s = suite_create("peer");
	TCase *tc = tcase_create("peer");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, tables);
	tcase_add_test(tc, real_connections);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(peer_suite());
}
