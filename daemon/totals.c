// SPDX-License-Identifier: GPL-2.0
/*
 * magnetd's totals; see totals.h.
 *
 * Probes are counted in an array indexed by event id, grown to the
 * largest id met (ids are small and dense: the module hands them out from
 * MAGNET_EVENT_FIRST_DYNAMIC up). Jobs live in an open-addressing table
 * keyed by cgroup id, linear probing, twice MG_TOTALS_JOBS slots so
 * probes stay short; a job that goes is removed by backward shifting, so
 * no tombstones pile up on a node that runs jobs for months.
 *
 * The collection thread counts (a read at a time, under the lock once);
 * the server thread takes views, ranks and removes jobs.
 *
 * A cgroup counted in another job's series (a member) keeps only the
 * series' key: the collection thread finds the series by it (a second
 * lookup, once per run of records), and the series counts how many
 * members point at it, so that it takes them along when it goes.
 *
 * A job's network traffic (struct job_net) is allocated with its first
 * packet, its peer list grown as peers come (4, 8, 16 places): most jobs
 * talk to few hosts, and most cgroups send nothing. A peer is found by a
 * scan of the list (16 at most); runs of one flow make the first look a
 * hit. Counts are kept since first met (n) with a base (base: n when the
 * job was last exported), as the job's others; "other"'s net has no base.
 * A TCP segment's bytes are counted as new or repeated by one tracker of
 * the node's flows (lib/seqtrack.h), before the job is looked up.
 *
 * Ranking sorts every job (at most MG_TOTALS_JOBS, once a second, in
 * arrays allocated once): the places go greedily by score, an exported
 * job's rate counting ENTER_MARGIN times plus ENTER_FLOOR (hysteresis),
 * first to each owner up to its share, then to whoever is left.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include "flow.h"
#include "record.h"
#include "reorder.h"
#include "sensor.h"
#include "seqtrack.h"
#include "totals.h"

#define JOB_SLOTS	(2 * MG_TOTALS_JOBS)	/* a power of two */
#define RANK_NS		1000000000ULL	/* rank at most this often */
#define RATE_TAU_S	30.0		/* the rate's averaging time */
#define ENTER_MARGIN	1.5		/* a newcomer beats an exported job's */
#define ENTER_FLOOR	1.0		/* rate by this factor, plus this */

struct probe_count {
	bool seen, sock;
	__u64 events, sock_bytes;
};

struct peer_slot {
	__u8 family, addr[16];	/* family 0: the "other" peer */
	struct mg_totals_counts n, base;
	__u64 seen;		/* the job's packets when it was last counted */
};

struct job_net {
	struct mg_totals_counts proto[MG_TOTALS_PROTOS];
	struct mg_totals_counts proto_base[MG_TOTALS_PROTOS];
	struct peer_slot other;
	__u64 evictions, evictions_base;
	__u64 packets;		/* counted: the peers' clock */
	unsigned int npeers, cap;
	struct peer_slot *peer;
};

struct job_slot {
	__u64 cgroup;		/* 0: empty */
	__u64 series;		/* a member's: the job it counts in; else 0 */
	unsigned int members;	/* cgroups that count in this one */
	bool named;		/* mg_totals_job_series was told */
	bool shown;		/* its series, unnamed, was shown (mg_totals_shown) */
	bool exported, has_owner;
	uid_t owner;
	struct mg_totals_series n;	/* since first met */
	struct mg_totals_series base;	/* n when last exported */
	__u64 ranked_events;	/* n.events + n.packets at the last rank */
	double rate;		/* events and packets per second, averaged */
	struct job_net *net;	/* NULL until its sockets' first packet */
};

struct mg_totals {
	pthread_mutex_t lock;
	unsigned int exported_max, nexported, njobs;
	__u64 records, bytes, kernel_lost, daemon_dropped;
	__u64 net_packets, net_bytes, net_unkeyed, net_repeated_bytes;
	struct mg_seqtrack *seq;	/* each TCP byte once (lib/seqtrack.h) */
	struct mg_reorder *order_tcp;	/* ...counted in the order sent */
	__u64 settle_ns;		/* how long a TCP packet waits */
	struct job_net other_net;	/* "other"'s: never freed, no base */
	struct probe_count *probes;
	size_t nprobes;			/* ids 0 .. nprobes - 1 */
	struct job_slot *jobs;
	struct mg_totals_job other;
	/* Ranking: when last, and its work arrays (MG_TOTALS_JOBS each). */
	__u64 ranked_ns;
	struct job_slot **order;
	uid_t *owners;
	unsigned int *taken;
	bool *want;
	__u64 *gone;		/* a series' members, as it goes */
};

