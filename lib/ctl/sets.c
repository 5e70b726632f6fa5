// SPDX-License-Identifier: GPL-2.0
/*
 * Named probe sets: the functions a packet or a connection goes through,
 * so that an operator need not know the kernel's. Each member is a probe
 * named SET/FUNCTION. The functions are those verified on the kernels of
 * make check-kernels (tests/vm/t-24-skb.sh, t-25-sets.sh); a member that
 * moved goes by its older name on older kernels. On a real NIC, GRO hands
 * packets up through ip_list_rcv, which takes no skb, hence
 * ip_local_deliver rather than ip_rcv on the receive side. Sets of
 * tracepoints (net-dev, sched) are the same on every kernel.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"

#define SET_CAPTURE_DEFAULT	128	/* skb members: IP + TCP/UDP headers and more */

struct set_member {
	const char *symbol;	/* a function, or a tracepoint's SUBSYSTEM:EVENT */
	const char *handler;	/* "sock", "skb" or "switch" */
	const char *what;
	const char *older;	/* the same place on a kernel without symbol */
	__u8 type;		/* enum magnet_probe_type */
};

struct ctl_set {
	const char *name;
	const char *summary;
	const struct set_member *members;
};

static const struct set_member udp_journey[] = {
	{ "udp_sendmsg", "sock", "socket layer: who sends how much to whom", NULL, MAGNET_PROBE_KPROBE },
	{ "ip_send_skb", "skb", "UDP hands the datagram to IP (no device yet)", NULL, MAGNET_PROBE_KPROBE },
	{ "ip_finish_output2", "skb", "IP, routed: the device is known", NULL, MAGNET_PROBE_KPROBE },
	{ "__dev_queue_xmit", "skb", "the device queue (link header on)", NULL, MAGNET_PROBE_KPROBE },
	{ "ip_local_deliver", "skb", "received: IP delivers it locally", NULL, MAGNET_PROBE_KPROBE },
	{ "udp_rcv", "skb", "received: UDP", NULL, MAGNET_PROBE_KPROBE },
	{ NULL },
};

static const struct set_member tcp_traffic[] = {
	{ "tcp_sendmsg", "sock", "bytes sent per socket", NULL, MAGNET_PROBE_KPROBE },
	{ "tcp_recvmsg", "sock", "reads per socket (size: the bytes asked for)", NULL, MAGNET_PROBE_KPROBE },
	{ "tcp_v4_connect", "sock", "connects: the host contacted", NULL, MAGNET_PROBE_KPROBE },
	{ "inet_csk_accept", "sock", "accepts: the listening socket", NULL, MAGNET_PROBE_KPROBE },
	{ NULL },
};

static const struct set_member net_rx[] = {
	{ "napi_gro_receive", "skb", "a NIC's packets, from the link header", NULL, MAGNET_PROBE_KPROBE },
	{ "__netif_rx", "skb", "loopback and virtual devices' packets", "netif_rx", MAGNET_PROBE_KPROBE },
	{ "ip_local_deliver", "skb", "IP packets for this host", NULL, MAGNET_PROBE_KPROBE },
	{ "tcp_v4_rcv", "skb", "TCP segments", NULL, MAGNET_PROBE_KPROBE },
	{ "udp_rcv", "skb", "UDP datagrams", NULL, MAGNET_PROBE_KPROBE },
	{ NULL },
};

/*
 * Each packet once per socket, where its socket is known and its IP
 * header is in place: the job and peer of magnetd's AGG net. Sent: IP
 * output (every locally made packet; GSO ones whole). Received: TCP's
 * state machine for the socket that takes the segment (IPv4 and IPv6,
 * backlog or not, once), and UDP's queueing to its socket. Not
 * tcp_v4_do_rcv(): a listener's new socket takes the segment that
 * completed its handshake straight from tcp_child_process(), and that
 * segment carries data when the bare ACK was lost or deferred.
 *
 * fentry probes, because these counts must be whole: a packet received
 * in a softirq that interrupted a kprobe's handler (any kprobe's, on a
 * function's first instruction: those run with interrupts on) would be
 * skipped by the kprobes core, which runs one handler per CPU at a time,
 * and only counted as missed. fentry probes nest once per context.
 */
