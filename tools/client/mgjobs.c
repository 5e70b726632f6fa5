// SPDX-License-Identifier: GPL-2.0
/*
 * Jobs' traffic across nodes; see mgjobs.h. Small tables scanned
 * linearly: a query reads a handful of nodes, each with at most 4096 jobs
 * of at most 17 peers, and flows of one report (--agg-top of them).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mgjobs.h"

const char *mgj_job_key(const struct mgc_totals_job *j, char *buf, size_t size)
{
	if (j->slurm.is)
		snprintf(buf, size, "slurm=%u", j->slurm.job);
	else
		snprintf(buf, size, "%s", j->path);
	return buf;
}

const char *mgj_addr_of(const char *end, char *buf, size_t size)
{
	const char *close = end[0] == '[' ? strchr(end, ']') : NULL;
	const char *colon = strrchr(end, ':');
	size_t len = close ? (size_t)(close - end - 1) :
		     colon ? (size_t)(colon - end) : strlen(end);

	snprintf(buf, size, "%.*s", (int)len, close ? end + 1 : end);
	return buf;
}

static bool loopback(const char *addr)
{
	return !strncmp(addr, "127.", 4) || !strcmp(addr, "::1") ||
	       !strncmp(addr, "::ffff:127.", 11);
}

/* Has node k a flow whose local end is at addr? */
static bool has_local(const struct mgj_node *k, const char *addr)
{
	char a[MGJ_ADDR_MAX];
	size_t i;

	for (i = 0; k->flows && i < k->flows->npeers; i++)
		if (k->flows->peer[i].local &&
		    !strcmp(mgj_addr_of(k->flows->peer[i].local, a, sizeof(a)), addr))
			return true;
	return false;
}

int mgj_addr_node(const struct mgj_node *nodes, size_t n, size_t self,
		  const char *addr)
{
	size_t k;

	if (loopback(addr) || has_local(&nodes[self], addr))
		return self;
	for (k = 0; k < n; k++)
		if (k != self && has_local(&nodes[k], addr))
			return k;
	return -1;
}

int mgj_match(const struct mgj_node *nodes, size_t n, size_t self,
	      const struct mgc_net_peer *f, const struct mgc_net_peer **other)
{
	char a[MGJ_ADDR_MAX];
	const struct mgc_net *fl;
	int k;
	size_t i;

	if (!f->local)
		return -1;
	k = mgj_addr_node(nodes, n, self, mgj_addr_of(f->peer, a, sizeof(a)));
	fl = k < 0 ? NULL : nodes[k].flows;
	for (i = 0; fl && i < fl->npeers; i++) {
		const struct mgc_net_peer *g = &fl->peer[i];

		if (g != f && g->local && !strcmp(g->local, f->peer) &&
		    !strcmp(g->peer, f->local) && !strcmp(g->proto, f->proto)) {
			*other = g;
			return k;
		}
	}
	return -1;
}

static void counts_add(struct mgc_counts *a, const struct mgc_counts *b)
{
	a->tx_packets += b->tx_packets;
	a->tx_bytes += b->tx_bytes;
	a->rx_packets += b->rx_packets;
	a->rx_bytes += b->rx_bytes;
}

static __u64 bytes_of(const struct mgc_counts *c)
{
	return c->tx_bytes + c->rx_bytes;
}

struct build {
	const struct mgj_node *nodes;
	size_t n;
	struct mgj_group *g;
	size_t ng, cap;
};

static struct mgj_group *group_of(struct build *b, const struct mgc_totals_job *j)
{
	char key[MGJ_KEY_MAX];
	struct mgj_group *g;
	size_t i;

	mgj_job_key(j, key, sizeof(key));
	for (i = 0; i < b->ng; i++)
		if (!strcmp(b->g[i].key, key))
			return &b->g[i];
	if (b->ng == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 16;

		g = realloc(b->g, cap * sizeof(*g));
		if (!g)
			return NULL;
		b->g = g;
		b->cap = cap;
	}
	g = &b->g[b->ng++];
	memset(g, 0, sizeof(*g));
	snprintf(g->key, sizeof(g->key), "%s", key);
	g->slurm = j->slurm.is;
	g->slurm_job = j->slurm.job;
	return g;
}