int mg_totals_create(unsigned int exported_max, struct mg_totals **out)
{
	struct mg_totals *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->jobs = calloc(JOB_SLOTS, sizeof(*t->jobs));
	t->order = calloc(MG_TOTALS_JOBS, sizeof(*t->order));
	t->owners = calloc(MG_TOTALS_JOBS, sizeof(*t->owners));
	t->taken = calloc(MG_TOTALS_JOBS, sizeof(*t->taken));
	t->want = calloc(MG_TOTALS_JOBS, sizeof(*t->want));
	t->gone = calloc(MG_TOTALS_JOBS, sizeof(*t->gone));
	if (!t->jobs || !t->order || !t->owners || !t->taken || !t->want ||
	    !t->gone || mg_seqtrack_create(MG_TOTALS_SEQ_FLOWS, &t->seq) ||
	    mg_reorder_create(MG_TOTALS_REORDER, &t->order_tcp)) {
		mg_totals_free(t);
		return -ENOMEM;
	}
	pthread_mutex_init(&t->lock, NULL);
	t->exported_max = exported_max;
	strcpy(t->other.path, "other");
	t->other.exported = true;
	*out = t;
	return 0;
}

static void net_free(struct job_net *n)
{
	if (n)
		free(n->peer);
	free(n);
}

void mg_totals_free(struct mg_totals *t)
{
	size_t i;

	if (!t)
		return;
	pthread_mutex_destroy(&t->lock);
	free(t->probes);
	for (i = 0; t->jobs && i < JOB_SLOTS; i++)
		net_free(t->jobs[i].net);
	free(t->other_net.peer);
	free(t->jobs);
	free(t->order);
	free(t->owners);
	free(t->taken);
	free(t->want);
	free(t->gone);
	mg_seqtrack_free(t->seq);
	mg_reorder_free(t->order_tcp);
	free(t);
}

static size_t job_hash(__u64 cgroup)
{
	/* Fibonacci hashing: cgroup ids are inode numbers, often close. */
	return (size_t)((cgroup * 0x9e3779b97f4a7c15ULL) >> 32) & (JOB_SLOTS - 1);
}

/* The job's slot, or the empty slot where it would go. */
static struct job_slot *job_find(struct mg_totals *t, __u64 cgroup)
{
	size_t i = job_hash(cgroup);

	while (t->jobs[i].cgroup && t->jobs[i].cgroup != cgroup)
		i = (i + 1) & (JOB_SLOTS - 1);
	return &t->jobs[i];
}

static struct probe_count *probe_of(struct mg_totals *t, unsigned int id)
{
	if (id >= t->nprobes) {
		size_t n = t->nprobes ? t->nprobes : 64;
		struct probe_count *p;

		while (n <= id)
			n *= 2;
		p = realloc(t->probes, n * sizeof(*p));
		if (!p)
			return NULL;	/* counted in the node totals only */
		memset(p + t->nprobes, 0, (n - t->nprobes) * sizeof(*p));
		t->probes = p;
		t->nprobes = n;
	}
	return &t->probes[id];
}

/* The sock handler's size argument; 0 for any other record. */
static __u64 sock_bytes_of(const struct magnet_record *r)
{
	const struct magnet_sock *s = (const void *)r->payload;

	if (MAGNET_REC_HANDLER(r->flags) != MAGNET_HANDLER_SOCK ||
	    r->size < MAGNET_RECORD_HEADER + sizeof(*s))
		return 0;
	return s->size;
}

/* The job's slot, made if need be; NULL for cgroup 0 or a full table. */
static struct job_slot *job_of(struct mg_totals *t, __u64 cgroup)
{
	struct job_slot *j = cgroup ? job_find(t, cgroup) : NULL;

	if (j && !j->cgroup) {
		if (t->njobs >= MG_TOTALS_JOBS)
			return NULL;	/* the table is full: "other" */
		j->cgroup = cgroup;
		j->exported = t->nexported < t->exported_max;
		t->nexported += j->exported;
		t->njobs++;
	}
	return j;
}

/* The slot whose series cgroup's records count in (as job_of). */
static struct job_slot *series_of(struct mg_totals *t, __u64 cgroup)
{
	struct job_slot *j = job_of(t, cgroup), *s;

	if (!j || !j->series)
		return j;
	s = job_find(t, j->series);
	return s->cgroup ? s : j;	/* a series takes its members when it goes */
}

/* A JOB_LOST record: n records of its job dropped by the fairness rule. */
static void count_job_lost(struct mg_totals *t, const struct magnet_record *r)
{
	__u64 n = mg_record_job_lost(r);
	struct job_slot *j = series_of(t, r->cgroup);

	t->kernel_lost += n;
	if (j)
		j->n.lost_fair += n;
	if (!j || !j->exported)
		t->other.lost_fair += n;
}

static unsigned int proto_of(unsigned int ipproto)
{
	switch (ipproto) {
	case IPPROTO_TCP:
		return MG_TOTALS_TCP;
	case IPPROTO_UDP:
		return MG_TOTALS_UDP;
	case IPPROTO_ICMP:
		return MG_TOTALS_ICMP;
	case IPPROTO_ICMPV6:
		return MG_TOTALS_ICMPV6;
	default:
		return MG_TOTALS_PROTO_OTHER;
	}
}