static const struct set_member net_jobs[] = {
	{ "ip_output", "skb", "IPv4 packets sent (the socket's job)", NULL, MAGNET_PROBE_FENTRY },
	{ "ip6_output", "skb", "IPv6 packets sent", NULL, MAGNET_PROBE_FENTRY },
	{ "tcp_rcv_established", "skb", "TCP segments received by a connected socket", NULL,
	  MAGNET_PROBE_FENTRY },
	{ "tcp_rcv_state_process", "skb", "TCP segments received in the other states", NULL,
	  MAGNET_PROBE_FENTRY },
	{ "__udp_enqueue_schedule_skb", "skb", "UDP datagrams queued to a socket", NULL,
	  MAGNET_PROBE_FENTRY },
	{ NULL },
};

/* The devices' own events: every packet queued to or taken from one. */
static const struct set_member net_dev[] = {
	{ "net:net_dev_queue", "skb", "packets queued to a device (link header on)", NULL,
	  MAGNET_PROBE_TRACEPOINT },
	{ "net:netif_receive_skb", "skb", "packets the stack takes from a device", NULL,
	  MAGNET_PROBE_TRACEPOINT },
	{ NULL },
};

static const struct set_member sched[] = {
	{ "sched:sched_switch", "switch", "task switches: who runs, for which job", NULL,
	  MAGNET_PROBE_TRACEPOINT },
	{ NULL },
};

static const struct ctl_set sets[] = {
	{ "udp-journey", "a UDP datagram from the socket to the device and back up",
	  udp_journey },
	{ "tcp-traffic", "TCP bytes sent and read per socket, connects and accepts",
	  tcp_traffic },
	{ "net-rx", "packets received, from the device up to TCP and UDP", net_rx },
	{ "net-jobs", "each packet once, by its socket's job and peer (AGG net)", net_jobs },
	{ "net-dev", "packets at the devices, out and in (tracepoints: every kernel)", net_dev },
	{ "sched", "task switches on every CPU (tracepoint sched:sched_switch)", sched },
	{ NULL },
};

/* By name or a unique prefix of it, as every word of magnet-ctl. */
const struct ctl_set *ctl_set_find(const char *name)
{
	const struct ctl_set *s, *found = NULL;
	size_t n = strlen(name);

	for (s = sets; n && s->name; s++) {
		if (!strcmp(s->name, name))
			return s;
		if (!strncmp(s->name, name, n)) {
			if (found)
				return NULL;	/* ambiguous */
			found = s;
		}
	}
	return found;
}

const char *ctl_set_names(void)
{
	return "udp-journey tcp-traffic net-rx net-jobs net-dev sched";
}

/* Whether the running kernel has sym (kallsyms names it to anyone). */
static bool kernel_has(const char *sym)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	size_t n = strlen(sym);
	bool found = false;
	char line[512];

	if (!f)
		return true;	/* cannot tell: the newest name */
	while (!found && fgets(line, sizeof(line), f)) {
		char *name = strchr(line, ' ');

		name = name ? strchr(name + 1, ' ') : NULL;
		found = name && !strncmp(name + 1, sym, n) && strchr("\t\n", name[1 + n]);
	}
	fclose(f);
	return found;
}

/* The member's function on this kernel (before 5.18: netif_rx). */
static const char *member_symbol(const struct set_member *m)
{
	return m->older && !kernel_has(m->symbol) ? m->older : m->symbol;
}

static void member_name(char *buf, size_t len, const struct ctl_set *s,
			const struct set_member *m)
{
	snprintf(buf, len, "%s/%s", s->name, member_symbol(m));
}

