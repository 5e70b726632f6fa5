// SPDX-License-Identifier: GPL-2.0
/*
 * magnet-ctl: generic-netlink plumbing. libnl-genl-3 resolves the family
 * and builds the messages; the receive loop is ours so that it sees the
 * extended ACK (NETLINK_EXT_ACK: the kernel's message and the offending
 * attribute), NLM_F_DUMP_INTR and the dump's generation, and so that a
 * signal ends "monitor" at once (nl_recv() retries after EINTR).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/netlink.h>
#include <linux/genetlink.h>
#include <netlink/netlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/genl/genl.h>
#include <netlink/genl/ctrl.h>

#include "ctl.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK	270
#endif

/* Dumps interrupted by a change of the probe set are started again. */
#define CTL_DUMP_TRIES	5

struct ctl_nl {
	struct nl_sock *sk;		/* NULL: ctl_nl_wrap()ped fd */
	int fd;
	int fam;
	int alarm_grp;			/* -1: the family has no such group */
	__u32 seq;			/* of the last request */
	unsigned char *buf;
	size_t bufsz;
};

/* ---- request messages ---- */

struct nl_msg *ctl_req_msg(const struct ctl_req *r, int fam)
{
	struct nl_msg *msg = nlmsg_alloc_size(4096 + sizeof(r->cpus));
	struct nlattr *nest;
	__u32 a;