/* A packet: its new bytes, and those seen before (TCP's repeated). */
static void counts_add(struct mg_totals_counts *c, bool tx, __u64 bytes, __u64 repeated)
{
	if (tx) {
		c->tx_packets++;
		c->tx_bytes += bytes;
		c->tx_repeated_bytes += repeated;
	} else {
		c->rx_packets++;
		c->rx_bytes += bytes;
		c->rx_repeated_bytes += repeated;
	}
}

static void counts_sum(struct mg_totals_counts *a, const struct mg_totals_counts *b)
{
	a->tx_packets += b->tx_packets;
	a->tx_bytes += b->tx_bytes;
	a->rx_packets += b->rx_packets;
	a->rx_bytes += b->rx_bytes;
	a->tx_repeated_bytes += b->tx_repeated_bytes;
	a->rx_repeated_bytes += b->rx_repeated_bytes;
}

static __u64 counts_bytes(const struct mg_totals_counts *c)
{
	return c->tx_bytes + c->rx_bytes;
}

/* The job's traffic, made with its first packet; NULL: out of memory. */
static struct job_net *net_of(struct job_slot *j)
{
	if (!j->net)
		j->net = calloc(1, sizeof(*j->net));
	return j->net;
}

/* A listed peer folds into "other", its series with it: an eviction. */
static void evict(struct job_net *n, struct peer_slot *p)
{
	counts_sum(&n->other.n, &p->n);
	counts_sum(&n->other.base, &p->base);
	n->evictions++;
	memset(p, 0, sizeof(*p));
}

/* A place for one more peer, the list grown if it may be; NULL: full. */
static struct peer_slot *peer_new(struct job_net *n)
{
	if (n->npeers == n->cap && n->cap < MG_TOTALS_PEERS) {
		unsigned int cap = n->cap ? 2 * n->cap : 4;
		struct peer_slot *p = realloc(n->peer, cap * sizeof(*p));

		if (p) {
			n->peer = p;
			n->cap = cap;
		}
	}
	if (n->npeers == n->cap)
		return NULL;
	memset(&n->peer[n->npeers], 0, sizeof(n->peer[0]));
	return &n->peer[n->npeers++];
}

static struct peer_slot *peer_find(struct job_net *n, __u8 family, const __u8 *addr)
{
	unsigned int i;

	for (i = 0; i < n->npeers; i++)
		if (n->peer[i].family == family && !memcmp(n->peer[i].addr, addr, 16))
			return &n->peer[i];
	return NULL;
}

/*
 * The place of the peer at addr (totals.h, Peers): listed, newly listed,
 * in an idle peer's place (evicted), or NULL when every place is busy:
 * then it counts in "other".
 */
static struct peer_slot *peer_place(struct job_net *n, __u8 family, const __u8 *addr)
{
	struct peer_slot *p = peer_find(n, family, addr), *v = NULL;
	unsigned int i;

	if (p)
		return p;
	p = peer_new(n);
	if (!p) {
		for (i = 0; i < n->npeers; i++) {
			p = &n->peer[i];
			if (n->packets - p->seen < MG_TOTALS_PEER_IDLE)
				continue;
			if (!v || counts_bytes(&p->n) < counts_bytes(&v->n) ||
			    (counts_bytes(&p->n) == counts_bytes(&v->n) && p->seen < v->seen))
				v = p;
		}
		if (!v)
			return NULL;
		evict(n, v);
		p = v;
	}
	p->family = family;
	memcpy(p->addr, addr, 16);
	return p;
}

/*
 * One packet of flow f into n, bytes of its payload new: its protocol's
 * counts and its peer's.
 */
static void net_count(struct job_net *n, const struct mg_flow *f, bool tx, __u32 bytes)
{
	struct peer_slot *p;

	n->packets++;
	counts_add(&n->proto[proto_of(f->proto)], tx, bytes, f->payload - bytes);
	p = peer_place(n, f->family, tx ? f->daddr : f->saddr);
	if (!p)
		p = &n->other;
	counts_add(&p->n, tx, bytes, f->payload - bytes);
	p->seen = n->packets;
}

/* The job's series starts at 0 (enter()): its traffic's too. */
static void net_enter(struct job_net *n)
{
	unsigned int i;

	if (!n)
		return;
	memcpy(n->proto_base, n->proto, sizeof(n->proto_base));
	n->other.base = n->other.n;
	n->evictions_base = n->evictions;
	for (i = 0; i < n->npeers; i++)
		n->peer[i].base = n->peer[i].n;
}

/*
 * m's traffic joins s's (join()): counts added, and to the base what m's
 * series had not counted (all of it unless m was exported, as
 * series_add). A peer of m with no place in s's list folds into "other"
 * (an eviction), or makes room by evicting s's smallest if that one is
 * smaller.
 */
