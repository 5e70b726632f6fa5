// SPDX-License-Identifier: GPL-2.0
/* The protocol lands in the next commit; until then, no reply. */
#include "supermon.h"

void mg_supermon_client_init(struct mg_supermon_client *c)
{
	c->mask = MG_SM_ALL;
}

int mg_supermon_handle(FILE *out, const char *line, size_t len,
		       struct mg_supermon_client *c,
		       const struct mg_totals_view *v)
{
	return 0;
}

void mg_supermon_too_long(FILE *out, size_t max)
{
}
