/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The probe table: text of magnet/probes, one line per probe,
 * "id\ttype\ttarget\tnargs\thits\tmissed[\tCAPTURE[\tNAME]]", CAPTURE
 * "LEN@ARG" for probes that capture memory, "-" for the others. Gives
 * names to event ids. type is kprobe, kretprobe, fentry or custom (an
 * event a kernel module registered; target is the event's name); the type
 * is kept as text, so a table with types added later still names its
 * events. NAME is the probe's own (unique; what filters and tools name it
 * by): a table without it (older modules) gets the default names those
 * modules gave, SYMBOL[+OFFSET] and SYMBOL%return.
 */
#ifndef MAGNET_LIB_PROBES_H
#define MAGNET_LIB_PROBES_H

#include <stddef.h>
#include <linux/types.h>
#include <linux/magnet.h>

struct mg_probe {
	unsigned int id;
	unsigned int nargs;
	char *type;		/* "kprobe", "kretprobe", "fentry", "tracepoint", "custom" */
	char *target;		/* function name, e.g. "tcp_sendmsg", and any
				 * "+OFFSET"; for custom, the event's name */
	char *name;		/* the probe's, unique: "tcp_sendmsg%return" */
	__u64 hits;		/* as of when the table was read */
	__u64 missed;
	unsigned int capture_len;	/* bytes captured per hit; 0: none */
	unsigned int capture_arg;	/* from the address in this argument */
};

/* Probes a table can hold: one per event id, and ids are 16 bits. */
#define MG_PROBES_MAX	(MAGNET_EVENT_MAX + 1)

struct mg_probe_table {
	size_t n;
	struct mg_probe *v;	/* in the text's order */
	/*
	 * Private: at[id] is 1 + the place of id in v, 0 when v lacks it
	 * (MG_PROBES_MAX entries, or NULL for an empty table), so a lookup
	 * per record costs the same whatever the table's size: a trace's
	 * header is anyone's to write. cap: v's room, for merges.
	 */
	__u32 *at;
	size_t cap;
};

/*
 * Parse the table text (need not be NUL-terminated). Lines that do not
 * start with a digit (a header, a blank line) are skipped; so are lines
 * that do not parse, since a name table is best effort: records decode
 * without it; a capture column that does not parse (LEN 1..4096, ARG
 * 0..5) reads as no capture. An id keeps its first line's name: a later
 * line naming it again is skipped. 0, -ENOMEM, or -E2BIG when the text
 * holds more than MG_PROBES_MAX lines starting with a digit (more probes
 * than there are ids: no table the module writes).
 */
int mg_probes_parse(struct mg_probe_table *t, const char *text, size_t len);
void mg_probes_free(struct mg_probe_table *t);
/* Free one probe's strings (a probe not in a table, or taken out of one). */
void mg_probe_clear(struct mg_probe *p);

/*
 * Index a table whose v and n were filled in by hand (a parser's): an id
 * that v holds twice is found at its first place. 0, -ENOMEM, or -EINVAL
 * for an id above MAGNET_EVENT_MAX.
 */
int mg_probes_index(struct mg_probe_table *t);

/*
 * The lines of text whose id t lacks, parsed as above, at the end of t (a
 * table from mg_probes_parse, or zeroed): costs the text, not t. 0, or an
 * error as above, with t holding the lines before it.
 */
int mg_probes_parse_more(struct mg_probe_table *t, const char *text,
			 size_t len);

/* NULL if id is not in the table (t may be NULL). O(1). */
const struct mg_probe *mg_probes_find(const struct mg_probe_table *t,
				      unsigned int id);

/* The probe named name (len bytes, need not be NUL-terminated), or NULL. */
const struct mg_probe *mg_probes_find_name(const struct mg_probe_table *t,
					   const char *name, size_t len);

/* Event name to print for an id: the probe's name, "lost", or "unknown". */
const char *mg_event_name(const struct mg_probe_table *t, unsigned int id);

#endif /* MAGNET_LIB_PROBES_H */