static void net_merge(struct job_net *s, const struct job_net *m, bool carried)
{
	unsigned int i, k;

	for (i = 0; i < MG_TOTALS_PROTOS; i++) {
		counts_sum(&s->proto[i], &m->proto[i]);
		counts_sum(&s->proto_base[i], carried ? &m->proto_base[i] : &m->proto[i]);
	}
	counts_sum(&s->other.n, &m->other.n);
	counts_sum(&s->other.base, carried ? &m->other.base : &m->other.n);
	s->evictions += m->evictions;
	s->evictions_base += carried ? m->evictions_base : m->evictions;
	for (i = 0; i < m->npeers; i++) {
		const struct peer_slot *q = &m->peer[i];
		struct peer_slot *p = peer_find(s, q->family, q->addr), *v = NULL;

		if (!p)
			p = peer_new(s);
		if (!p) {
			for (k = 0; k < s->npeers; k++)
				if (!v || counts_bytes(&s->peer[k].n) < counts_bytes(&v->n))
					v = &s->peer[k];
			if (v && counts_bytes(&v->n) < counts_bytes(&q->n)) {
				evict(s, v);
				p = v;
			} else {
				p = &s->other;
				s->evictions++;
			}
		}
		if (p != &s->other) {
			p->family = q->family;
			memcpy(p->addr, q->addr, 16);
		}
		counts_sum(&p->n, &q->n);
		counts_sum(&p->base, carried ? &q->base : &q->n);
		p->seen = s->packets;
	}
}

/*
 * A packet: under the series of its socket's cgroup (a job not exported,
 * or no job: towards "other" too, as its events).
 */
static void count_flow(struct mg_totals *t, const struct mg_flow *fp, __u64 sk_cgroup)
{
	const struct mg_flow f = *fp;
	struct job_net *n = NULL;
	struct job_slot *j;
	unsigned int bytes;
	bool tx;

	tx = f.dir == MAGNET_SKB_DIR_OUT;
	bytes = mg_seqtrack_new_bytes(t->seq, &f);
	t->net_packets++;
	t->net_bytes += bytes;
	t->net_repeated_bytes += f.payload - bytes;
	j = series_of(t, (__u32)sk_cgroup);
	if (j)
		n = net_of(j);
	if (n) {
		net_count(n, &f, tx, bytes);
		j->n.packets++;
	}
	if (!n || !j->exported)
		net_count(&t->other_net, &f, tx, bytes);
}

/* TCP packets read settle_ns ago or more, in the order they were written. */
static void settle(struct mg_totals *t, __u64 now)
{
	struct mg_reorder_item it;

	while (mg_reorder_pop(t->order_tcp, now, t->settle_ns, &it))
		count_flow(t, &it.f, it.sk_cgroup);
}

/*
 * An skb record's packet: a TCP segment through the reorder buffer
 * (lib/reorder.h), counted once it has settled; any other at once.
 */
static void count_packet(struct mg_totals *t, const struct magnet_record *r,
			 const struct magnet_skb *k, __u64 *now)
{
	struct mg_reorder_item it, early;

	if (mg_flow_of(k, &it.f)) {
		t->net_unkeyed++;
		return;
	}
	if (!it.f.has_seq) {
		count_flow(t, &it.f, k->sk_cgroup);
		return;
	}
	if (!*now)
		*now = mg_now_ns(CLOCK_MONOTONIC);
	it.ts = r->timestamp;
	it.read_ns = *now;
	it.sk_cgroup = k->sk_cgroup;
	if (mg_reorder_push(t->order_tcp, &it, &early))
		count_flow(t, &early.f, early.sk_cgroup);
}

/*
 * Records of one probe, job and kind in a row (a read is mostly such
 * runs): counted once per run, not once per record.
 */
struct run {
	__u64 cgroup;
	__u16 id;
	bool sock_handler, intr;
	__u64 events, bytes, sock;
};

static void count_run(struct mg_totals *t, const struct run *u)
{
	struct probe_count *p;
	struct job_slot *j;

	if (!u->events)
		return;
	t->records += u->events;
	t->bytes += u->bytes;

	p = probe_of(t, u->id);
	if (p) {
		p->seen = true;
		p->events += u->events;
		if (u->sock_handler) {
			p->sock = true;
			p->sock_bytes += u->sock;
		}
	}

	j = series_of(t, u->cgroup);
	if (j) {
		j->n.events += u->events;
		j->n.sock_bytes += u->sock;
		j->n.intr_events += u->intr ? u->events : 0;
	}
	if (!j || !j->exported) {
		t->other.events += u->events;
		t->other.sock_bytes += u->sock;
		t->other.intr_events += u->intr ? u->events : 0;
	}
}