/* The group's row of node k (nodes are added in order: the last, if any). */
static struct mgj_row *row_of(struct mgj_group *g, size_t k)
{
	struct mgj_row *r;

	if (g->nrows && g->rows[g->nrows - 1].node == k)
		return &g->rows[g->nrows - 1];
	r = realloc(g->rows, (g->nrows + 1) * sizeof(*r));
	if (!r)
		return NULL;
	g->rows = r;
	r = &g->rows[g->nrows++];
	memset(r, 0, sizeof(*r));
	r->node = k;
	return r;
}

static struct mgj_peer *peer_of(struct mgj_row *r, const char *addr, bool make)
{
	struct mgj_peer *p;
	size_t i;

	for (i = 0; i < r->npeers; i++)
		if (!strcmp(r->peers[i].addr, addr))
			return &r->peers[i];
	if (!make)
		return NULL;
	p = realloc(r->peers, (r->npeers + 1) * sizeof(*p));
	if (!p)
		return NULL;
	r->peers = p;
	p = &r->peers[r->npeers++];
	memset(p, 0, sizeof(*p));
	snprintf(p->addr, sizeof(p->addr), "%s", addr);
	p->node = -1;
	return p;
}

/* Job j of node k (its TOTALS lines) into its group's row. */
static int add_job(struct build *b, size_t k, const struct mgc_totals_job *j)
{
	struct mgj_group *g = group_of(b, j);
	struct mgj_row *r = g ? row_of(g, k) : NULL;
	size_t i, p;

	if (!r)
		return -ENOMEM;
	for (i = 0; i < j->nnet; i++) {
		const struct mgc_totals_net *e = &j->net[i];

		for (p = 0; p < r->nprotos; p++)
			if (!strcmp(r->protos[p].proto, e->proto))
				break;
		if (p == r->nprotos && p < sizeof(r->protos) / sizeof(r->protos[0])) {
			snprintf(r->protos[p].proto, sizeof(r->protos[p].proto), "%s", e->proto);
			r->nprotos++;
		}
		if (p == sizeof(r->protos) / sizeof(r->protos[0]))
			p--;	/* a later magnetd's many: the last holds the rest */
		counts_add(&r->protos[p].c, &e->c);
		counts_add(&r->c, &e->c);
		counts_add(&g->c, &e->c);
	}
	for (i = 0; i < j->npeers; i++) {
		struct mgj_peer *e = peer_of(r, j->peer[i].peer, true);

		if (!e)
			return -ENOMEM;
		counts_add(&e->c, &j->peer[i].c);
	}
	return 0;
}

/* The job of node k whose series is cgroup, as a peer job names it. */
static const char *job_name(const struct mgj_node *node, __u32 cgroup, char *buf,
			    size_t size)
{
	size_t i;

	for (i = 0; node->totals && i < node->totals->njobs; i++)
		if (node->totals->job[i].cgroup == cgroup)
			return mgj_job_key(&node->totals->job[i], buf, size);
	snprintf(buf, size, cgroup ? "cgroup:%u" : "-", cgroup);
	return buf;
}

static void add_peer_job(struct mgj_peer *p, size_t node, const char *job)
{
	size_t i;

	for (i = 0; i < p->njobs; i++)
		if (p->jobs[i].node == node && !strcmp(p->jobs[i].job, job))
			return;
	if (p->njobs == MGJ_PEER_JOBS_MAX) {
		p->more++;
		return;
	}
	p->jobs[p->njobs].node = node;
	snprintf(p->jobs[p->njobs].job, sizeof(p->jobs[0].job), "%s", job);
	p->njobs++;
}

