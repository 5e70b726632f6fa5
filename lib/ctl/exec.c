// SPDX-License-Identifier: GPL-2.0
/*
 * magnet-ctl: control magnet.ko over generic netlink, in the manner of
 * wireguard-tools and iproute2.
 *
 *   magnet-ctl [-j | -m] OBJECT COMMAND [ARGUMENTS]
 *
 * Every fixed word (object, command, keyword, value such as kprobe or
 * overwrite) may be abbreviated to a unique prefix: "magnet-ctl pr l" is
 * "magnet-ctl probe list". The grammar, the output formats and the exit
 * status are in docs/magnet-ctl.md.
 *
 * This file is the command line: options, the object and command tables,
 * prefix matching, usage, and ctl_exec(), which runs one command line. It
 * lives in libmagnetctl.a (lib/ctl/) so that magnetd can run the same
 * commands in-process; tools/ctl/main.c only hands the program's arguments
 * to ctl_exec().
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <magnet/version.h>

#include "ctl.h"

FILE *ctl_errf;
FILE *ctl_outf;

static const struct ctl_object *const objects[] = {
	&ctl_probe_object,
	&ctl_filter_object,
	&ctl_sample_object,
	&ctl_buffer_object,
	&ctl_stats_object,
	&ctl_monitor_object,
	NULL,
};

static int run_help(struct ctl_nl *nl, struct ctl_req *r);
static int run_version(struct ctl_nl *nl, struct ctl_req *r);

static const struct ctl_cmd help_cmd = {
	.name = "help",
	.usage = "",
	.run = run_help,
};

static const struct ctl_cmd version_cmd = {
	.name = "version",
	.usage = "",
	.run = run_version,
};

static void print_usage_line(FILE *f, const struct ctl_object *obj,
			     const struct ctl_cmd *c, bool first)
{
	fprintf(f, "%s " PROG " %s%s%s%s%s\n", first ? "usage:" : "      ",
		obj->name, c->name ? " " : "", c->name ? c->name : "",
		*c->usage ? " " : "", c->usage);
}

static void print_object_usage(FILE *f, const struct ctl_object *obj)
{
	const struct ctl_cmd *c;

	for (c = obj->cmds; c->usage; c++)
		print_usage_line(f, obj, c, c == obj->cmds);
	fprintf(f, "       " PROG " %s help\n", obj->name);
}

static void print_global_usage(FILE *f)
{
	const struct ctl_object *const *o;

	fprintf(f,
"usage: " PROG " [-j | -m] OBJECT COMMAND [ARGUMENTS]\n"
"       " PROG " help | OBJECT help\n"
"objects:\n");
	for (o = objects; *o; o++)
		fprintf(f, "  %-8s %s\n", (*o)->name, (*o)->summary);
	fprintf(f,
"options (before OBJECT, or after the command's arguments):\n"
"  -j, --json      JSON output\n"
"  -m, --machine   tab-separated output, one record per line\n"
"  -h, --help      this help;  -V, --version  the version\n"
"Words may be abbreviated to a unique prefix (" PROG " pr l = probe list).\n");
}

void ctl_help(const struct ctl_object *obj)
{
	FILE *f = ctl_outf;

	if (!obj) {
		print_global_usage(f);
		fprintf(f, "\n");
		for (const struct ctl_object *const *o = objects; *o; o++)
			print_object_usage(f, *o);
		fprintf(f, "\nExit status: 0 success, 1 usage error, 2 the kernel refused or failed.\n"
			   "See docs/magnet-ctl.md.\n");
		return;
	}
	print_object_usage(f, obj);
	if (obj->notes)
		fprintf(f, "\n%s", obj->notes);
}

static int run_help(struct ctl_nl *nl, struct ctl_req *r)
{
	const struct ctl_object *const *o;
	const struct ctl_object *obj = NULL;

	for (o = objects; *o && r->help_object; o++)
		if (!strcmp((*o)->name, r->help_object))
			obj = *o;
	ctl_help(obj);
	return CTL_EXIT_OK;
}

static int run_version(struct ctl_nl *nl, struct ctl_req *r)
{
	fprintf(ctl_outf, PROG " %s (genl family \"%s\" version %d)\n",
		MAGNET_RELEASE, MAGNET_GENL_NAME, MAGNET_GENL_VERSION);
	return CTL_EXIT_OK;
}

int ctl_usage_error(struct ctl_args *a, const char *fmt, ...)
{
	FILE *f = ctl_errf;
	va_list ap;

	/* Help was asked for: what follows -h, or is missing, is no error. */
	if (a->instead)
		return -1;
	fputs(PROG ": ", f);
	if (a->obj) {
		fputs(a->obj->name, f);
		if (a->cmd && a->cmd->name)
			fprintf(f, " %s", a->cmd->name);
		fputs(": ", f);
	}
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	if (a->cmd && a->obj)	/* a->cmd is only ever set with its object */
		print_usage_line(f, a->obj, a->cmd, true);
	else if (a->obj)
		print_object_usage(f, a->obj);
	else
		print_global_usage(f);
	return -1;
}