static void member_req(struct ctl_req *q, const struct ctl_req *r, __u8 cmd,
		       const char *name)
{
	memset(q, 0, sizeof(*q));
	q->cmd = r->cmd;
	q->mode = r->mode;
	q->genl_cmd = cmd;
	q->name = name;
	q->probe_attrs = CTL_BIT(MAGNET_PROBE_A_NAME);
}

static void del_members(struct ctl_nl *nl, const struct ctl_req *r,
			const struct ctl_set *s, size_t n)
{
	char name[MAGNET_NAME_MAX + 1];
	struct ctl_req q;
	size_t i;

	for (i = 0; i < n; i++) {
		member_name(name, sizeof(name), s, &s->members[i]);
		member_req(&q, r, MAGNET_CMD_PROBE_DEL, name);
		ctl_nl_request(nl, &q, "probe del set (undoing)", NULL, NULL, NULL);
	}
}

/* All members or none: a refusal removes the ones already added. */
int ctl_set_add(struct ctl_nl *nl, struct ctl_req *r)
{
	const struct ctl_set *s = r->set;
	char name[MAGNET_NAME_MAX + 1], op[MAGNET_NAME_MAX + 64];
	struct ctl_req q;
	size_t i;

	for (i = 0; s->members[i].symbol; i++) {
		const struct set_member *m = &s->members[i];

		member_name(name, sizeof(name), s, m);
		member_req(&q, r, MAGNET_CMD_PROBE_ADD, name);
		q.type = m->type;
		q.symbol = member_symbol(m);
		q.handler = m->handler;
		q.probe_attrs |= CTL_BIT(MAGNET_PROBE_A_TYPE) | CTL_BIT(MAGNET_PROBE_A_SYMBOL) |
				 CTL_BIT(MAGNET_PROBE_A_HANDLER);
		if (!strcmp(m->handler, "skb")) {
			q.capture_len = r->capture_len ? r->capture_len : SET_CAPTURE_DEFAULT;
			q.probe_attrs |= CTL_BIT(MAGNET_PROBE_A_CAPTURE_LEN);
		}
		snprintf(op, sizeof(op), "probe add set %s: %s", s->name, q.symbol);
		if (ctl_nl_request(nl, &q, op, NULL, NULL, NULL)) {
			del_members(nl, r, s, i);
			return CTL_EXIT_FAIL;
		}
	}
	pr_record_open("set_added");
	pr_str("set", "%s:", s->name);
	pr_u64("probes", " %llu probes\n", i);
	pr_record_close();
	return 0;
}

int ctl_set_del(struct ctl_nl *nl, struct ctl_req *r)
{
	const struct ctl_set *s = r->set;
	char name[MAGNET_NAME_MAX + 1], op[MAGNET_NAME_MAX + 64];
	struct ctl_req q;
	int ret = 0;
	size_t i;

	for (i = 0; s->members[i].symbol; i++) {
		member_name(name, sizeof(name), s, &s->members[i]);
		member_req(&q, r, MAGNET_CMD_PROBE_DEL, name);
		snprintf(op, sizeof(op), "probe del set %s: %s", s->name, name);
		if (ctl_nl_request(nl, &q, op, NULL, NULL, NULL))
			ret = CTL_EXIT_FAIL;	/* the others still go */
	}
	return ret;
}

int ctl_set_list(struct ctl_nl *nl, struct ctl_req *r)
{
	const struct ctl_set *s;
	const struct set_member *m;

	pr_array_open(NULL);
	for (s = sets; s->name; s++) {
		pr_text("%s: %s\n", s->name, s->summary);
		for (m = s->members; m->symbol; m++) {
			pr_record_open("set_probe");
			pr_str("set", NULL, s->name);
			pr_str("type", "    %-10s", ctl_probe_type_name(m->type));
			pr_str("symbol", " %-22s", member_symbol(m));
			pr_str("handler", " handler %-6s", m->handler);
			pr_str("what", NULL, m->what);
			pr_text("  %s\n", m->what);	/* prose: not escaped */
			pr_record_close();
		}
	}
	pr_array_close();
	pr_end();
	return 0;
}