	if (!msg)
		return NULL;
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, fam, 0,
			 r->dump ? NLM_F_DUMP : NLM_F_ACK, r->genl_cmd,
			 MAGNET_GENL_VERSION))
		goto fail;

	a = r->probe_attrs;
	if (a) {
		nest = nla_nest_start(msg, MAGNET_A_PROBE);
		if (!nest)
			goto fail;
		if ((a & CTL_BIT(MAGNET_PROBE_A_ID)) &&
		    nla_put_u16(msg, MAGNET_PROBE_A_ID, r->id))
			goto fail;
		if ((a & CTL_BIT(MAGNET_PROBE_A_NAME)) &&
		    nla_put_string(msg, MAGNET_PROBE_A_NAME, r->name))
			goto fail;
		if ((a & CTL_BIT(MAGNET_PROBE_A_TYPE)) &&
		    nla_put_u8(msg, MAGNET_PROBE_A_TYPE, r->type))
			goto fail;
		if ((a & CTL_BIT(MAGNET_PROBE_A_SYMBOL)) &&
		    nla_put_string(msg, MAGNET_PROBE_A_SYMBOL, r->symbol))
			goto fail;
		if ((a & CTL_BIT(MAGNET_PROBE_A_OFFSET)) &&
		    nla_put_u32(msg, MAGNET_PROBE_A_OFFSET, r->offset))
			goto fail;
		if ((a & CTL_BIT(MAGNET_PROBE_A_NARGS)) &&
		    nla_put_u8(msg, MAGNET_PROBE_A_NARGS, r->nargs))
			goto fail;
		if ((a & CTL_BIT(MAGNET_PROBE_A_CAPTURE_LEN)) &&
		    nla_put_u16(msg, MAGNET_PROBE_A_CAPTURE_LEN, r->capture_len))
			goto fail;
		if ((a & CTL_BIT(MAGNET_PROBE_A_CAPTURE_ARG)) &&
		    nla_put_u8(msg, MAGNET_PROBE_A_CAPTURE_ARG, r->capture_arg))
			goto fail;
		if ((a & CTL_BIT(MAGNET_PROBE_A_HANDLER)) &&
		    nla_put_string(msg, MAGNET_PROBE_A_HANDLER, r->handler))
			goto fail;
		if ((a & CTL_BIT(MAGNET_PROBE_A_FLAGS)) &&
		    nla_put_u32(msg, MAGNET_PROBE_A_FLAGS, r->flags))
			goto fail;
		if ((a & CTL_BIT(MAGNET_PROBE_A_SAMPLE_EVERY)) &&
		    nla_put_u32(msg, MAGNET_PROBE_A_SAMPLE_EVERY, r->sample_every))
			goto fail;
		if ((a & CTL_BIT(MAGNET_PROBE_A_SAMPLE_INTERVAL_NS)) &&
		    nla_put_u64(msg, MAGNET_PROBE_A_SAMPLE_INTERVAL_NS,
				r->sample_interval_ns))
			goto fail;
		nla_nest_end(msg, nest);
	}

	a = r->filter_attrs;
	if (a) {
		nest = nla_nest_start(msg, MAGNET_A_FILTER);
		if (!nest)
			goto fail;
		if ((a & CTL_BIT(MAGNET_FILTER_A_ID)) &&
		    nla_put_u32(msg, MAGNET_FILTER_A_ID, r->filter_id))
			goto fail;
		if ((a & CTL_BIT(MAGNET_FILTER_A_KIND)) &&
		    nla_put_u8(msg, MAGNET_FILTER_A_KIND, r->kind))
			goto fail;
		if ((a & CTL_BIT(MAGNET_FILTER_A_ACTION)) &&
		    nla_put_u8(msg, MAGNET_FILTER_A_ACTION, r->action))
			goto fail;
		if ((a & CTL_BIT(MAGNET_FILTER_A_VALUE)) &&
		    nla_put_u64(msg, MAGNET_FILTER_A_VALUE, r->value))
			goto fail;
		if ((a & CTL_BIT(MAGNET_FILTER_A_CPUS)) &&
		    nla_put(msg, MAGNET_FILTER_A_CPUS,
			    r->cpu_words * sizeof(__u64), r->cpus))
			goto fail;
		nla_nest_end(msg, nest);
	}

	a = r->buffer_attrs;
	if (a) {
		nest = nla_nest_start(msg, MAGNET_A_BUFFER);
		if (!nest)
			goto fail;
		if ((a & CTL_BIT(MAGNET_BUFFER_A_SIZE)) &&
		    nla_put_u64(msg, MAGNET_BUFFER_A_SIZE, r->size))
			goto fail;
		if ((a & CTL_BIT(MAGNET_BUFFER_A_MODE)) &&
		    nla_put_u8(msg, MAGNET_BUFFER_A_MODE, r->mode_buf))
			goto fail;
		if ((a & CTL_BIT(MAGNET_BUFFER_A_FAIR_FILL)) &&
		    nla_put_u8(msg, MAGNET_BUFFER_A_FAIR_FILL, r->fair_fill))
			goto fail;
		nla_nest_end(msg, nest);
	}
	return msg;
fail:
	nlmsg_free(msg);
	return NULL;
}

/* ---- attribute names, for the extended ACK's offset ---- */

static const char *const top_names[] = {
	[MAGNET_A_PROBE] = "MAGNET_A_PROBE",
	[MAGNET_A_FILTER] = "MAGNET_A_FILTER",
	[MAGNET_A_BUFFER] = "MAGNET_A_BUFFER",
	[MAGNET_A_CPU_STATS] = "MAGNET_A_CPU_STATS",
	[MAGNET_A_ALARM] = "MAGNET_A_ALARM",
	[MAGNET_A_GENERATION] = "MAGNET_A_GENERATION",
	[MAGNET_A_JOB] = "MAGNET_A_JOB",
};