/* The command -h or -V stands for, or NULL. */
static const struct ctl_cmd *help_option(const char *w)
{
	if (!strcmp(w, "-h") || !strcmp(w, "--help"))
		return &help_cmd;
	if (!strcmp(w, "-V") || !strcmp(w, "--version"))
		return &version_cmd;
	return NULL;
}

bool ctl_more(struct ctl_args *a)
{
	return a->i < a->argc;
}

/* -h or -V where a word is due: no word, the help (or version) instead. */
static bool help_word(struct ctl_args *a, const char *w)
{
	const struct ctl_cmd *c = help_option(w);

	if (c && !a->instead)
		a->instead = c;
	return c;
}

const char *ctl_next(struct ctl_args *a, const char *what)
{
	if (a->i >= a->argc) {
		ctl_usage_error(a, "missing %s", what);
		return NULL;
	}
	if (help_word(a, a->argv[a->i])) {
		a->i++;
		return NULL;
	}
	return a->argv[a->i++];
}

int ctl_next_u64(struct ctl_args *a, const char *what, const char *key,
		 __u64 max, __u64 *v)
{
	const char *w = ctl_next(a, what);
	int ret;

	if (!w)
		return -1;
	ret = ctl_parse_u64(w, max, v);
	if (ret == -ERANGE)
		return ctl_usage_error(a, "%s %s: out of range (0..%llu)",
				       key, w, (unsigned long long)max);
	if (ret)
		return ctl_usage_error(a, "%s %s: not a number", key, w);
	return 0;
}

bool ctl_output_option(struct ctl_args *a)
{
	const char *w = a->argv[a->i];

	if (!strcmp(w, "-j") || !strcmp(w, "--json")) {
		a->req->mode = PR_JSON;
	} else if (!strcmp(w, "-m") || !strcmp(w, "--machine")) {
		a->req->mode = PR_MACHINE;
	} else if (!help_word(a, w)) {
		return false;
	}
	a->i++;
	return true;
}

int ctl_parse_end(struct ctl_args *a)
{
	while (ctl_more(a)) {
		if (ctl_output_option(a))
			continue;
		return ctl_usage_error(a, "unexpected '%s'", a->argv[a->i]);
	}
	return 0;
}

int ctl_keyword(struct ctl_args *a, const char *word,
		const char *const *words, const char *what)
{
	char cands[256];
	int k;

	if (help_word(a, word))
		return -1;
	k = ctl_match(word, words, cands, sizeof(cands));

	if (k == -EAMBIGUOUS)
		return ctl_usage_error(a, "ambiguous %s '%s': %s", what, word,
				       cands);
	if (k < 0) {
		char all[256];
		size_t used = 0;
		int i;

		all[0] = '\0';
		for (i = 0; words[i] && used < sizeof(all); i++) {
			int w = snprintf(all + used, sizeof(all) - used, "%s%s",
					 i ? ", " : "", words[i]);

			used += w > 0 ? (size_t)w : 0;
		}
		return ctl_usage_error(a, "unknown %s '%s' (expected %s)",
				       what, word, all);
	}
	return k;
}

int ctl_parse_probe_ref(struct ctl_args *a, const char *what)
{
	struct ctl_req *r = a->req;
	const char *w = ctl_next(a, what);
	__u64 id;

	if (!w)
		return -1;
	if (ctl_is_number(w)) {
		if (ctl_parse_u64(w, MAGNET_EVENT_MAX, &id) ||
		    id < MAGNET_EVENT_FIRST_DYNAMIC)
			return ctl_usage_error(a, "probe id %s: out of range (%u..%u)",
					       w, MAGNET_EVENT_FIRST_DYNAMIC,
					       MAGNET_EVENT_MAX);
		r->id = id;
		r->probe_attrs |= CTL_BIT(MAGNET_PROBE_A_ID);
		return 0;
	}
	if (!*w)
		return ctl_usage_error(a, "empty probe name");
	r->name = w;
	r->probe_attrs |= CTL_BIT(MAGNET_PROBE_A_NAME);
	return 0;
}

/* The words of a table: objects or an object's commands, plus "help". */
static size_t object_words(const char **w, size_t max)
{
	size_t n = 0;

	for (const struct ctl_object *const *o = objects; *o && n + 3 < max; o++)
		w[n++] = (*o)->name;
	w[n++] = "help";
	w[n++] = "version";
	w[n] = NULL;
	return n;
}

static size_t command_words(const struct ctl_object *obj, const char **w,
			    size_t max)
{
	const struct ctl_cmd *c;
	size_t n = 0;

	for (c = obj->cmds; c->usage && n + 2 < max; c++)
		w[n++] = c->name;
	w[n++] = "help";
	w[n] = NULL;
	return n;
}

static const struct ctl_object *find_object(const char *name)
{
	for (const struct ctl_object *const *o = objects; *o; o++)
		if (!strcmp((*o)->name, name))
			return *o;
	return NULL;
}

