// SPDX-License-Identifier: GPL-2.0
/*
 * magnetd's fan-out: the records the collection thread read, to every
 * client that wants them; AGG reports; the views of the totals (counted
 * by the collection thread, mg_server_wants) the monitors get.
 *
 * Per chunk:
 *
 *   chunk queue ─► index the records ─┬─► AGG clients: filter, count
 *                  (and name their    ├─► binary subscribers: filter,
 *                  threads: TASK      │   one "B <n>" frame per chunk
 *                  records, in order) └─► JSON subscribers: filter; each
 *                                         record encoded once, shared
 *
 * With no such client, only chunks with TASK records come, to keep the
 * names a new subscriber is replayed.
 *
 * A client below ALL (access.h) gets only the records visible() lets
 * through, copied with kernel addresses hashed (scrub()): binary frames
 * of its own, JSON lines encoded once per chunk for all such clients.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "chunkq.h"
#include "collect.h"
#include "expr.h"
#include "flow.h"
#include "record.h"
#include "sensor.h"
#include "client.h"
#include "fanout.h"
#include "log.h"
#include "server_int.h"

/* Re-read the probe table for an unknown event id at most this often. */
#define PROBES_REFRESH_NS	1000000000ULL
/*
 * PROBES shows the module's counts as of at most this long ago: a client
 * pipelining PROBES costs one read of the module's table per this, not
 * one per command.
 */
#define PROBES_FRESH_NS		10000000ULL
/* Jobs' cgroups are looked for (gone ones stop being exported) this often. */
#define JOBS_CHECK_NS		1000000000ULL

static void note_queue_drops(struct mg_server *s);

void mg_fanout_refresh_probes(struct mg_server *s, bool force)
{
	__u64 now = mg_now_ns(CLOCK_MONOTONIC);
	struct mg_probe_table t = { 0 };
	size_t len;
	char *text;

	if (now - s->probes_read_ns < (force ? PROBES_FRESH_NS : PROBES_REFRESH_NS))
		return;
	s->probes_read_ns = now;
	text = mg_sensor_read(s->cfg.dir, "probes", &len);
	if (!text)
		return;		/* module away: keep the names we had */
	if (!mg_probes_parse(&t, text, len)) {
		mg_probes_free(&s->probes);
		s->probes = t;
	}
	free(text);
}

/*
 * Where a Slurm job's user is noted (owners.h): under its step's cgroup
 * for all the step's cgroups (its tasks', slurmstepd's), else its own.
 */
static __u32 slurm_owner_key(const struct mg_cgmap_job *j, __u32 id)
{
	return j->step ? j->step : id;
}

/*
 * Jobs whose cgroup directory is gone (or is another cgroup now), or that
 * were gone before the map saw them, stop being exported, at most once
 * per JOBS_CHECK_NS. What was seen of the owners of cgroups seen removed
 * goes too (a Slurm step's with its step's directory). True if one went.
 */
static bool check_jobs(struct mg_server *s, const struct mg_totals_view *v)
{
	struct mg_cgmap_job j;
	bool gone = false;
	size_t i;

	if (!mg_cgmap_root(s->cgmap) || s->now - s->jobs_checked_ns < JOBS_CHECK_NS)
		return false;
	s->jobs_checked_ns = s->now;
	mg_cgmap_poll(s->cgmap);
	/* The cgroups counted in a series too: a user may churn them. */
	for (i = 0; i < v->njobs + v->nmembers; i++) {
		__u32 id = i < v->njobs ? v->jobs[i].cgroup :
			   v->members[i - v->njobs].cgroup, key;

		if (!mg_cgmap_job(s->cgmap, id, s->now, &j)) {
			mg_totals_job_gone(s->totals, id);
			gone = true;
			continue;
		}
		key = j.slurm ? slurm_owner_key(&j, id) : id;
		if (mg_cgmap_alive(s->cgmap, id))
			continue;
		mg_totals_job_gone(s->totals, id);
		gone = true;
		mg_owners_forget(s->owners, id);
		if (key != id && mg_cgmap_path(s->cgmap, key, s->now) &&
		    !mg_cgmap_alive(s->cgmap, key))
			mg_owners_forget(s->owners, key);
	}
	return gone;
}

/*
 * Jobs met since the last view count in their series from now on: a
 * Slurm task's cgroup in its step's (docs/slurm.md), any other in its
 * own. Once per cgroup, before any view shows it if it can: a cgroup
 * the map cannot name yet (made since it looked, or not to be looked up
 * again so soon) may be a Slurm task, and is asked again at the next
 * view; check_jobs drops those that are gone. True if one joined
 * another's series.
 */
