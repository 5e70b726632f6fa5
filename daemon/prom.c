// SPDX-License-Identifier: GPL-2.0
/* The renderer lands in the next commit; until then, no page. */
#include <errno.h>

#include "prom.h"

int mg_prom_render(FILE *out, const struct mg_totals_view *v)
{
	return -ENOSYS;
}

int mg_prom_respond(FILE *out, const char *line, const struct mg_totals_view *v)
{
	return -ENOSYS;
}
