// SPDX-License-Identifier: GPL-2.0
/* 5.13: BTF_KIND_FLOAT. */
#include <linux/btf.h>
int mg_probe = BTF_KIND_FLOAT;
