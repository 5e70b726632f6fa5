/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fixed-memory aggregation for AGG (docs/protocol.md): one table of
 * counters keyed by a u64, allocated once by mg_agg_create and never
 * again. Keys are the record's event id (probe), pid or tgid, or what the
 * caller derives for comm (mg_agg_comm_key of the name, kept as the
 * entry's label) and cgroup (the cgroup id).
 *
 * The table holds at most `capacity` entries in 2 * capacity slots (open
 * addressing, linear probing, load factor at most 1/2). A new key when
 * `capacity` entries are in use evicts one: of the MG_AGG_EVICT_SAMPLE
 * entries met first from the new key's home slot, the one with the
 * fewest events, ties to the one least recently counted (a sampled LFU,
 * as Redis approximates it). Exact heavy-hitter tracking needs memory in
 * the number of keys; a sample bounds the cost of an insertion and still
 * never evicts an entry that has more events than all but
 * min(MG_AGG_EVICT_SAMPLE, capacity) - 2 others: the busiest keys, what a
 * report shows, stay exact. The recency tie-break lets a key that recurs outlive the
 * one-event keys that came before it. An evicted entry's counts are lost
 * (they are not inherited, so every count shown is exact since the
 * entry's insertion), but never silently: evictions and the events they
 * took are counted, and events == sum of entries' events + evicted_events.
 */
#ifndef MAGNET_DAEMON_AGG_H
#define MAGNET_DAEMON_AGG_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/magnet.h>

#include "proto.h"

/* A label: TASK_COMM_LEN, its NUL included. */
#define MG_AGG_LABEL_LEN	16
/* Entries a victim is chosen among (all of them in a smaller table). */
#define MG_AGG_EVICT_SAMPLE	32
#define MG_AGG_MAX_CAPACITY	(1U << 24)

struct mg_agg;

struct mg_agg_entry {
	__u64 key;
	__u64 events;		/* adds since the entry's insertion, >= 1 */
	__u64 bytes;		/* sum of their sizes (record sizes) */
	__u64 first_ts;		/* smallest and largest timestamp added */
	__u64 last_ts;
	char label[MG_AGG_LABEL_LEN];	/* NUL-terminated, "" for none */
};

/* Since creation or the last mg_agg_reset. */
struct mg_agg_stats {
	__u64 events;		/* adds (keyed records) */
	__u64 bytes;
	__u64 evictions;	/* entries evicted to make room */
	__u64 evicted_events;	/* events those entries had counted */
	__u64 unkeyed;		/* records mg_agg_add_record could not key */
	__u64 lost_records;	/* LOST records folded in */
	struct magnet_lost lost;	/* records they report lost, by reason */
	unsigned int used;	/* entries in use */
	unsigned int capacity;
};

enum mg_agg_result {
	MG_AGG_HIT,		/* an existing entry counted it */
	MG_AGG_NEW,		/* a new entry, in a free slot */
	MG_AGG_EVICTED,		/* a new entry, in place of an evicted one */
	MG_AGG_LOST,		/* a LOST record, folded into stats.lost */
};

/*
 * capacity: entries, a power of two from 1 to MG_AGG_MAX_CAPACITY. 0 with
 * *out set (free it with mg_agg_free), -EINVAL or -ENOMEM.
 */
int mg_agg_create(unsigned int capacity, struct mg_agg **out);
void mg_agg_free(struct mg_agg *a);

/*
 * Count one event of bytes at ts for key. label (NULL: none) is copied, up
 * to MG_AGG_LABEL_LEN - 1 bytes, into a new entry, and replaces an
 * existing entry's (the latest comm of a pid wins). Never allocates.
 */
enum mg_agg_result mg_agg_add(struct mg_agg *a, __u64 key, const char *label,
			      __u64 bytes, __u64 ts);

/*
 * The key of comm's records whose thread's name is not known (no TASK
 * record named it): never a guess, counted apart. mg_agg_comm_key() of
 * any name is another key (a 64-bit hash of it).
 */
#define MG_AGG_COMM_UNKNOWN		0ULL
/* A key callback's return for comm: the record goes to that key. */
#define MG_AGG_COMM_UNKNOWN_NAME	1

/*
 * For a record's comm or cgroup key: fill *key and label
 * (MG_AGG_LABEL_LEN bytes, zeroed, left "" for none); 0, for comm
 * MG_AGG_COMM_UNKNOWN_NAME, or a negative errno to skip the record. *key
 * comes preset for probe, pid and tgid (a callback may then add only a
 * label, e.g. a pid's comm) and is ignored for comm, whose key is
 * mg_agg_comm_key(label).
 */
typedef int (*mg_agg_key_fn)(void *arg, enum mg_agg_key kind,
			     const struct magnet_record *r, __u64 *key,
			     char *label);

/*
 * Count record r by kind: event_id, pid, tgid, or the callback's key (fn
 * may be NULL for probe, pid and tgid), with r->size bytes at
 * r->timestamp. A LOST record is folded into the stats, not keyed:
 * MG_AGG_LOST. A record that cannot be keyed (no callback for comm or
 * cgroup, a bad kind, the callback's error) counts in stats.unkeyed and
 * returns the negative errno (-EINVAL without a callback).
 */
int mg_agg_add_record(struct mg_agg *a, enum mg_agg_key kind,
		      const struct magnet_record *r, mg_agg_key_fn fn,
		      void *arg);

/* A comm's key: FNV-1a 64 of its bytes up to a NUL, at most 15. */
__u64 mg_agg_comm_key(const char *comm);

/* The entry for key, or NULL; valid until the next add or reset. */
const struct mg_agg_entry *mg_agg_find(const struct mg_agg *a, __u64 key);

/*
 * The n entries with the most events, most first, ties by increasing key,
 * copied to out. Returns how many (n, or fewer entries in use).
 */
unsigned int mg_agg_top(const struct mg_agg *a, unsigned int n,
			struct mg_agg_entry *out);

void mg_agg_stats(const struct mg_agg *a, struct mg_agg_stats *st);

/* Empty the table and zero the stats: the next interval (EVERY). */
void mg_agg_reset(struct mg_agg *a);

/* count per second over interval_ns (0 for an interval of 0). */
double mg_agg_rate(__u64 count, __u64 interval_ns);

#endif /* MAGNET_DAEMON_AGG_H */