/* Count len bytes of whole records; the caller holds the lock. */
static void add(struct mg_totals *t, const void *data, size_t len)
{
	const struct magnet_record *r;
	struct run u = { 0 };
	__u64 now = 0;
	size_t off = 0;

	while ((r = mg_record_step(data, len, &off))) {
		const struct magnet_skb *k;
		bool sock_handler, intr;

		if (r->event_id == MAGNET_EVENT_LOST) {
			if (r->size >= MAGNET_RECORD_HEADER + sizeof(struct magnet_lost))
				t->kernel_lost += mg_lost_total(mg_record_lost(r));
			continue;
		}
		if (mg_record_is_job_lost(r)) {
			if (r->size >= MG_JOB_LOST_SIZE)
				count_job_lost(t, r);
			continue;
		}
		if (r->event_id == MAGNET_EVENT_PAD || mg_record_is_task(r))
			continue;
		k = mg_record_skb(r);
		if (k)
			count_packet(t, r, k, &now);
		sock_handler = MAGNET_REC_HANDLER(r->flags) == MAGNET_HANDLER_SOCK;
		intr = mg_record_is_intr(r);
		if (r->event_id != u.id || r->cgroup != u.cgroup ||
		    sock_handler != u.sock_handler || intr != u.intr) {
			count_run(t, &u);
			u = (struct run){ .cgroup = r->cgroup, .id = r->event_id,
					  .sock_handler = sock_handler,
					  .intr = intr };
		}
		u.events++;
		u.bytes += r->size;
		u.sock += sock_bytes_of(r);
	}
	count_run(t, &u);
	if (mg_reorder_len(t->order_tcp))
		settle(t, now ? now : mg_now_ns(CLOCK_MONOTONIC));
}

void mg_totals_set_settle(struct mg_totals *t, __u64 settle_ns)
{
	pthread_mutex_lock(&t->lock);
	t->settle_ns = settle_ns;
	pthread_mutex_unlock(&t->lock);
}

void mg_totals_add(struct mg_totals *t, const struct magnet_record *r)
{
	pthread_mutex_lock(&t->lock);
	add(t, r, r->size);
	pthread_mutex_unlock(&t->lock);
}

void mg_totals_add_read(struct mg_totals *t, const void *data, size_t len)
{
	pthread_mutex_lock(&t->lock);
	add(t, data, len);
	pthread_mutex_unlock(&t->lock);
}

void mg_totals_dropped(struct mg_totals *t, __u64 records)
{
	pthread_mutex_lock(&t->lock);
	t->daemon_dropped += records;
	pthread_mutex_unlock(&t->lock);
}

/* Remove the slot of cgroup (it must be there); slots move. */
static void remove_slot(struct mg_totals *t, struct job_slot *j)
{
	size_t hole, i;

	t->nexported -= j->exported;
	t->njobs--;
	/* Backward shift: move up every later entry the hole would strand. */
	hole = j - t->jobs;
	net_free(j->net);
	memset(j, 0, sizeof(*j));
	for (i = (hole + 1) & (JOB_SLOTS - 1); t->jobs[i].cgroup;
	     i = (i + 1) & (JOB_SLOTS - 1)) {
		size_t home = job_hash(t->jobs[i].cgroup);

		/* Stays if its home lies cyclically in (hole, i]. */
		if ((i > hole && home > hole && home <= i) ||
		    (i < hole && (home > hole || home <= i)))
			continue;
		t->jobs[hole] = t->jobs[i];
		memset(&t->jobs[i], 0, sizeof(t->jobs[i]));
		hole = i;
	}
}

static void job_gone(struct mg_totals *t, __u64 cgroup)
{
	struct job_slot *j = job_find(t, cgroup), *s;
	unsigned int n = 0, k;
	size_t i;

	if (!cgroup || !j->cgroup)
		return;
	if (j->series) {
		s = job_find(t, j->series);
		if (s->cgroup && s->members)
			s->members--;
	}
	/* A series goes with its members (their cgroups are gone too: below it). */
	for (i = 0; j->members && i < JOB_SLOTS && n < MG_TOTALS_JOBS; i++)
		if (t->jobs[i].cgroup && t->jobs[i].series == cgroup)
			t->gone[n++] = t->jobs[i].cgroup;
	remove_slot(t, j);
	for (k = 0; k < n; k++)
		remove_slot(t, job_find(t, t->gone[k]));
}

void mg_totals_job_gone(struct mg_totals *t, __u64 cgroup)
{
	pthread_mutex_lock(&t->lock);
	job_gone(t, cgroup);
	pthread_mutex_unlock(&t->lock);
}

static void series_add(struct mg_totals_series *a, const struct mg_totals_series *b)
{
	a->events += b->events;
	a->sock_bytes += b->sock_bytes;
	a->intr_events += b->intr_events;
	a->lost_fair += b->lost_fair;
	a->packets += b->packets;
}

/*
 * Member m's counts join series s. Each event stays in exactly one of
 * the monitors' series: what m counted while exported goes on in s's
 * series (s takes m's place if it had none), unless a monitor was shown
 * m's own series: that series ends, its counts stay in it, never seen
 * again in s's; what m counted in "other" stays there.
 */
