// SPDX-License-Identifier: GPL-2.0
/* 6.2: struct class's devnode() takes a const struct device. */
#include <linux/device.h>

static char *mg_probe_devnode(const struct device *dev, umode_t *mode)
{
	return NULL;
}

struct class mg_probe_class = {
	.devnode = mg_probe_devnode,
};