static const char *const probe_names[] = {
	[MAGNET_PROBE_A_ID] = "MAGNET_PROBE_A_ID (id)",
	[MAGNET_PROBE_A_NAME] = "MAGNET_PROBE_A_NAME (name)",
	[MAGNET_PROBE_A_TYPE] = "MAGNET_PROBE_A_TYPE (kprobe|kretprobe|fentry|tracepoint)",
	[MAGNET_PROBE_A_SYMBOL] = "MAGNET_PROBE_A_SYMBOL (SYMBOL)",
	[MAGNET_PROBE_A_OFFSET] = "MAGNET_PROBE_A_OFFSET (+OFFSET)",
	[MAGNET_PROBE_A_NARGS] = "MAGNET_PROBE_A_NARGS (args)",
	[MAGNET_PROBE_A_CAPTURE_LEN] = "MAGNET_PROBE_A_CAPTURE_LEN (capture LEN)",
	[MAGNET_PROBE_A_CAPTURE_ARG] = "MAGNET_PROBE_A_CAPTURE_ARG (capture @ARG)",
	[MAGNET_PROBE_A_HANDLER] = "MAGNET_PROBE_A_HANDLER (handler)",
	[MAGNET_PROBE_A_FLAGS] = "MAGNET_PROBE_A_FLAGS (flags)",
	[MAGNET_PROBE_A_SAMPLE_EVERY] = "MAGNET_PROBE_A_SAMPLE_EVERY (every)",
	[MAGNET_PROBE_A_SAMPLE_INTERVAL_NS] = "MAGNET_PROBE_A_SAMPLE_INTERVAL_NS (interval)",
	[MAGNET_PROBE_A_FILTERS] = "MAGNET_PROBE_A_FILTERS",
	[MAGNET_PROBE_A_STATS] = "MAGNET_PROBE_A_STATS",
};

static const char *const filter_names[] = {
	[MAGNET_FILTER_A_ID] = "MAGNET_FILTER_A_ID (FILTER_ID)",
	[MAGNET_FILTER_A_KIND] = "MAGNET_FILTER_A_KIND (tgid|cpu|abstract|cgroup)",
	[MAGNET_FILTER_A_ACTION] = "MAGNET_FILTER_A_ACTION (include|exclude)",
	[MAGNET_FILTER_A_VALUE] = "MAGNET_FILTER_A_VALUE (value)",
	[MAGNET_FILTER_A_CPUS] = "MAGNET_FILTER_A_CPUS (cpu list)",
};

static const char *const buffer_names[] = {
	[MAGNET_BUFFER_A_SIZE] = "MAGNET_BUFFER_A_SIZE (size)",
	[MAGNET_BUFFER_A_MODE] = "MAGNET_BUFFER_A_MODE (mode)",
	[MAGNET_BUFFER_A_CPUS] = "MAGNET_BUFFER_A_CPUS",
	[MAGNET_BUFFER_A_FAIR_FILL] = "MAGNET_BUFFER_A_FAIR_FILL (fair)",
};

#define NAME_OF(tab, t) \
	((t) < (int)(sizeof(tab) / sizeof(tab[0])) && (tab)[t] ? (tab)[t] : NULL)

static const char *const *nest_names(int top, int *n)
{
	switch (top) {
	case MAGNET_A_PROBE:
		*n = sizeof(probe_names) / sizeof(probe_names[0]);
		return probe_names;
	case MAGNET_A_FILTER:
		*n = sizeof(filter_names) / sizeof(filter_names[0]);
		return filter_names;
	case MAGNET_A_BUFFER:
		*n = sizeof(buffer_names) / sizeof(buffer_names[0]);
		return buffer_names;
	}
	*n = 0;
	return NULL;
}

/*
 * The attribute of the request msg that starts at byte off of it (an
 * NLMSGERR_ATTR_OFFS or _MISS_NEST), named into buf. False if none.
 */
static bool attr_at(struct nl_msg *msg, __u32 off, char *buf, size_t len)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct nlattr *top, *in;
	int rem, rem2;

	nla_for_each_attr(top, genlmsg_attrdata(nlmsg_data(nlh), 0),
			  genlmsg_attrlen(nlmsg_data(nlh), 0), rem) {
		int t = nla_type(top), n;
		const char *const *names = nest_names(t, &n);

		if ((unsigned char *)top - (unsigned char *)nlh == off) {
			snprintf(buf, len, "%s", NAME_OF(top_names, t) ?: "?");
			return true;
		}
		if (!names)
			continue;
		nla_for_each_nested(in, top, rem2) {
			int it = nla_type(in);

			if ((unsigned char *)in - (unsigned char *)nlh != off)
				continue;
			snprintf(buf, len, "%s",
				 it < n && names[it] ? names[it] : "?");
			return true;
		}
	}
	return false;
}