static bool name_series(struct mg_server *s, const struct mg_totals_view *v)
{
	struct mg_cgmap_job j;
	bool moved = false;
	size_t i;

	for (i = 0; i < v->njobs; i++) {
		__u32 id = v->jobs[i].cgroup, key, own;

		if (v->jobs[i].named || !mg_cgmap_job(s->cgmap, id, s->now, &j))
			continue;
		/* Users seen before the map knew it a Slurm step's cgroup. */
		own = mg_owners_of(s->owners, id);
		key = j.slurm ? slurm_owner_key(&j, id) : id;
		if (key != id && own != MG_OWNER_NONE && own)
			mg_owners_note(s->owners, key, own);
		mg_totals_job_series(s->totals, id, j.series);
		moved |= j.series != id;
	}
	return moved;
}

/*
 * Whose job is: a Slurm job's user, from its path (v1's uid_U) or the one
 * non-root uid of the threads seen in its step's cgroups (its tasks',
 * slurmstepd's), never root while that user is unknown; any other
 * cgroup's own (owners.h). MG_OWNER_NONE, MG_OWNER_MIXED or a uid.
 */
static __u32 owner_of(const struct mg_server *s, __u32 id,
		      const struct mg_cgmap_job *j)
{
	__u32 owner;

	if (!j || !j->slurm)
		return mg_owners_of(s->owners, id);
	if (j->slurm->uid != MG_SLURM_NONE)
		return j->slurm->uid;
	owner = mg_owners_of(s->owners, slurm_owner_key(j, id));
	return owner ? owner : MG_OWNER_NONE;
}

/* One line's Slurm words for job id, a series' cgroup; "" for others. */
static const char *slurm_words(struct mg_server *s, __u32 id, __u64 now,
			       char *buf, size_t size)
{
	char node[MG_SLURM_NODE_MAX];
	struct mg_cgmap_job j;
	__u32 owner;

	buf[0] = '\0';
	if (!id || !mg_cgmap_job(s->cgmap, id, now, &j) || !j.slurm)
		return buf;
	owner = owner_of(s, id, &j);
	return mg_slurm_words(j.slurm, mg_slurm_node(j.slurm, j.path, node),
			      owner == MG_OWNER_MIXED ? MG_SLURM_NONE : owner,
			      buf, size);
}

/* A series' name, its Slurm job if it is one's, and its owner. */
static void describe_job(struct mg_server *s, struct mg_totals_job *o)
{
	char buf[MG_CGMAP_NAME_MIN];
	struct mg_cgmap_job j;
	bool known = mg_cgmap_job(s->cgmap, (__u32)o->cgroup, s->now, &j);
	__u32 owner = owner_of(s, (__u32)o->cgroup, known ? &j : NULL);

	snprintf(o->path, sizeof(o->path), "%s", known ? j.path :
		 mg_cgmap_name(s->cgmap, o->cgroup, s->now, buf, sizeof(buf)));
	if (known && j.slurm) {
		o->is_slurm = true;
		o->slurm = *j.slurm;
		mg_slurm_node(j.slurm, j.path, o->slurm_node);
	}
	/* The ranking's shares of places per user (totals.h). */
	if (owner != MG_OWNER_NONE && owner != MG_OWNER_MIXED &&
	    (!o->has_owner || o->owner != owner))
		mg_totals_job_owner(s->totals, o->cgroup, owner);
	o->has_owner = owner != MG_OWNER_NONE && owner != MG_OWNER_MIXED;
	o->owner = o->has_owner ? owner : 0;
}