static int parse_line(struct ctl_args *a)
{
	struct ctl_req *r = a->req;
	const struct ctl_object *obj;
	const struct ctl_cmd *cmd = NULL;
	const char *words[32];
	const char *w;
	size_t n;
	int k;

	/* Global options, before the object. */
	while (ctl_more(a) && a->argv[a->i][0] == '-') {
		w = a->argv[a->i];
		if (help_option(w)) {
			r->cmd = help_option(w);
			return 0;
		}
		if (ctl_output_option(a))
			continue;
		if (!strcmp(w, "--")) {
			a->i++;
			break;
		}
		return ctl_usage_error(a, "unknown option '%s'", w);
	}
	if (!ctl_more(a))
		return ctl_usage_error(a, "missing OBJECT");

	w = a->argv[a->i++];
	n = object_words(words, 32);
	k = ctl_keyword(a, w, words, "object");
	if (k < 0)
		return -1;
	if (!strcmp(words[k], "help")) {
		r->cmd = &help_cmd;
		if (ctl_more(a)) {
			w = a->argv[a->i++];
			object_words(words, 32);
			words[n - 2] = NULL;	/* objects only */
			k = ctl_keyword(a, w, words, "object");
			if (k < 0)
				return -1;
			r->help_object = words[k];
		}
		return ctl_parse_end(a);
	}
	if (!strcmp(words[k], "version")) {
		r->cmd = &version_cmd;
		return ctl_parse_end(a);
	}
	obj = find_object(words[k]);
	a->obj = obj;

	if (!obj->cmds[0].name) {
		/* An object that is its own command: stats, monitor. */
		if (ctl_more(a) && a->argv[a->i][0] != '-' &&
		    ctl_match(a->argv[a->i], (const char *const[]){ "help", NULL },
			      NULL, 0) == 0) {
			a->i++;
			r->cmd = &help_cmd;
			r->help_object = obj->name;
			return ctl_parse_end(a);
		}
		cmd = &obj->cmds[0];
	} else if (!ctl_more(a) ||
		   (obj->dflt && a->argv[a->i][0] == '-')) {
		if (!obj->dflt)
			return ctl_usage_error(a, "missing command");
		for (cmd = obj->cmds; strcmp(cmd->name, obj->dflt); cmd++)
			;
	} else {
		w = a->argv[a->i++];
		command_words(obj, words, 32);
		k = ctl_keyword(a, w, words, "command");
		if (k < 0)
			return -1;
		if (!strcmp(words[k], "help")) {
			r->cmd = &help_cmd;
			r->help_object = obj->name;
			return ctl_parse_end(a);
		}
		cmd = &obj->cmds[k];
	}
	a->cmd = cmd;
	r->cmd = cmd;
	return cmd->parse(a);
}

/*
 * A line with -h (or -V) among its options, or where a word is due, is
 * the object's help (or the version), whatever else it says: usage
 * errors after it were not printed.
 */
static int parse(struct ctl_args *a)
{
	int ret = parse_line(a);

	if (!a->instead)
		return ret;
	a->req->cmd = a->instead;
	a->req->help_object = a->instead == &help_cmd && a->obj ?
			      a->obj->name : NULL;
	return 0;
}

/* The words of argv from index first on. */
static int parse_words(int argc, char **argv, int first, struct ctl_req *r)
{
	struct ctl_args a = {
		.argc = argc,
		.argv = argv,
		.i = first,
		.req = r,
	};

	memset(r, 0, sizeof(*r));
	r->count = -1;
	r->mode = PR_TEXT;
	return parse(&a) ? CTL_EXIT_USAGE : 0;
}

int ctl_parse(int argc, char **argv, struct ctl_req *r)
{
	if (!ctl_errf)
		ctl_errf = stderr;
	if (!ctl_outf)
		ctl_outf = stdout;
	return parse_words(argc, argv, 1, r);
}

int ctl_exec(int argc, char **argv, FILE *out, FILE *err)
{
	FILE *saved_out = ctl_outf, *saved_err = ctl_errf;
	struct ctl_nl *nl = NULL;
	struct ctl_req r;
	int ret;

	/*
	 * Every printer writes to ctl_outf/ctl_errf: point them at this call's
	 * streams, and give the caller's back on every way out.
	 */
	ctl_outf = out ? out : stdout;
	ctl_errf = err ? err : stderr;
	ret = parse_words(argc < 0 ? 0 : argc, argv, 0, &r);
	if (ret)
		goto out;
	pr_start(r.mode);
	if (r.cmd != &help_cmd && r.cmd != &version_cmd && !r.offline) {
		nl = ctl_nl_open();
		if (!nl) {
			ret = CTL_EXIT_FAIL;
			goto out;
		}
	}
	ret = r.cmd->run(nl, &r);
	pr_end();
	ctl_nl_close(nl);
	if (fflush(ctl_outf) && !ret) {
		fprintf(ctl_errf, PROG ": writing output: %s\n", strerror(errno));
		ret = CTL_EXIT_FAIL;
	}
out:
	/* A daemon's streams may be fully buffered: the messages go out now. */
	fflush(ctl_outf);
	fflush(ctl_errf);
	ctl_outf = saved_out;
	ctl_errf = saved_err;
	return ret;
}