/* Name of attribute type t inside the nest at off (or at the top). */
static void missing_name(struct nl_msg *msg, bool in_nest, __u32 nest_off,
			 int t, char *buf, size_t len)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct nlattr *top;
	int rem;

	if (!in_nest) {
		snprintf(buf, len, "%s", NAME_OF(top_names, t) ?: "?");
		return;
	}
	nla_for_each_attr(top, genlmsg_attrdata(nlmsg_data(nlh), 0),
			  genlmsg_attrlen(nlmsg_data(nlh), 0), rem) {
		const char *const *names;
		int n;

		if ((unsigned char *)top - (unsigned char *)nlh != nest_off)
			continue;
		names = nest_names(nla_type(top), &n);
		snprintf(buf, len, "%s",
			 names && t < n && names[t] ? names[t] : "?");
		return;
	}
	snprintf(buf, len, "attribute %d", t);
}

/* ---- errors ---- */

/* Whether we hold both capabilities the family wants. */
static bool have_caps(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d))
		return geteuid() == 0;
	return (d[CAP_SYS_ADMIN / 32].effective & (1U << (CAP_SYS_ADMIN % 32))) &&
	       (d[CAP_NET_ADMIN / 32].effective & (1U << (CAP_NET_ADMIN % 32)));
}

static void perm_message(const char *op)
{
	fprintf(ctl_errf, PROG ": %s: permission denied: " PROG
		" needs CAP_SYS_ADMIN and CAP_NET_ADMIN (run as root)\n", op);
}

/*
 * An error (or a warning, err 0) with its extended ACK: tlvs..end are the
 * NLMSGERR_ATTR_* TLVs, or NULL.
 */
static void report(const char *op, int err, struct nlattr *tlvs, int tlvlen,
		   struct nl_msg *req)
{
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1] = { NULL };
	char where[160] = "", msgbuf[512] = "";
	const char *kmsg = NULL;

	if (tlvs && tlvlen > 0)
		nla_parse(tb, NLMSGERR_ATTR_MAX, tlvs, tlvlen, NULL);
	if (tb[NLMSGERR_ATTR_MSG]) {
		nla_strlcpy(msgbuf, tb[NLMSGERR_ATTR_MSG], sizeof(msgbuf));
		if (msgbuf[0])
			kmsg = msgbuf;
	}
	if (req && tb[NLMSGERR_ATTR_OFFS] &&
	    nla_len(tb[NLMSGERR_ATTR_OFFS]) >= 4) {
		char name[120];

		if (attr_at(req, nla_get_u32(tb[NLMSGERR_ATTR_OFFS]), name,
			    sizeof(name)))
			snprintf(where, sizeof(where), " [attribute %s]", name);
	}
	if (req && tb[NLMSGERR_ATTR_MISS_TYPE] &&
	    nla_len(tb[NLMSGERR_ATTR_MISS_TYPE]) >= 4) {
		char name[120];
		bool nest = tb[NLMSGERR_ATTR_MISS_NEST] &&
			    nla_len(tb[NLMSGERR_ATTR_MISS_NEST]) >= 4;

		missing_name(req, nest,
			     nest ? nla_get_u32(tb[NLMSGERR_ATTR_MISS_NEST]) : 0,
			     nla_get_u32(tb[NLMSGERR_ATTR_MISS_TYPE]),
			     name, sizeof(name));
		snprintf(where, sizeof(where), " [missing attribute %s]", name);
	}

	if (!err) {
		if (kmsg)
			fprintf(ctl_errf, PROG ": %s: warning: %s%s\n", op, kmsg,
				where);
		return;
	}
	/*
	 * GENL_ADMIN_PERM refuses without a message; magnet's own check says
	 * "magnet needs CAP_SYS_ADMIN". An EPERM we get with both capabilities
	 * is something else (a kernel module's event): its message says what.
	 */
	if (err == EPERM && (!kmsg || !have_caps())) {
		perm_message(op);
		return;
	}
	if (kmsg)
		fprintf(ctl_errf, PROG ": %s: %s%s (%s)\n", op, kmsg, where,
			strerror(err));
	else
		fprintf(ctl_errf, PROG ": %s: %s%s\n", op, strerror(err), where);
}