static int by_id(const void *a, const void *b)
{
	const struct mg_totals_probe *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* Probe names and types from the table; loaded probes not seen yet too. */
static int name_probes(struct mg_server *s, struct mg_totals_view *v,
		       bool up)
{
	size_t i, j, n = v->nprobes;
	struct mg_totals_probe *p;

	p = realloc(v->probes, (n + s->probes.n + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	v->probes = p;
	for (i = 0; i < n; i++) {
		snprintf(p[i].type, sizeof(p[i].type), "unknown");
		snprintf(p[i].name, sizeof(p[i].name), "event%u", p[i].id);
		p[i].symbol[0] = '\0';
	}
	for (j = 0; up && j < s->probes.n; j++) {
		const struct mg_probe *t = &s->probes.v[j];
		struct mg_totals_probe *o = NULL;

		for (i = 0; i < n; i++)
			if (p[i].id == t->id)
				o = &p[i];
		if (!o) {
			o = &p[v->nprobes++];
			memset(o, 0, sizeof(*o));
			o->id = t->id;
		}
		o->loaded = true;
		o->missed = t->missed;
		v->node.probe_missed += t->missed;
		snprintf(o->type, sizeof(o->type), "%s", t->type);
		snprintf(o->name, sizeof(o->name), "%s", t->name);
		snprintf(o->symbol, sizeof(o->symbol), "%s", t->target);
	}
	qsort(p, v->nprobes, sizeof(*p), by_id);
	return 0;
}

/* The totals now, with names: what TOTALS and the monitors show. */
int mg_fanout_totals_view(struct mg_server *s, struct mg_totals_view *v)
{
	bool up = mg_collect_up(s->env.collect);
	size_t i;
	int ret;

	s->now = mg_now_ns(CLOCK_MONOTONIC);
	note_queue_drops(s);
	mg_totals_rank(s->totals, s->now);
	ret = mg_totals_view(s->totals, v);
	if (!ret) {
		/* Named first: a series check_jobs removes is not made again. */
		bool again = name_series(s, v);

		again |= check_jobs(s, v);
		if (again) {
			mg_totals_view_free(v);
			ret = mg_totals_view(s->totals, v);
		}
	}
	if (ret)
		return ret;
	/*
	 * The monitors are shown this view: its jobs not named yet (met
	 * since the naming above, or whose series has no room) show series
	 * of their own, which end if they join one.
	 */
	mg_totals_shown(s->totals, v);
	if (up)
		mg_fanout_refresh_probes(s, true);
	ret = name_probes(s, v, up);
	if (ret) {
		mg_totals_view_free(v);
		return ret;
	}
	gethostname(v->node.node, sizeof(v->node.node) - 1);
	v->node.now_ns = mg_now_ns(CLOCK_REALTIME);
	v->node.uptime_ns = s->now - s->start_ns;
	v->node.module_up = up;
	v->node.cpus = mg_collect_ncpus(s->env.collect);
	v->node.probes = up ? s->probes.n : 0;
	for (i = 0; i < v->njobs; i++)
		describe_job(s, &v->jobs[i]);
	return 0;
}

int mg_fanout_agg_key(void *arg, enum mg_agg_key kind,
		      const struct magnet_record *r, __u64 *key, char *label)
{
	struct mg_server *s = arg;
	const struct mg_task *t = s->cur_task;

	switch (kind) {
	case MG_AGG_PROBE:
		return 0;	/* labelled from the probe table at report time */
	case MG_AGG_PID:
	case MG_AGG_TGID:
		/* A tgid is labelled by the thread of its latest record. */
		if (t)
			snprintf(label, MG_AGG_LABEL_LEN, "%.15s", t->comm);
		return 0;
	case MG_AGG_COMM:
		if (!t)
			return MG_AGG_COMM_UNKNOWN_NAME;
		snprintf(label, MG_AGG_LABEL_LEN, "%.15s", t->comm);
		return 0;
	case MG_AGG_CGROUP:
		if (!r->cgroup)
			return -ESRCH;	/* no job known: unkeyed */
		*key = mg_cgmap_series(s->cgmap, r->cgroup);
		return 0;
	default:
		return -EINVAL;
	}
}

/*
 * May c see record i (docs/security.md)? ALL: all. Below: LOST records
 * (node-wide counts), and the records and TASK records of threads whose
 * real and effective uid are both the client's, not written in interrupt
 * context (the thread did not cause them). A thread not named (its TASK
 * record was lost) is nobody's; so are JOB_LOST records (other jobs').
 */
static bool visible(const struct mg_server *s, const struct client *c, size_t i)
{
	const struct magnet_record *r = s->recs[i];
	const struct mg_task *t = s->rec_task[i];
	__u32 uid, euid;

	if (c->access == MG_ACCESS_ALL || r->event_id == MAGNET_EVENT_LOST)
		return true;
	if (!c->uid_known)
		return false;
	if (mg_record_is_task(r)) {
		mg_record_task_uids(r, &uid, &euid);
		return uid == c->uid && euid == c->uid;
	}
	return !mg_record_is_meta(r) && !mg_record_is_intr(r) && t &&
	       t->uid == c->uid && t->euid == c->uid;
}

/*
 * LOST and JOB_LOST records always pass (losses are never silent); TASK
 * records too, for binary streams; then what the client may see.
 */
static bool wants(const struct mg_server *s, const struct client *c, size_t i)
{
	const struct magnet_record *r = s->recs[i];

	if (!visible(s, c, i))
		return false;
	if (mg_record_is_task(r))
		return c->format == MG_FORMAT_BINARY;
	return r->event_id == MAGNET_EVENT_LOST || mg_record_is_job_lost(r) ||
	       mg_expr_match(c->filter, r);
}

/*
 * r as a client below ALL sees it: values that may be kernel addresses
 * (the abstract id, a generic probe's arguments and return value) hashed
 * (mg_access_scrub). A TASK record's abstract id is its cgroup id: kept.
 */
static void scrub(struct magnet_record *r)
{
	unsigned int i, n = mg_record_nargs(r);
	__u64 *args;

	if (mg_record_is_meta(r))
		return;
	r->abstract_id = mg_access_scrub(r->abstract_id);
	if (mg_record_handler(r) != MAGNET_HANDLER_GENERIC)
		return;
	if (mg_record_is_return(r))
		((__u64 *)r->payload)[0] = mg_access_scrub(((__u64 *)r->payload)[0]);
	args = (__u64 *)mg_record_args(r);
	for (i = 0; i < n; i++)
		args[i] = mg_access_scrub(args[i]);
}

/* Record i, scrubbed, in s->scrubbed (8-byte aligned, as records are). */
static const struct magnet_record *scrubbed(struct mg_server *s, size_t i)
{
	struct magnet_record *r = (struct magnet_record *)s->scrubbed;

	memcpy(r, s->recs[i], s->recs[i]->size);
	scrub(r);
	return r;
}

/* A packet's job: its socket's cgroup's series (netview.h). */
static __u32 series_of(void *arg, __u32 cgroup)
{
	const struct mg_server *s = arg;

	return mg_cgmap_series(s->cgmap, cgroup);
}

static void feed_agg(struct mg_server *s, struct client *c)
{
	size_t i;

	if (c->net)
		mg_netview_set_series(c->net, series_of, s);
	for (i = 0; i < s->nrecs; i++) {
		const struct magnet_record *r = s->recs[i];

		/* A job's fairness losses are TOTALS' (per job), not an event. */
		if (mg_record_is_task(r) || mg_record_is_job_lost(r) ||
		    !visible(s, c, i) || (c->subscribed && !wants(s, c, i)))
			continue;
		if (c->net) {
			mg_netview_add_record(c->net, r);
			continue;
		}
		s->cur_task = s->rec_task[i];
		mg_agg_add_record(c->agg, c->agg_key, r, mg_fanout_agg_key, s);
	}
	s->cur_task = NULL;
}

static void feed_binary(struct mg_server *s, struct client *c,
			const void *data, size_t len)
{
	size_t i, n = 0, room, fit, bytes = 0, run;
	char hdr[32];
	int hl;

	/* Every record wanted: the chunk goes as it came, if it fits. */
	if (c->access == MG_ACCESS_ALL && mg_expr_all(c->filter) && s->nrecs &&
	    mg_client_tell_drops(s, c)) {
		hl = snprintf(hdr, sizeof(hdr), "B %zu\n", len);
		if (hl + len <= mg_client_room(s, c)) {
			mg_client_put_frame(c, hdr, hl, data, len);
			s->sent += s->nrecs;
			return;
		}
	}
	for (i = 0; i < s->nrecs; i++)
		if (wants(s, c, i))
			s->pick_idx[n++] = i;
	if (!n)
		return;
	for (i = 0; i < n; i++)
		s->pick[i] = s->recs[s->pick_idx[i]];
	if (!mg_client_tell_drops(s, c)) {
		mg_client_drop(s, c, n);
		return;
	}
	/*
	 * What fits goes; the rest of the chunk is dropped for this client.
	 * The header is sized for the largest frame once, not per record.
	 */
	room = mg_client_room(s, c);
	hl = snprintf(hdr, sizeof(hdr), "B %zu\n", (size_t)s->maxrecs * MAGNET_RECORD_MAX);
	for (fit = 0; fit < n; fit++) {
		if (hl + bytes + s->pick[fit]->size > room)
			break;
		bytes += s->pick[fit]->size;
	}
	if (fit) {
		hl = snprintf(hdr, sizeof(hdr), "B %zu\n", bytes);
		mg_obuf_put(&c->out, hdr, hl);
		for (i = 0; c->access != MG_ACCESS_ALL && i < fit; i++) {
			const struct magnet_record *r = scrubbed(s, s->pick_idx[i]);

			mg_obuf_put(&c->out, r, r->size);
		}
		/* Matching records are mostly adjacent: copy them in runs. */
		for (i = c->access != MG_ACCESS_ALL ? fit : 0; i < fit; i += run) {
			const char *p = (const char *)s->pick[i];
			size_t len = s->pick[i]->size;

			for (run = 1; i + run < fit &&
			     (const char *)s->pick[i + run] == p + len; run++)
				len += s->pick[i + run]->size;
			mg_obuf_put(&c->out, p, len);
		}
		s->sent += fit;
	}
	mg_client_drop(s, c, n - fit);
}

/*
 * The JSON line of record i, encoded on first use: as read (k 0) or
 * scrubbed (k 1, for clients below ALL).
 */
static bool json_of(struct mg_server *s, size_t i, unsigned int k)
{
	struct mg_json_line *j = &s->json_lines[k][i];
	size_t start;

	if (j->done)
		return j->len > 0;
	j->done = true;
	start = s->json.len;
	/* The name as of the record's place in the stream (index_chunk). */
	s->popts.task = s->rec_task[i];
	if (mg_print_record(s->json_f, &s->popts, k ? scrubbed(s, i) : s->recs[i]) ||
	    fflush(s->json_f)) {
		s->json.len = start;
		j->len = 0;
		return false;
	}
	j->off = start;
	j->len = s->json.len - start;
	return true;
}

static void feed_json(struct mg_server *s)
{
	size_t i;
	unsigned int k;

	s->json.len = 0;
	memset(s->json_lines[0], 0, s->nrecs * sizeof(*s->json_lines[0]));
	memset(s->json_lines[1], 0, s->nrecs * sizeof(*s->json_lines[1]));
	for (i = 0; i < s->nrecs; i++) {
		const struct magnet_record *r = s->recs[i];

		if (r->event_id >= MAGNET_EVENT_FIRST_DYNAMIC &&
		    !mg_probes_find(&s->probes, r->event_id))
			mg_fanout_refresh_probes(s, false);	/* a new probe: name it */
		for (k = 0; k < s->nclients; k++) {
			struct client *c = s->clients[k];
			unsigned int sc = c->access != MG_ACCESS_ALL;

			if (!c->subscribed || c->format != MG_FORMAT_JSON ||
			    !wants(s, c, i))
				continue;
			if (!json_of(s, i, sc))
				continue;
			mg_client_put_data(s, c, s->json.buf + s->json_lines[sc][i].off,
					   s->json_lines[sc][i].len, 1);
		}
	}
}

/* Records the collection thread could not queue: everyone is told. */
static void note_queue_drops(struct mg_server *s)
{
	__u64 now = atomic_load(s->env.queue_dropped);
	__u64 d = now - s->seen_queue_dropped;
	unsigned int k;

	if (!d)
		return;
	s->seen_queue_dropped = now;
	mg_totals_dropped(s->totals, d);
	for (k = 0; k < s->nclients; k++) {
		struct client *c = s->clients[k];

		if (c->subscribed) {
			c->pending_drop += d;
			c->dropped += d;
		}
		if (mg_client_aggregates(c))
			c->agg_dropped += d;
	}
}

/*
 * Records the collection thread could not queue may have held TASK
 * records: the mirror could then name a thread by an older name (one that
 * exec'd since). Start it again: names are unknown until the module names
 * the threads again, never wrong. A reload of the module starts new
 * streams (the module names every thread again): the old names go too,
 * so that no subscriber is replayed a stale one.
 */
static void reset_tasks(struct mg_server *s)
{
	__u64 d = s->env.queue_drop_chunks ?
		  atomic_load(s->env.queue_drop_chunks) : 0;
	unsigned int reloads = mg_collect_reloads(s->env.collect);
	struct mg_tasks *t;

	if (d == s->tasks_dropped && reloads == s->tasks_reloads)
		return;
	t = mg_tasks_new();
	if (!t)
		return;		/* try again with the next chunk */
	s->tasks_dropped = d;
	s->tasks_reloads = reloads;
	mg_tasks_free(s->tasks);
	s->tasks = t;
}

/*
 * A TASK record: the thread's name, and its job's owner (owners.h). A
 * Slurm job's user is noted under its step's cgroup, root's threads
 * (slurmstepd's) left out (docs/slurm.md); the cgroup is looked up (once
 * per thread), so that one the map missed still names its step. One the
 * map cannot name yet keeps its own, taken into its step's when it is
 * named (name_series).
 */
static void feed_task(struct mg_server *s, const struct magnet_record *r)
{
	struct mg_cgmap_job j;
	__u32 uid, euid, owner;

	mg_tasks_feed(s->tasks, r);	/* ENOMEM: unnamed */
	mg_record_task_uids(r, &uid, &euid);
	/* A set-uid thread is not its user's doing: counted as root's. */
	owner = uid == euid ? uid : 0;
	if (r->cgroup && mg_cgmap_job(s->cgmap, r->cgroup, s->now, &j) &&
	    j.slurm) {
		if (owner)
			mg_owners_note(s->owners, slurm_owner_key(&j, r->cgroup),
				       owner);
		return;
	}
	mg_owners_note(s->owners, r->cgroup, owner);
}

/*
 * Index the chunk's records and, if names (AGG and JSON clients use them;
 * binary streams carry the TASK records), name each one's thread as of
 * its place in the stream: a TASK record later in the chunk must not
 * rename an earlier record, so the names are copied as the mirror is fed
 * (once per run of records of one thread).
 */
static int index_chunk(struct mg_server *s, const void *data, size_t len,
		       bool names)
{
	const struct magnet_record *r;
	const struct mg_task *src = NULL, *copy = NULL, *t;
	size_t off = 0;

	s->nrecs = 0;
	/* The collection thread checked every record (collect.c, deliver). */
	while ((r = mg_record_step(data, len, &off))) {
		if (s->nrecs == s->maxrecs)
			return -E2BIG;	/* cannot happen: sized for the buffer */
		t = NULL;
		if (mg_record_is_task(r)) {
			if (!mg_record_check(data, len, off - r->size))
				feed_task(s, r);
			src = NULL;
		} else if (names && !mg_record_is_meta(r)) {
			t = mg_tasks_of(s->tasks, r);
			if (t && t != src) {
				s->task_copy[s->nrecs] = *t;
				src = t;
				copy = &s->task_copy[s->nrecs];
			}
			if (t)
				t = copy;
		}
		s->rec_task[s->nrecs] = t;
		s->recs[s->nrecs++] = r;
	}
	return 0;
}

struct replay {
	struct membuf b;
	const struct client *c;
};

static int put_task(const struct magnet_record *r, void *arg)
{
	struct replay *rp = arg;
	__u32 uid, euid;

	/* Below ALL: its own threads' names only (visible()). */
	mg_record_task_uids(r, &uid, &euid);
	if (rp->c->access != MG_ACCESS_ALL &&
	    (!rp->c->uid_known || uid != rp->c->uid || euid != rp->c->uid))
		return 0;
	return mg_membuf_write(&rp->b, (const char *)r, r->size) == (ssize_t)r->size ?
	       0 : -ENOMEM;
}

void mg_fanout_replay_tasks(struct mg_server *s, struct client *c)
{
	struct replay rp = { .c = c };
	struct membuf *b = &rp.b;
	char hdr[32];
	int hl;

	if (!mg_tasks_replay(s->tasks, s->now, put_task, &rp) && b->len) {
		hl = snprintf(hdr, sizeof(hdr), "B %zu\n", b->len);
		mg_obuf_put(&c->out, hdr, hl);
		mg_obuf_put(&c->out, b->buf, b->len);
	}
	free(b->buf);
}

/* Nobody streams: the chunk came for its TASK records (mg_server_wants). */
static void feed_tasks(struct mg_server *s, const void *data, size_t len)
{
	const struct magnet_record *r;
	size_t off = 0;

	while ((r = mg_record_step(data, len, &off)))
		if (mg_record_is_task(r) &&
		    !mg_record_check(data, len, off - r->size))
			feed_task(s, r);
}

/* The collection thread counted the chunk's records in the totals. */
static void handle_chunk(struct mg_server *s, const void *data, size_t len)
{
	bool any_json = false, any_below = false;
	unsigned int k;

	note_queue_drops(s);
	reset_tasks(s);
	s->now = mg_now_ns(CLOCK_MONOTONIC);
	/*
	 * Cgroups made before these records were written may not be mapped
	 * yet: a record's cgroup the map misses reads inotify's events first
	 * (once per chunk), so that a new Slurm task's records find its step.
	 */
	mg_cgmap_arm(s->cgmap);
	if (!s->nsubs && !s->naggs) {
		feed_tasks(s, data, len);
		return;
	}
	for (k = 0; k < s->nclients; k++) {
		const struct client *c = s->clients[k];

		any_json |= c->subscribed && c->format == MG_FORMAT_JSON;
		/* visible() goes by the threads' owners: names needed. */
		any_below |= (c->subscribed || mg_client_aggregates(c)) &&
			     c->access != MG_ACCESS_ALL;
	}
	index_chunk(s, data, len, any_json || s->naggs || any_below);
	for (k = 0; k < s->nclients; k++) {
		struct client *c = s->clients[k];

		if (mg_client_aggregates(c))
			feed_agg(s, c);
		if (c->subscribed && c->format == MG_FORMAT_BINARY)
			feed_binary(s, c, data, len);
	}
	if (any_json)
		feed_json(s);
}

/*
 * Take up to max queued chunks; true if more wait. Bounded, so a flood
 * never starves the sockets, the timers (reports, cut-offs) or signals.
 */
bool mg_fanout_drain(struct mg_server *s, unsigned int max)
{
	const void *data;
	size_t len;
	__u32 cpu;

	while (max-- && !mg_chunkq_peek(s->env.queue, &cpu, &data, &len)) {
		handle_chunk(s, data, len);
		mg_chunkq_pop(s->env.queue);
	}
	note_queue_drops(s);
	return !mg_chunkq_peek(s->env.queue, &cpu, &data, &len);
}

/*
 * Queue a report built aside, whole, or skip it, and start the next
 * interval. events: the records it counted.
 */
static void send_report(struct mg_server *s, struct client *c, struct obuf *tmp,
			__u64 events, __u64 now)
{
	/* An empty queue takes a report of any size, as it takes a reply. */
	if (mg_client_tell_drops(s, c) && (tmp->len <= mg_client_room(s, c) || !c->out.len)) {
		mg_obuf_put(&c->out, tmp->buf + tmp->head, tmp->len);
		c->agg_skipped = 0;
	} else {
		/*
		 * No room: the report's records are dropped for this client,
		 * told by a D line before its next report, which also counts
		 * the reports skipped. The client_timeout clock runs.
		 */
		mg_client_drop(s, c, events + (c->subscribed ? 0 : c->agg_dropped));
		c->agg_skipped++;
	}
	free(tmp->buf);
	c->agg_dropped = 0;
	c->agg_start = now;
	while (c->agg_next <= now)
		c->agg_next += c->every_ns;
}

/* AGG net: J lines per job and protocol, then P lines per peer. */
static void net_report(struct mg_server *s, struct client *c, __u64 now)
{
	unsigned int top = s->cfg.agg_top, nj, np, i;
	struct mg_netview_entry *e = calloc(2 * (top ? top : 1), sizeof(*e));
	struct mg_netview_stats st;
	struct client fake = { 0 };

	if (!e)
		return;
	mg_netview_settle(c->net, mg_now_ns(CLOCK_MONOTONIC));
	mg_netview_stats(c->net, &st);
	nj = mg_netview_top_jobs(c->net, top, e);
	np = mg_netview_top_peers(c->net, top, e + top);
	mg_client_reply(&fake, "A net %u ts=%llu interval=%llu packets=%llu bytes=%llu jobs=%u peers=%u lost=%llu evicted_jobs=%llu evicted_job_bytes=%llu evicted_peers=%llu evicted_peer_bytes=%llu unkeyed=%llu dropped=%llu skipped=%llu repeated_bytes=%llu seq_evictions=%llu seq_holes_dropped=%llu order_early=%llu order_late=%llu",
			nj + np, (unsigned long long)mg_now_ns(CLOCK_REALTIME),
			(unsigned long long)(now - c->agg_start),
			(unsigned long long)st.packets, (unsigned long long)st.bytes,
			st.jobs.used, st.peers.used,
			(unsigned long long)mg_lost_total(&st.lost),
			(unsigned long long)st.jobs.evictions,
			(unsigned long long)st.jobs.evicted_bytes,
			(unsigned long long)st.peers.evictions,
			(unsigned long long)st.peers.evicted_bytes,
			(unsigned long long)st.unkeyed,
			(unsigned long long)c->agg_dropped,
			(unsigned long long)c->agg_skipped,
			(unsigned long long)st.repeated_bytes,
			(unsigned long long)st.seq_evictions,
			(unsigned long long)st.seq_holes_dropped,
			(unsigned long long)st.order_early,
			(unsigned long long)st.order_late);
	for (i = 0; i < nj + np; i++) {
		const struct mg_netview_entry *x = i < nj ? &e[i] : &e[top + i - nj];
		char proto[16], peer[MG_FLOW_PEER_MAX], local[MG_FLOW_PEER_MAX];
		char cg[MG_CGMAP_NAME_MIN];
		char label[3 * MG_TOTALS_PATH_MAX + 1], words[MG_SLURM_WORDS_MAX];
		struct mg_flow f = { .family = x->family, .dir = MAGNET_SKB_DIR_OUT,
				     .dport = x->port };

		const char *pn = mg_flow_proto_name(x->proto, proto, sizeof(proto));

		if (i < nj) {
			mg_escape_word(label, sizeof(label), x->job ?
				       mg_cgmap_name(s->cgmap, x->job, now, cg, sizeof(cg)) : "-");
			mg_client_reply(&fake, "J %u %s %llu %llu %llu %llu %s%s", x->job, pn,
					(unsigned long long)x->tx_packets,
					(unsigned long long)x->tx_bytes,
					(unsigned long long)x->rx_packets,
					(unsigned long long)x->rx_bytes, label,
					slurm_words(s, x->job, now, words, sizeof(words)));
			continue;
		}
		memcpy(f.daddr, x->addr, sizeof(f.daddr));
		mg_flow_peer(&f, peer, sizeof(peer));
		/* The local end, written as a peer is (the last word: old clients stop before it). */
		memcpy(f.daddr, x->laddr, sizeof(f.daddr));
		f.dport = x->lport;
		mg_client_reply(&fake, "P %u %s %s %llu %llu %llu %llu %s", x->job, pn, peer,
				(unsigned long long)x->tx_packets,
				(unsigned long long)x->tx_bytes,
				(unsigned long long)x->rx_packets,
				(unsigned long long)x->rx_bytes,
				mg_flow_peer(&f, local, sizeof(local)));
	}
	free(e);
	mg_netview_reset(c->net);
	send_report(s, c, &fake.out, st.packets + st.unkeyed, now);
}

void mg_fanout_agg_report(struct mg_server *s, struct client *c, __u64 now)
{
	unsigned int top = s->cfg.agg_top, n, i;
	struct mg_agg_entry *e = calloc(top ? top : 1, sizeof(*e));
	struct mg_agg_stats st;
	__u64 interval = now - c->agg_start;
	struct client fake = { 0 };

	if (!e)
		return;
	if (c->net) {
		free(e);
		net_report(s, c, now);
		return;
	}
	mg_agg_stats(c->agg, &st);
	n = mg_agg_top(c->agg, top, e);
	/* Build the report aside: it goes whole, or not at all. */
	mg_client_reply(&fake, "A %s %u ts=%llu interval=%llu events=%llu bytes=%llu keys=%u lost=%llu evicted=%llu evicted_events=%llu unkeyed=%llu dropped=%llu skipped=%llu",
			mg_proto_agg_key_name(c->agg_key), n,
			(unsigned long long)mg_now_ns(CLOCK_REALTIME),
			(unsigned long long)interval, (unsigned long long)st.events,
			(unsigned long long)st.bytes, st.used,
			(unsigned long long)mg_lost_total(&st.lost),
			(unsigned long long)st.evictions,
			(unsigned long long)st.evicted_events,
			(unsigned long long)st.unkeyed,
			(unsigned long long)c->agg_dropped,
			(unsigned long long)c->agg_skipped);
	for (i = 0; i < n; i++) {
		char value[64], label[3 * MG_TOTALS_PATH_MAX + 1];
		char cg[MG_CGMAP_NAME_MIN], words[MG_SLURM_WORDS_MAX] = "";
		const char *name = e[i].label;

		if (c->agg_key == MG_AGG_COMM &&
		    e[i].key == MG_AGG_COMM_UNKNOWN && !e[i].label[0]) {
			snprintf(value, sizeof(value), "%%00");
			name = "unknown";
		} else if (c->agg_key == MG_AGG_COMM) {
			mg_escape_word(value, sizeof(value), e[i].label);
			name = "";
		} else {
			snprintf(value, sizeof(value), "%llu",
				 (unsigned long long)e[i].key);
		}
		if (c->agg_key == MG_AGG_PROBE) {
			const struct mg_probe *p = mg_probes_find(&s->probes, e[i].key);

			if (!p) {
				mg_fanout_refresh_probes(s, false);
				p = mg_probes_find(&s->probes, e[i].key);
			}
			name = p ? p->name : "";
		} else if (c->agg_key == MG_AGG_CGROUP) {
			name = mg_cgmap_name(s->cgmap, e[i].key, now, cg,
					     sizeof(cg));
		}
		mg_escape_word(label, sizeof(label), name);
		if (c->agg_key == MG_AGG_CGROUP)
			slurm_words(s, (__u32)e[i].key, now, words, sizeof(words));
		mg_client_reply(&fake, "E %s %llu %llu %.1f %s%s", value,
				(unsigned long long)e[i].events,
				(unsigned long long)e[i].bytes,
				mg_agg_rate(e[i].events, interval), label, words);
	}
	free(e);
	mg_agg_reset(c->agg);
	send_report(s, c, &fake.out, st.events, now);
}
