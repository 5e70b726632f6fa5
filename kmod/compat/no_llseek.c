// SPDX-License-Identifier: GPL-2.0
/* Before 6.12: no_llseek() (6.12 removed it: a NULL llseek is no seeking). */
#include <linux/fs.h>
const struct file_operations mg_probe = { .llseek = no_llseek };