/* TLVs after an NLMSG_ERROR's struct nlmsgerr. */
static struct nlattr *err_tlvs(struct nlmsghdr *nlh, int *len)
{
	struct nlmsgerr *e = NLMSG_DATA(nlh);
	size_t off = sizeof(*e);

	*len = 0;
	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return NULL;
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		off += e->msg.nlmsg_len - NLMSG_HDRLEN;
	off = NLMSG_ALIGN(off);
	if (NLMSG_HDRLEN + off >= nlh->nlmsg_len)
		return NULL;
	*len = nlh->nlmsg_len - NLMSG_HDRLEN - off;
	return (struct nlattr *)((unsigned char *)e + off);
}

int ctl_nl_report(const char *op, struct nlmsghdr *nlh, struct nl_msg *req)
{
	struct nlattr *tlvs = NULL;
	int tlvlen = 0, err = 0;

	if (nlh->nlmsg_type == NLMSG_ERROR) {
		struct nlmsgerr *e = NLMSG_DATA(nlh);

		if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*e))) {
			fprintf(ctl_errf, PROG ": %s: truncated error message\n", op);
			return EPROTO;
		}
		err = -e->error;
		tlvs = err_tlvs(nlh, &tlvlen);
	} else if (nlh->nlmsg_type == NLMSG_DONE) {
		/* A dump's end: an int error, then the TLVs. */
		if (nlh->nlmsg_len >= NLMSG_LENGTH(sizeof(int))) {
			memcpy(&err, NLMSG_DATA(nlh), sizeof(err));
			err = -err;
		}
		if ((nlh->nlmsg_flags & NLM_F_ACK_TLVS) &&
		    nlh->nlmsg_len > NLMSG_LENGTH(NLMSG_ALIGN(sizeof(int)))) {
			tlvs = (struct nlattr *)((unsigned char *)NLMSG_DATA(nlh) +
						 NLMSG_ALIGN(sizeof(int)));
			tlvlen = nlh->nlmsg_len -
				 NLMSG_LENGTH(NLMSG_ALIGN(sizeof(int)));
		}
	}
	report(op, err, tlvs, tlvlen, req);
	return err;
}

/* ---- the socket ---- */

struct ctl_nl *ctl_nl_open(void)
{
	struct ctl_nl *nl = calloc(1, sizeof(*nl));
	int one = 1, ret;