/* Node k's flows: each one's other end, if a queried node reports it. */
static void match_flows(struct build *b, size_t k)
{
	const struct mgc_net *fl = b->nodes[k].flows;
	char key[MGJ_KEY_MAX], other_job[MGJ_KEY_MAX], a[MGJ_ADDR_MAX];
	size_t i, gi, ri;

	for (i = 0; fl && i < fl->npeers; i++) {
		const struct mgc_net_peer *f = &fl->peer[i], *o = NULL;
		struct mgj_peer *p = NULL;
		int on = mgj_match(b->nodes, b->n, k, f, &o);

		if (on < 0 || !f->job)
			continue;
		job_name(&b->nodes[k], f->job, key, sizeof(key));
		for (gi = 0; gi < b->ng && strcmp(b->g[gi].key, key); gi++)
			;
		for (ri = 0; gi < b->ng && ri < b->g[gi].nrows; ri++)
			if (b->g[gi].rows[ri].node == k)
				break;
		if (gi == b->ng || ri == b->g[gi].nrows)
			continue;	/* no traffic in TOTALS (yet) */
		/* Its host listed, or folded into "other". */
		p = peer_of(&b->g[gi].rows[ri], mgj_addr_of(f->peer, a, sizeof(a)), false);
		if (!p)
			p = peer_of(&b->g[gi].rows[ri], "other", false);
		if (p)
			add_peer_job(p, on, job_name(&b->nodes[on], o->job, other_job,
						     sizeof(other_job)));
	}
}

static int peers_order(const void *x, const void *y)
{
	const struct mgj_peer *a = x, *b = y;
	bool ao = !strcmp(a->addr, "other"), bo = !strcmp(b->addr, "other");

	if (ao != bo)
		return ao ? 1 : -1;
	if (bytes_of(&a->c) != bytes_of(&b->c))
		return bytes_of(&a->c) < bytes_of(&b->c) ? 1 : -1;
	return strcmp(a->addr, b->addr);
}

static int groups_order(const void *x, const void *y)
{
	const struct mgj_group *a = x, *b = y;

	if (bytes_of(&a->c) != bytes_of(&b->c))
		return bytes_of(&a->c) < bytes_of(&b->c) ? 1 : -1;
	return strcmp(a->key, b->key);
}

int mgj_build(const struct mgj_node *nodes, size_t n,
	      struct mgj_group **groups, size_t *ngroups)
{
	struct build b = { .nodes = nodes, .n = n };
	size_t k, i, r;

	*groups = NULL;
	*ngroups = 0;
	for (k = 0; k < n; k++)
		for (i = 0; nodes[k].totals && i < nodes[k].totals->njobs; i++) {
			const struct mgc_totals_job *j = &nodes[k].totals->job[i];

			if (!j->cgroup || !j->nnet)
				continue;	/* "other", or no traffic */
			if (add_job(&b, k, j)) {
				mgj_free(b.g, b.ng);
				return -ENOMEM;
			}
		}
	for (k = 0; k < n; k++)
		match_flows(&b, k);
	for (i = 0; i < b.ng; i++)
		for (r = 0; r < b.g[i].nrows; r++) {
			struct mgj_row *row = &b.g[i].rows[r];
			size_t p;

			for (p = 0; p < row->npeers; p++)
				if (strcmp(row->peers[p].addr, "other"))
					row->peers[p].node = mgj_addr_node(nodes, n, row->node,
									   row->peers[p].addr);
			if (row->npeers)
				qsort(row->peers, row->npeers, sizeof(*row->peers), peers_order);
		}
	if (b.ng)
		qsort(b.g, b.ng, sizeof(*b.g), groups_order);
	*groups = b.g;
	*ngroups = b.ng;
	return 0;
}

void mgj_free(struct mgj_group *g, size_t n)
{
	size_t i, r;

	for (i = 0; i < n; i++) {
		for (r = 0; r < g[i].nrows; r++)
			free(g[i].rows[r].peers);
		free(g[i].rows);
	}
	free(g);
}
