// SPDX-License-Identifier: GPL-2.0
/*
 * bpf-ring: the bench's libbpf peer (bench/vm-bench.sh), static. Loads
 * bpf-ring.bpf.o, attaches its kprobe or fentry program to SYMBOL, and
 * drains the BPF ring buffer with ring_buffer__poll() into FILE until
 * SIGINT or SIGTERM; then drains what is left and prints on stderr
 *
 *   bpf_hits=H bpf_lost=L bpf_drained=R bpf_drained_bytes=B
 *
 * (hits and lost: the program's per-CPU counts, summed; lost = failed
 * reserves, the ring full). "ready" on stderr once attached.
 *
 *   bpf-ring [-b OBJ] [-a NARGS] [-c LEN] [-s BYTES] [-w BYTES] [-o FILE]
 *            kprobe:SYMBOL|fentry:SYMBOL
 *
 * -a the args recorded (0 or 3), -c bytes captured from argument 1, -s the
 * ring's size (a power of 2: the bench gives the others' ring per CPU x
 * CPUs, as the BPF ring buffer is one for all CPUs), -o the trace (default
 * /dev/null), -w wake the consumer only once that many bytes wait (default
 * 0: the ring's own policy, a wake-up whenever the consumer has caught up;
 * it polls every 100 ms either way), -b the object (default:
 * bpf-ring.bpf.o beside this program).
 * Each record is written as the program stored it: magnet's record layout.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

struct cfg {
	unsigned int nargs;
	unsigned int cap_len;
	unsigned int wakeup;
};

static volatile sig_atomic_t stop;
static unsigned long long drained, drained_bytes;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int on_record(void *ctx, void *data, size_t len)
{
	FILE *out = ctx;

	if (fwrite(data, len, 1, out) != 1)
		return -errno;
	drained++;
	drained_bytes += len;
	return 0;
}

static void usage(void)
{
	static const char use[] =
		"[-b OBJ] [-a NARGS] [-c LEN] [-s BYTES] [-w BYTES] [-o FILE] kprobe:SYMBOL|fentry:SYMBOL";

	fprintf(stderr, "usage: bpf-ring %s\n", use);
	exit(2);
}

/* bpf-ring.bpf.o beside /proc/self/exe */
static char *default_obj(void)
{
	static char path[4096];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
	char *slash;

	if (n <= 0)
		return "bpf-ring.bpf.o";
	path[n] = '\0';
	slash = strrchr(path, '/');
	strcpy(slash ? slash + 1 : path, "bpf-ring.bpf.o");
	return path;
}

static unsigned long long sum_count(int fd, unsigned int key, int ncpus)
{
	unsigned long long v[ncpus], s = 0;
	int i;

	if (bpf_map_lookup_elem(fd, &key, v))
		return 0;
	for (i = 0; i < ncpus; i++)
		s += v[i];
	return s;
}

int main(int argc, char **argv)
{
	const char *obj_path = NULL, *out_path = "/dev/null", *probe, *sym;
	unsigned long ring_size = 2 << 20;
	struct cfg want = { 0, 0, 0 };
	struct bpf_program *prog, *p;
	struct ring_buffer *rb = NULL;
	struct bpf_link *link = NULL;
	struct bpf_object *obj;
	struct bpf_map *rodata;
	int opt, ncpus, err = 1, fentry;
	FILE *out;

	while ((opt = getopt(argc, argv, "b:a:c:s:o:w:")) != -1) {
		switch (opt) {
		case 'b':
			obj_path = optarg;
			break;
		case 'a':
			want.nargs = strtoul(optarg, NULL, 0);
			break;
		case 'c':
			want.cap_len = strtoul(optarg, NULL, 0);
			break;
		case 's':
			ring_size = strtoul(optarg, NULL, 0);
			break;
		case 'o':
			out_path = optarg;
			break;
		case 'w':
			want.wakeup = strtoul(optarg, NULL, 0);
			break;
		default:
			usage();
		}
	}
	if (optind != argc - 1 || (want.nargs != 0 && want.nargs != 3) ||
	    (want.cap_len && !want.nargs) || want.cap_len > 4096)
		usage();
	probe = argv[optind];
	if (!strncmp(probe, "kprobe:", 7))
		fentry = 0;
	else if (!strncmp(probe, "fentry:", 7))
		fentry = 1;
	else
		usage();
	sym = probe + 7;
	if (!obj_path)
		obj_path = default_obj();
	ncpus = libbpf_num_possible_cpus();
	out = fopen(out_path, "w");
	if (!out) {
		perror(out_path);
		return 1;
	}
	setvbuf(out, NULL, _IOFBF, 1 << 20);

	obj = bpf_object__open_file(obj_path, NULL);
	if (!obj) {
		fprintf(stderr, "bpf-ring: %s: %s\n", obj_path, strerror(errno));
		goto fail_open;
	}
	rodata = bpf_object__find_map_by_name(obj, ".rodata");
	/* the object's only read-only data: its struct cfg */
	if (!rodata || bpf_map__set_initial_value(rodata, &want, sizeof(want))) {
		fprintf(stderr, "bpf-ring: %s: no .rodata config\n", obj_path);
		goto fail_load;
	}
	if (bpf_map__set_max_entries(bpf_object__find_map_by_name(obj, "ring"), ring_size))
		goto fail_load;
	prog = bpf_object__find_program_by_name(obj, !fentry ? "kp" : want.nargs ? "fe3" : "fe0");
	bpf_object__for_each_program(p, obj)
		bpf_program__set_autoload(p, p == prog);
	if (fentry && bpf_program__set_attach_target(prog, 0, sym))
		goto fail_load;
	if (bpf_object__load(obj)) {
		fprintf(stderr, "bpf-ring: cannot load %s for %s\n", obj_path, probe);
		goto fail_load;
	}
	link = fentry ? bpf_program__attach(prog) : bpf_program__attach_kprobe(prog, false, sym);
	if (!link) {
		fprintf(stderr, "bpf-ring: cannot attach to %s: %s\n", probe, strerror(errno));
		goto fail_load;
	}
	rb = ring_buffer__new(bpf_map__fd(bpf_object__find_map_by_name(obj, "ring")),
			      on_record, out, NULL);
	if (!rb)
		goto fail_attach;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	fprintf(stderr, "ready\n");
	while (!stop) {
		int n = ring_buffer__poll(rb, 100);

		if (n < 0 && n != -EINTR) {
			fprintf(stderr, "bpf-ring: ring_buffer__poll: %s\n", strerror(-n));
			goto fail_poll;
		}
	}
	bpf_link__destroy(link);	/* no more hits, then what is left */
	link = NULL;
	if (ring_buffer__consume(rb) < 0 || fflush(out)) {
		fprintf(stderr, "bpf-ring: writing %s failed\n", out_path);
		goto fail_poll;
	}
	fprintf(stderr, "bpf_hits=%llu bpf_lost=%llu bpf_drained=%llu bpf_drained_bytes=%llu\n",
		sum_count(bpf_map__fd(bpf_object__find_map_by_name(obj, "counts")), 0, ncpus),
		sum_count(bpf_map__fd(bpf_object__find_map_by_name(obj, "counts")), 1, ncpus),
		drained, drained_bytes);
	err = 0;
fail_poll:
	ring_buffer__free(rb);
fail_attach:
	bpf_link__destroy(link);
fail_load:
	bpf_object__close(obj);
fail_open:
	fclose(out);
	return err;
}