static void join(struct mg_totals *t, struct job_slot *m, struct job_slot *s)
{
	/* What m's series counted goes on in s's (not if it was shown). */
	bool carried = m->exported && !m->shown;

	if (m->exported && !s->exported) {
		/* s takes m's place; its own counts so far stay in "other". */
		s->exported = true;
		t->nexported++;
		s->base = s->n;
		net_enter(s->net);
	}
	if (s->exported)
		series_add(&s->base, carried ? &m->base : &m->n);
	series_add(&s->n, &m->n);
	if (m->net && s->net) {
		net_merge(s->net, m->net, carried);
		net_free(m->net);
	} else if (m->net) {
		s->net = m->net;	/* its base as it was (carried), or none */
		if (!carried)
			net_enter(s->net);
	}
	m->net = NULL;
	s->ranked_events += m->ranked_events;
	s->rate += m->rate;
	s->members++;
	t->nexported -= m->exported;
	m->exported = false;
	m->n = (struct mg_totals_series){ 0 };
	m->base = m->n;
	m->ranked_events = 0;
	m->rate = 0;
	m->series = s->cgroup;
}

void mg_totals_job_series(struct mg_totals *t, __u64 cgroup, __u64 series)
{
	struct job_slot *m, *s;

	pthread_mutex_lock(&t->lock);
	m = cgroup ? job_find(t, cgroup) : NULL;
	if (!m || !m->cgroup || m->named)
		goto out;
	if (series && series != cgroup) {
		/* Made in an empty slot: m does not move. */
		s = job_of(t, series);
		if (!s)
			goto out;	/* no room: told again later */
		if (s->series)
			goto named;	/* a member itself: m counts alone */
		s->named = true;
		join(t, m, s);
	}
named:
	m->named = true;
out:
	pthread_mutex_unlock(&t->lock);
}

void mg_totals_job_owner(struct mg_totals *t, __u64 cgroup, uid_t owner)
{
	struct job_slot *j;

	pthread_mutex_lock(&t->lock);
	j = job_of(t, cgroup);
	if (j) {
		j->has_owner = true;
		j->owner = owner;
	}
	pthread_mutex_unlock(&t->lock);
}

static double score(const struct job_slot *j)
{
	return j->exported ? j->rate * ENTER_MARGIN + ENTER_FLOOR : j->rate;
}

static int by_score(const void *a, const void *b)
{
	const struct job_slot *x = *(struct job_slot *const *)a;
	const struct job_slot *y = *(struct job_slot *const *)b;
	double sx = score(x), sy = score(y);

	if (sx != sy)
		return sx < sy ? 1 : -1;
	if (x->exported != y->exported)
		return x->exported ? -1 : 1;
	return x->cgroup < y->cgroup ? -1 : x->cgroup > y->cgroup;
}

static int by_uid(const void *a, const void *b)
{
	uid_t x = *(const uid_t *)a, y = *(const uid_t *)b;

	return x < y ? -1 : x > y;
}