	if (!nl)
		goto nomem;
	nl->sk = nl_socket_alloc();
	if (!nl->sk)
		goto nomem;
	ret = genl_connect(nl->sk);
	if (ret < 0) {
		fprintf(ctl_errf, PROG ": cannot open a generic netlink socket: %s\n",
			nl_geterror(ret));
		goto fail;
	}
	nl->fam = genl_ctrl_resolve(nl->sk, MAGNET_GENL_NAME);
	if (nl->fam < 0) {
		if (nl->fam == -NLE_OBJ_NOTFOUND)
			fprintf(ctl_errf, PROG ": the magnet module is not loaded (insmod magnet.ko)\n");
		else
			fprintf(ctl_errf, PROG ": resolving the generic netlink family \"%s\": %s\n",
				MAGNET_GENL_NAME, nl_geterror(nl->fam));
		goto fail;
	}
	nl->alarm_grp = genl_ctrl_resolve_grp(nl->sk, MAGNET_GENL_NAME,
					      MAGNET_GENL_MCGRP_ALARM);
	if (nl->alarm_grp < 0)
		nl->alarm_grp = -1;
	/* Our receive loop from here on: no libnl ACK bookkeeping. */
	nl_socket_disable_auto_ack(nl->sk);
	setsockopt(nl_socket_get_fd(nl->sk), SOL_NETLINK, NETLINK_EXT_ACK,
		   &one, sizeof(one));
	setsockopt(nl_socket_get_fd(nl->sk), SOL_NETLINK, NETLINK_CAP_ACK,
		   &one, sizeof(one));
	nl->fd = nl_socket_get_fd(nl->sk);
	nl->bufsz = 65536;
	nl->buf = malloc(nl->bufsz);
	if (!nl->buf)
		goto nomem;
	return nl;
nomem:
	fprintf(ctl_errf, PROG ": out of memory\n");
fail:
	ctl_nl_close(nl);
	return NULL;
}

struct ctl_nl *ctl_nl_wrap(int fd, int fam, int alarm_grp)
{
	struct ctl_nl *nl = calloc(1, sizeof(*nl));

	if (!nl)
		return NULL;
	nl->fd = fd;
	nl->fam = fam;
	nl->alarm_grp = alarm_grp;
	nl->bufsz = 256;	/* small: the tests exercise the growth */
	nl->buf = malloc(nl->bufsz);
	if (!nl->buf) {
		free(nl);
		return NULL;
	}
	return nl;
}

void ctl_nl_close(struct ctl_nl *nl)
{
	if (!nl)
		return;
	if (nl->sk)
		nl_socket_free(nl->sk);
	free(nl->buf);
	free(nl);
}

