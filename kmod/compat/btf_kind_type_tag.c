// SPDX-License-Identifier: GPL-2.0
/* 5.17: BTF_KIND_TYPE_TAG. */
#include <linux/btf.h>
int mg_probe = BTF_KIND_TYPE_TAG;