/* Index of uid in the sorted owners[0, n). */
static size_t owner_index(const struct mg_totals *t, size_t n, uid_t uid)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (t->owners[mid] < uid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void enter(struct job_slot *j)
{
	j->exported = true;
	j->shown = false;
	j->base = j->n;		/* its series starts at 0 */
	net_enter(j->net);
}

/* Choose the exported jobs: t->order holds the n series. */
static void choose(struct mg_totals *t, size_t n)
{
	size_t i, k, nowners = 0, share, left = t->exported_max;
	bool *want = t->want;

	qsort(t->order, n, sizeof(*t->order), by_score);
	/* The owners of active jobs, each once: they share the places. */
	for (i = 0; i < n; i++)
		if (t->order[i]->has_owner && t->order[i]->rate > 0)
			t->owners[nowners++] = t->order[i]->owner;
	qsort(t->owners, nowners, sizeof(*t->owners), by_uid);
	for (i = 0, k = 0; i < nowners; i++)
		if (!k || t->owners[k - 1] != t->owners[i])
			t->owners[k++] = t->owners[i];
	nowners = k;
	share = nowners ? (t->exported_max + nowners - 1) / nowners :
			  t->exported_max;
	memset(t->taken, 0, nowners * sizeof(*t->taken));
	/*
	 * First pass: each job in order, unless its owner has its share.
	 * Second: the places left, in order. want is the jobs' exported flag
	 * to be: the score needs the old flag until every job is placed.
	 */
	memset(want, 0, n * sizeof(*want));
	for (i = 0; i < n && left; i++) {
		const struct job_slot *j = t->order[i];
		bool capped;

		k = owner_index(t, nowners, j->owner);
		capped = j->has_owner && k < nowners &&
			      t->owners[k] == j->owner;

		if (capped && t->taken[k] >= share)
			continue;
		if (capped)
			t->taken[k]++;
		want[i] = true;
		left--;
	}
	for (i = 0; i < n && left; i++)
		if (!want[i]) {
			want[i] = true;
			left--;
		}
	t->nexported = 0;
	for (i = 0; i < n; i++) {
		struct job_slot *j = t->order[i];

		if (want[i] && !j->exported)
			enter(j);
		j->exported = want[i];
		t->nexported += want[i];
	}
}

void mg_totals_rank(struct mg_totals *t, __u64 now_ns)
{
	double dt;
	size_t i, n = 0;

	pthread_mutex_lock(&t->lock);
	if (t->ranked_ns && now_ns - t->ranked_ns < RANK_NS) {
		pthread_mutex_unlock(&t->lock);
		return;
	}
	dt = t->ranked_ns ? (double)(now_ns - t->ranked_ns) / 1e9 : 0;
	t->ranked_ns = now_ns;
	for (i = 0; i < JOB_SLOTS; i++) {
		struct job_slot *j = &t->jobs[i];
		__u64 d;

		if (!j->cgroup || j->series)
			continue;
		d = j->n.events + j->n.packets - j->ranked_events;
		j->ranked_events = j->n.events + j->n.packets;
		/*
		 * An average over about RATE_TAU_S that needs no exp(): the
		 * last rate weighs RATE_TAU_S, this interval its length.
		 */
		if (dt > 0)
			j->rate = (j->rate * RATE_TAU_S + (double)d) /
				  (RATE_TAU_S + dt);
		t->order[n++] = j;
	}
	/* Ranked only when it matters: more jobs than places. */
	if (n > t->exported_max || t->nexported < (n < t->exported_max ?
						    n : t->exported_max))
		choose(t, n);
	pthread_mutex_unlock(&t->lock);
}

static int busiest_first(const void *a, const void *b)
{
	const struct mg_totals_job *x = a, *y = b;

	if (x->events != y->events)
		return x->events < y->events ? 1 : -1;
	return x->cgroup < y->cgroup ? -1 : x->cgroup > y->cgroup;
}

static void series_since(struct mg_totals_series *s,
			 const struct mg_totals_series *now,
			 const struct mg_totals_series *base)
{
	s->events = now->events - base->events;
	s->sock_bytes = now->sock_bytes - base->sock_bytes;
	s->intr_events = now->intr_events - base->intr_events;
	s->lost_fair = now->lost_fair - base->lost_fair;
	s->packets = now->packets - base->packets;
}

static void counts_since(struct mg_totals_counts *s, const struct mg_totals_counts *now,
			 const struct mg_totals_counts *base)
{
	s->tx_packets = now->tx_packets - base->tx_packets;
	s->tx_bytes = now->tx_bytes - base->tx_bytes;
	s->rx_packets = now->rx_packets - base->rx_packets;
	s->rx_bytes = now->rx_bytes - base->rx_bytes;
	s->tx_repeated_bytes = now->tx_repeated_bytes - base->tx_repeated_bytes;
	s->rx_repeated_bytes = now->rx_repeated_bytes - base->rx_repeated_bytes;
}

static int most_bytes_first(const void *a, const void *b)
{
	const struct mg_totals_peer *x = a, *y = b;
	__u64 bx = counts_bytes(&x->n), by = counts_bytes(&y->n);

	if (bx != by)
		return bx < by ? 1 : -1;
	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	return memcmp(x->addr, y->addr, 16);
}

enum net_series { SERIES_NONE, SERIES_BASE, SERIES_ALL };

/*
 * n into o, its peers into the pool: series since the base (an exported
 * job), all of it ("other"), or none (a job not exported: 0).
 */
static void net_view(struct mg_totals_net *o, const struct job_net *n,
		     enum net_series series, struct mg_totals_peer **pool)
{
	static const struct mg_totals_counts zero;
	unsigned int i;

	memset(o, 0, sizeof(*o));
	o->peers = *pool;
	o->npeers = n->npeers;
	*pool += n->npeers;
	for (i = 0; i < MG_TOTALS_PROTOS; i++) {
		o->proto[i] = n->proto[i];
		counts_since(&o->proto_series[i], &n->proto[i],
			     series == SERIES_BASE ? &n->proto_base[i] : &zero);
	}
	for (i = 0; i < n->npeers; i++) {
		struct mg_totals_peer *p = &o->peers[i];

		p->family = n->peer[i].family;
		memcpy(p->addr, n->peer[i].addr, 16);
		p->n = n->peer[i].n;
		counts_since(&p->series, &n->peer[i].n,
			     series == SERIES_BASE ? &n->peer[i].base : &zero);
	}
	o->other.n = n->other.n;
	counts_since(&o->other.series, &n->other.n,
		     series == SERIES_BASE ? &n->other.base : &zero);
	o->evictions = n->evictions;
	o->evictions_series = n->evictions - (series == SERIES_BASE ? n->evictions_base : 0);
	if (series == SERIES_NONE) {
		memset(o->proto_series, 0, sizeof(o->proto_series));
		memset(&o->other.series, 0, sizeof(o->other.series));
		for (i = 0; i < n->npeers; i++)
			memset(&o->peers[i].series, 0, sizeof(o->peers[i].series));
		o->evictions_series = 0;
	}
}

static void net_sort(struct mg_totals_net *o)
{
	if (o->npeers)
		qsort(o->peers, o->npeers, sizeof(*o->peers), most_bytes_first);
}

int mg_totals_view(struct mg_totals *t, struct mg_totals_view *v)
{
	struct mg_seqtrack_stats seq;
	struct mg_totals_peer *pool;
	size_t i, n = 0, npeers;

	memset(v, 0, sizeof(*v));
	pthread_mutex_lock(&t->lock);
	/* TCP packets settled since the last read count in this view. */
	if (mg_reorder_len(t->order_tcp))
		settle(t, mg_now_ns(CLOCK_MONOTONIC));
	npeers = t->other_net.npeers;
	v->node.records = t->records;
	v->node.bytes = t->bytes;
	v->node.kernel_lost = t->kernel_lost;
	v->node.daemon_dropped = t->daemon_dropped;
	v->node.jobs = t->njobs;
	v->node.net_packets = t->net_packets;
	v->node.net_bytes = t->net_bytes;
	v->node.net_unkeyed = t->net_unkeyed;
	v->node.net_repeated_bytes = t->net_repeated_bytes;
	mg_seqtrack_stats(t->seq, &seq);
	v->node.net_seq_evictions = seq.evictions;
	v->node.net_seq_holes_dropped = seq.holes_dropped;
	v->node.net_order_early = mg_reorder_early(t->order_tcp);
	v->node.net_order_late = mg_reorder_late(t->order_tcp);
	v->other = t->other;
	v->other.series = (struct mg_totals_series){
		.events = t->other.events, .sock_bytes = t->other.sock_bytes,
		.intr_events = t->other.intr_events,
		.lost_fair = t->other.lost_fair,
		.packets = t->other_net.packets };

	for (i = 0; i < t->nprobes; i++)
		n += t->probes[i].seen;
	for (i = 0; i < JOB_SLOTS; i++)
		if (t->jobs[i].net && !t->jobs[i].series)
			npeers += t->jobs[i].net->npeers;
	v->probes = calloc(n ? n : 1, sizeof(*v->probes));
	v->jobs = calloc(t->njobs ? t->njobs : 1, sizeof(*v->jobs));
	v->members = calloc(t->njobs ? t->njobs : 1, sizeof(*v->members));
	v->peer_pool = calloc(npeers ? npeers : 1, sizeof(*v->peer_pool));
	pool = v->peer_pool;
	if (!v->probes || !v->jobs || !v->members || !v->peer_pool) {
		pthread_mutex_unlock(&t->lock);
		mg_totals_view_free(v);
		return -ENOMEM;
	}
	for (i = 0; i < t->nprobes; i++) {
		const struct probe_count *p = &t->probes[i];
		struct mg_totals_probe *o;

		if (!p->seen)
			continue;
		o = &v->probes[v->nprobes++];
		o->id = i;
		o->sock = p->sock;
		o->events = p->events;
		o->sock_bytes = p->sock_bytes;
	}
	for (i = 0; i < JOB_SLOTS; i++) {
		const struct job_slot *j = &t->jobs[i];
		struct mg_totals_job *o;

		if (!j->cgroup)
			continue;
		if (j->series) {
			v->members[v->nmembers++] = (struct mg_totals_member){
				.cgroup = j->cgroup, .series = j->series };
			continue;
		}
		o = &v->jobs[v->njobs++];
		o->cgroup = j->cgroup;
		o->exported = j->exported;
		o->named = j->named;
		o->has_owner = j->has_owner;
		o->owner = j->owner;
		o->events = j->n.events;
		o->sock_bytes = j->n.sock_bytes;
		o->intr_events = j->n.intr_events;
		o->lost_fair = j->n.lost_fair;
		if (j->exported)
			series_since(&o->series, &j->n, &j->base);
		o->rate = j->rate;
		o->has_net = j->net && j->net->packets;
		if (j->net)
			net_view(&o->net, j->net, j->exported ? SERIES_BASE : SERIES_NONE,
				 &pool);
	}
	v->other.has_net = t->other_net.packets;
	net_view(&v->other.net, &t->other_net, SERIES_ALL, &pool);
	pthread_mutex_unlock(&t->lock);
	qsort(v->jobs, v->njobs, sizeof(*v->jobs), busiest_first);
	for (i = 0; i < v->njobs; i++)
		net_sort(&v->jobs[i].net);
	net_sort(&v->other.net);
	return 0;
}

void mg_totals_shown(struct mg_totals *t, const struct mg_totals_view *v)
{
	size_t i;

	pthread_mutex_lock(&t->lock);
	for (i = 0; i < v->njobs; i++) {
		const struct mg_totals_job *o = &v->jobs[i];
		struct job_slot *j;

		/* Only a cgroup not named yet may join a series later. */
		if (o->named || !o->exported)
			continue;
		j = job_find(t, o->cgroup);
		if (j->cgroup && !j->series && j->exported)
			j->shown = true;
	}
	pthread_mutex_unlock(&t->lock);
}

void mg_totals_view_free(struct mg_totals_view *v)
{
	free(v->probes);
	free(v->jobs);
	free(v->members);
	free(v->peer_pool);
	v->probes = NULL;
	v->jobs = NULL;
	v->members = NULL;
	v->peer_pool = NULL;
	v->nprobes = v->njobs = v->nmembers = 0;
}