/* One datagram into *buf, grown to fit. Length, or -errno. */
static ssize_t recv_one(unsigned char **buf, size_t *bufsz, int fd, int flags)
{
	ssize_t n;

	for (;;) {
		n = recv(fd, *buf, *bufsz, MSG_PEEK | MSG_TRUNC | flags);
		if (n < 0 && errno == EINTR && !(flags & MSG_DONTWAIT))
			continue;
		if (n < 0)
			return -errno;
		if ((size_t)n > *bufsz) {
			unsigned char *b = realloc(*buf, n);

			if (!b)
				return -ENOMEM;
			*buf = b;
			*bufsz = n;
		}
		break;
	}
	do
		n = recv(fd, *buf, *bufsz, flags);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

__u64 ctl_nla_uint(const struct nlattr *nla)
{
	switch (nla_len(nla)) {
	case 1:
		return nla_get_u8((struct nlattr *)nla);
	case 2:
		return nla_get_u16((struct nlattr *)nla);
	case 4:
		return nla_get_u32((struct nlattr *)nla);
	case 8:
		return nla_get_u64((struct nlattr *)nla);
	}
	return 0;
}

int ctl_nla_nested(struct nlattr **tb, int max, const struct nlattr *nla)
{
	return nla_parse_nested(tb, max, (struct nlattr *)nla, NULL) ? -1 : 0;
}

enum rx {
	RX_MORE,
	RX_DONE,
	RX_FAIL,
};

/* The replies to the request with sequence number seq. */
static enum rx receive(struct ctl_nl *nl, struct nl_msg *req, __u32 seq,
		       bool dump, const char *op, ctl_reply_fn fn, void *arg,
		       bool *intr)
{
	int fd = nl->fd;
	bool have_gen = false;
	__u32 gen = 0;

	for (;;) {
		ssize_t n = recv_one(&nl->buf, &nl->bufsz, fd, 0);
		struct nlmsghdr *nlh;
		int len;

		if (n < 0) {
			fprintf(ctl_errf, PROG ": %s: receiving the reply: %s\n",
				op, strerror(-n));
			return RX_FAIL;
		}
		len = n;
		for (nlh = (struct nlmsghdr *)nl->buf; NLMSG_OK(nlh, len);
		     nlh = NLMSG_NEXT(nlh, len)) {
			struct nlattr *tb[MAGNET_A_MAX + 1];

			if (nlh->nlmsg_seq != seq)
				continue;	/* a stale reply */
			if (nlh->nlmsg_flags & NLM_F_DUMP_INTR)
				*intr = true;
			if (nlh->nlmsg_type == NLMSG_NOOP)
				continue;
			if (nlh->nlmsg_type == NLMSG_ERROR) {
				if (ctl_nl_report(op, nlh, req))
					return RX_FAIL;
				if (!dump)
					return RX_DONE;		/* the ACK */
				continue;
			}
			if (nlh->nlmsg_type == NLMSG_DONE)
				return ctl_nl_report(op, nlh, req) ? RX_FAIL : RX_DONE;
			if (nlh->nlmsg_type == NLMSG_OVERRUN) {
				fprintf(ctl_errf, PROG ": %s: reply overrun\n", op);
				return RX_FAIL;
			}
			if (nlh->nlmsg_type != nl->fam)
				continue;
			if (genlmsg_parse(nlh, 0, tb, MAGNET_A_MAX, NULL)) {
				fprintf(ctl_errf, PROG ": %s: malformed reply from the kernel\n", op);
				return RX_FAIL;
			}
			if (tb[MAGNET_A_GENERATION]) {
				__u32 g = ctl_nla_uint(tb[MAGNET_A_GENERATION]);

				if (have_gen && g != gen)
					*intr = true;
				gen = g;
				have_gen = true;
			}
			if (fn && fn(tb, arg) < 0) {
				fprintf(ctl_errf, PROG ": %s: malformed reply from the kernel\n", op);
				return RX_FAIL;
			}
		}
	}
}

/* Number msg and send it; 0 or -errno. */
static int send_req(struct ctl_nl *nl, struct nl_msg *msg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	ssize_t n;

	nlh->nlmsg_seq = ++nl->seq;
	nlh->nlmsg_pid = 0;
	nlh->nlmsg_flags |= NLM_F_REQUEST;
	do
		n = send(nl->fd, nlh, nlh->nlmsg_len, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == (ssize_t)nlh->nlmsg_len ? 0 : -EMSGSIZE;
}

int ctl_nl_request(struct ctl_nl *nl, const struct ctl_req *r,
		   const char *op, ctl_reply_fn fn, void (*reset)(void *),
		   void *arg)
{
	int tries;

	for (tries = 0; tries < CTL_DUMP_TRIES; tries++) {
		struct nl_msg *msg = ctl_req_msg(r, nl->fam);
		bool intr = false;
		enum rx rx;
		int ret;

		if (!msg) {
			fprintf(ctl_errf, PROG ": %s: out of memory\n", op);
			return CTL_EXIT_FAIL;
		}
		ret = send_req(nl, msg);
		if (ret < 0) {
			fprintf(ctl_errf, PROG ": %s: sending the request: %s\n",
				op, strerror(-ret));
			nlmsg_free(msg);
			return CTL_EXIT_FAIL;
		}
		rx = receive(nl, msg, nl->seq, r->dump, op, fn, arg, &intr);
		nlmsg_free(msg);
		if (rx == RX_FAIL)
			return CTL_EXIT_FAIL;
		if (!intr || !r->dump)
			return CTL_EXIT_OK;
		if (reset)
			reset(arg);
	}
	fprintf(ctl_errf, PROG ": %s: the dump was interrupted %d times by changes; giving up\n",
		op, CTL_DUMP_TRIES);
	return CTL_EXIT_FAIL;
}

int ctl_nl_monitor(struct ctl_nl *nl, ctl_reply_fn fn, void *arg,
		   volatile int *stop)
{
	struct nl_sock *sk = NULL;
	sigset_t block, orig;
	size_t bufsz = 8192;
	unsigned char *buf = malloc(bufsz);
	int fd, ret, status = CTL_EXIT_FAIL;

	/* A buffer of its own: fn may send requests (which use nl->buf). */
	if (!buf) {
		fprintf(ctl_errf, PROG ": monitor: out of memory\n");
		return CTL_EXIT_FAIL;
	}
	if (!nl->sk) {
		fd = nl->fd;		/* ctl_nl_wrap(): the alarms come on it */
		goto joined;
	}
	if (nl->alarm_grp < 0) {
		fprintf(ctl_errf, PROG ": monitor: the family has no \"%s\" multicast group (an older magnet.ko?)\n",
			MAGNET_GENL_MCGRP_ALARM);
		goto out;
	}
	/* A socket of its own: requests on nl->sk must not eat alarms. */
	sk = nl_socket_alloc();
	if (!sk) {
		fprintf(ctl_errf, PROG ": monitor: out of memory\n");
		goto out;
	}
	ret = genl_connect(sk);
	if (ret < 0) {
		fprintf(ctl_errf, PROG ": monitor: cannot open a generic netlink socket: %s\n",
			nl_geterror(ret));
		goto out;
	}
	nl_socket_disable_seq_check(sk);
	nl_socket_set_buffer_size(sk, 4 << 20, 0);
	ret = nl_socket_add_membership(sk, nl->alarm_grp);
	if (ret < 0) {
		if (ret == -NLE_PERM)
			perm_message("monitor");
		else
			fprintf(ctl_errf, PROG ": monitor: joining the \"%s\" group: %s\n",
				MAGNET_GENL_MCGRP_ALARM, nl_geterror(ret));
		goto out;
	}
	fd = nl_socket_get_fd(sk);
joined:
	/* Signals are taken only inside ppoll(): no race with *stop. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &orig);
	status = CTL_EXIT_OK;
	while (!*stop) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		struct nlmsghdr *nlh;
		ssize_t n;
		int len;

		ret = ppoll(&pfd, 1, NULL, &orig);
		if (ret < 0) {
			if (errno == EINTR)
				continue;
			fprintf(ctl_errf, PROG ": monitor: poll: %s\n", strerror(errno));
			status = CTL_EXIT_FAIL;
			break;
		}
		n = recv_one(&buf, &bufsz, fd, MSG_DONTWAIT);
		if (n == -EAGAIN || n == -EINTR)
			continue;
		if (n == -ENOBUFS) {
			fprintf(ctl_errf, PROG ": monitor: alarms lost: the socket's receive buffer overflowed\n");
			continue;
		}
		if (n < 0) {
			fprintf(ctl_errf, PROG ": monitor: receiving: %s\n", strerror(-n));
			status = CTL_EXIT_FAIL;
			break;
		}
		len = n;
		for (nlh = (struct nlmsghdr *)buf; NLMSG_OK(nlh, len) && !*stop;
		     nlh = NLMSG_NEXT(nlh, len)) {
			struct nlattr *tb[MAGNET_A_MAX + 1];
			struct genlmsghdr *g = NLMSG_DATA(nlh);

			if (nlh->nlmsg_type != nl->fam ||
			    nlh->nlmsg_len < NLMSG_LENGTH(GENL_HDRLEN) ||
			    g->cmd != MAGNET_CMD_ALARM)
				continue;
			if (genlmsg_parse(nlh, 0, tb, MAGNET_A_MAX, NULL) ||
			    !tb[MAGNET_A_ALARM])
				continue;
			ret = fn(tb, arg);
			if (ret < 0) {
				status = CTL_EXIT_FAIL;
				*stop = 1;
			} else if (ret > 0) {
				*stop = 1;
			}
		}
	}
	sigprocmask(SIG_SETMASK, &orig, NULL);
out:
	if (sk)
		nl_socket_free(sk);
	free(buf);
	return status;
}
