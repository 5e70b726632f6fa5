// SPDX-License-Identifier: GPL-2.0
/* 5.11: get_kretprobe(), as kretprobe_instance lost its rp. */
#include <linux/kprobes.h>
struct kretprobe *mg_probe(struct kretprobe_instance *ri) { return get_kretprobe(ri); }
