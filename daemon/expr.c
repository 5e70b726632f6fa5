// SPDX-License-Identifier: GPL-2.0
/*
 * Filter expressions: a recursive-descent parser into an array of nodes,
 * and their evaluation. Grammar in docs/protocol.md, Filters.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"
#include "util.h"

enum node_kind { N_TRUE, N_CMP, N_NOT, N_AND, N_OR };

enum field {
	F_PROBE, F_EVENT, F_CPU, F_PID, F_TGID, F_ABSTRACT, F_TS, F_FLAGS,
};

enum op { OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE };

#define NONE	UINT16_MAX

/*
 * 16 bytes a node. AND and OR keep their operands as a sibling list (kid,
 * then next, next...), so a long chain of && is iterated, not recursed:
 * evaluation recurses only as deep as the nesting the parser bounds.
 */
struct node {
	uint8_t kind;
	uint8_t field;
	uint8_t op;
	uint16_t kid;		/* NOT: operand; AND, OR: first operand */
	uint16_t next;		/* next operand of the enclosing AND/OR */
	__u64 value;		/* CMP */
};

struct mg_expr {
	unsigned int n;
	unsigned int root;
	struct node node[];
};

static const char *const field_names[] = {
	[F_PROBE] = "probe", [F_EVENT] = "event", [F_CPU] = "cpu",
	[F_PID] = "pid", [F_TGID] = "tgid", [F_ABSTRACT] = "abstract",
	[F_TS] = "ts", [F_FLAGS] = "flags",
};

enum tok {
	T_END, T_NUM, T_NAME, T_STR, T_LP, T_RP, T_NOT, T_AND, T_OR, T_STAR,
	T_EQ, T_NE, T_LT, T_LE, T_GT, T_GE,
};

struct parser {
	const char *s;
	size_t len;
	size_t pos;		/* next byte to lex */
	enum tok tok;		/* current token */
	size_t tok_pos;
	size_t tok_len;		/* T_STR: the name between the quotes */
	size_t name_pos;	/* T_NAME, T_STR: first byte of the name */
	__u64 num;
	unsigned int depth;
	unsigned int n;
	mg_expr_lookup_fn lookup;
	void *arg;
	struct mg_expr_error *err;
	struct node node[MG_EXPR_MAX_NODES];
};

/* Record the (first) error; the callers unwind by returning -1. */
static int __attribute__((format(printf, 3, 4)))
fail(struct parser *p, size_t col, const char *fmt, ...)
{
	struct mg_expr_error *err = p->err;
	va_list ap;
	int n;

	err->column = col;
	va_start(ap, fmt);
	n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sizeof(err->msg))
		snprintf(err->msg + n, sizeof(err->msg) - n, " at column %zu",
			 col);
	return -1;
}

/*
 * Names are echoed in messages: cut long ones so the column always fits,
 * and show bytes that are not printable ASCII as '?'.
 */
#define ECHO_MAX	48
static const char *echo(char *buf, const char *s, size_t len)
{
	size_t i, n = len > ECHO_MAX ? ECHO_MAX : len;

	for (i = 0; i < n; i++)
		buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	strcpy(buf + n, len > n ? "..." : "");
	return buf;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/* Names may hold dots: the compiler's clones, e.g. foo.isra.0. */
static bool is_name(char c)
{
	return is_alpha(c) || is_digit(c) || c == '.';
}

static int lex_number(struct parser *p)
{
	const char *s = p->s;
	size_t i = p->pos;
	unsigned int base = 10;
	__u64 v = 0;
	int d;

	if (s[i] == '0' && i + 1 < p->len && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
		base = 16;
		i += 2;
		if (i >= p->len || mg_hexval(s[i]) < 0)
			return fail(p, p->pos, "expected a hex digit");
	}
	for (; i < p->len; i++) {
		d = base == 16 ? mg_hexval(s[i]) : (is_digit(s[i]) ? s[i] - '0' : -1);
		if (d < 0)
			break;
		if (v > (UINT64_MAX - d) / base)
			return fail(p, p->pos, "number out of range (64 bits)");
		v = v * base + d;
	}
	/* "12ab" is a typo, not 12 followed by a name. */
	if (i < p->len && is_name(s[i]))
		return fail(p, p->pos, "invalid character in number");
	p->num = v;
	p->tok = T_NUM;
	p->pos = i;
	return 0;
}

static int next(struct parser *p)
{
	const char *s = p->s;
	char c, c2;
	size_t i;

	while (p->pos < p->len && is_space(s[p->pos]))
		p->pos++;
	p->tok_pos = p->pos;
	if (p->pos >= p->len) {
		p->tok = T_END;
		return 0;
	}
	c = s[p->pos];
	c2 = p->pos + 1 < p->len ? s[p->pos + 1] : '\0';
	if (is_digit(c))
		return lex_number(p);
	if (is_alpha(c)) {
		for (i = p->pos; i < p->len && is_name(s[i]); i++)
			;
		p->tok = T_NAME;
		p->name_pos = p->pos;
		p->tok_len = i - p->pos;
		p->pos = i;
		return 0;
	}
	if (c == '"') {
		const char *q = memchr(s + p->pos + 1, '"', p->len - p->pos - 1);

		if (!q)
			return fail(p, p->pos, "unterminated string");
		p->tok = T_STR;
		p->name_pos = p->pos + 1;
		p->tok_len = q - (s + p->name_pos);
		p->pos = q - s + 1;
		return 0;
	}
	p->pos++;
	switch (c) {
	case '(': p->tok = T_LP; return 0;
	case ')': p->tok = T_RP; return 0;
	case '*': p->tok = T_STAR; return 0;
	case '!':
		p->tok = c2 == '=' ? T_NE : T_NOT;
		break;
	case '<':
		p->tok = c2 == '=' ? T_LE : T_LT;
		break;
	case '>':
		p->tok = c2 == '=' ? T_GE : T_GT;
		break;
	case '=':
		if (c2 != '=')
			return fail(p, p->tok_pos, "expected '=='");
		p->tok = T_EQ;
		break;
	case '&':
		if (c2 != '&')
			return fail(p, p->tok_pos, "expected '&&'");
		p->tok = T_AND;
		break;
	case '|':
		if (c2 != '|')
			return fail(p, p->tok_pos, "expected '||'");
		p->tok = T_OR;
		break;
	default:
		if (c >= 0x20 && c < 0x7f)
			return fail(p, p->tok_pos, "unexpected character '%c'", c);
		return fail(p, p->tok_pos, "unexpected byte 0x%02x",
			    (unsigned char)c);
	}
	if (c2 == '=' || c == '&' || c == '|')
		p->pos++;
	return 0;
}

static int new_node(struct parser *p, enum node_kind kind, size_t col)
{
	struct node *nd;

	if (p->n >= MG_EXPR_MAX_NODES)
		return fail(p, col, "filter too long (more than %d nodes)",
			    MG_EXPR_MAX_NODES);
	nd = &p->node[p->n];
	memset(nd, 0, sizeof(*nd));
	nd->kind = kind;
	nd->kid = NONE;
	nd->next = NONE;
	return p->n++;
}

static int enter(struct parser *p)
{
	if (p->depth >= MG_EXPR_MAX_DEPTH)
		return fail(p, p->tok_pos, "filter nested too deeply (more than %d)",
			    MG_EXPR_MAX_DEPTH);
	p->depth++;
	return 0;
}

static int parse_or(struct parser *p);

static int lookup_field(const struct parser *p)
{
	unsigned int f;

	for (f = 0; f < sizeof(field_names) / sizeof(field_names[0]); f++)
		if (strlen(field_names[f]) == p->tok_len &&
		    !memcmp(field_names[f], p->s + p->name_pos, p->tok_len))
			return f;
	return -1;
}

/* field op value */
static int parse_cmp(struct parser *p)
{
	size_t field_pos = p->tok_pos, val_pos;
	int field = lookup_field(p), i;
	char buf[ECHO_MAX + 4];
	unsigned int id;
	enum op op;

	if (field < 0)
		return fail(p, field_pos, "unknown field '%s'",
			    echo(buf, p->s + p->name_pos, p->tok_len));
	if (next(p))
		return -1;
	switch (p->tok) {
	case T_EQ: op = OP_EQ; break;
	case T_NE: op = OP_NE; break;
	case T_LT: op = OP_LT; break;
	case T_LE: op = OP_LE; break;
	case T_GT: op = OP_GT; break;
	case T_GE: op = OP_GE; break;
	default:
		return fail(p, p->tok_pos, "expected a comparison operator");
	}
	if (next(p))
		return -1;
	val_pos = p->tok_pos;
	if (p->tok == T_NUM) {
		/* p->num holds it */
	} else if (field == F_PROBE && (p->tok == T_NAME || p->tok == T_STR)) {
		/* Event ids have no order worth comparing by name. */
		if (op != OP_EQ && op != OP_NE)
			return fail(p, val_pos,
				    "a probe name compares only with == or !=");
		if (!p->lookup ||
		    p->lookup(p->arg, p->s + p->name_pos, p->tok_len, &id) < 0)
			return fail(p, val_pos, "unknown probe '%s'",
				    echo(buf, p->s + p->name_pos, p->tok_len));
		p->num = id;
	} else if (field == F_PROBE) {
		return fail(p, val_pos, "expected a probe name or number");
	} else {
		return fail(p, val_pos, "expected a number");
	}
	i = new_node(p, N_CMP, field_pos);
	if (i < 0)
		return -1;
	/* probe and event are one field, the event id. */
	p->node[i].field = field == F_PROBE ? F_EVENT : field;
	p->node[i].op = op;
	p->node[i].value = p->num;
	if (next(p))
		return -1;
	return i;
}

static int parse_unary(struct parser *p)
{
	size_t pos = p->tok_pos;
	int i, kid;

	switch (p->tok) {
	case T_NOT:
		if (enter(p) || next(p))
			return -1;
		kid = parse_unary(p);
		if (kid < 0)
			return -1;
		i = new_node(p, N_NOT, pos);
		if (i < 0)
			return -1;
		p->node[i].kid = kid;
		p->depth--;
		return i;
	case T_LP:
		if (enter(p) || next(p))
			return -1;
		i = parse_or(p);
		if (i < 0)
			return -1;
		if (p->tok != T_RP)
			return fail(p, p->tok_pos, "expected ')'");
		p->depth--;
		if (next(p))
			return -1;
		return i;
	case T_NAME:
		return parse_cmp(p);
	default:
		return fail(p, pos, "expected a field, '!' or '('");
	}
}

/*
 * One level of a binary operator: operands from sub, joined into a single
 * n-ary node made at the first operator.
 */
static int parse_list(struct parser *p, enum tok tok, enum node_kind kind,
		      int (*sub)(struct parser *))
{
	int first = sub(p), i, last, kid;

	if (first < 0 || p->tok != tok)
		return first;
	i = new_node(p, kind, p->tok_pos);
	if (i < 0)
		return -1;
	p->node[i].kid = first;
	last = first;
	while (p->tok == tok) {
		if (next(p))
			return -1;
		kid = sub(p);
		if (kid < 0)
			return -1;
		/* Operators take nodes too: a list longer than the budget fails
		 * in new_node above or in sub. */
		p->node[last].next = kid;
		last = kid;
	}
	return i;
}

static int parse_and(struct parser *p)
{
	return parse_list(p, T_AND, N_AND, parse_unary);
}

static int parse_or(struct parser *p)
{
	return parse_list(p, T_OR, N_OR, parse_and);
}

static int parse_top(struct parser *p)
{
	int root;

	if (next(p))
		return -1;
	if (p->tok == T_END)
		return new_node(p, N_TRUE, 0);
	if (p->tok == T_STAR) {
		if (next(p))
			return -1;
		if (p->tok != T_END)
			return fail(p, p->tok_pos,
				    "'*' must be the whole filter");
		return new_node(p, N_TRUE, 0);
	}
	root = parse_or(p);
	if (root < 0)
		return -1;
	if (p->tok == T_RP)
		return fail(p, p->tok_pos, "unbalanced ')'");
	if (p->tok != T_END)
		return fail(p, p->tok_pos, "expected '&&', '||' or the end");
	return root;
}

int mg_expr_parse(const char *text, size_t len, mg_expr_lookup_fn lookup,
		  void *arg, struct mg_expr **out, struct mg_expr_error *err)
{
	struct parser *p;
	struct mg_expr *e;
	int root;

	*out = NULL;
	/* 4 KiB of nodes: on the heap, the daemon's threads may have small
	 * stacks. */
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->s = text;
	p->len = len;
	p->lookup = lookup;
	p->arg = arg;
	p->err = err;
	err->column = 0;
	err->msg[0] = '\0';
	root = parse_top(p);
	if (root < 0) {
		free(p);
		return -EINVAL;
	}
	e = malloc(sizeof(*e) + p->n * sizeof(e->node[0]));
	if (!e) {
		free(p);
		return -ENOMEM;
	}
	e->n = p->n;
	e->root = root;
	memcpy(e->node, p->node, p->n * sizeof(e->node[0]));
	free(p);
	*out = e;
	return 0;
}

static __u64 field_value(const struct magnet_record *r, unsigned int field)
{
	switch (field) {
	case F_EVENT: return r->event_id;
	case F_CPU: return r->cpu;
	case F_PID: return r->pid;
	case F_TGID: return r->tgid;
	case F_ABSTRACT: return r->abstract_id;
	case F_TS: return r->timestamp;
	default: return r->flags;
	}
}

static bool eval(const struct mg_expr *e, unsigned int i,
		 const struct magnet_record *r)
{
	const struct node *nd = &e->node[i];
	unsigned int k;
	__u64 v;

	switch (nd->kind) {
	case N_CMP:
		v = field_value(r, nd->field);
		switch (nd->op) {
		case OP_EQ: return v == nd->value;
		case OP_NE: return v != nd->value;
		case OP_LT: return v < nd->value;
		case OP_LE: return v <= nd->value;
		case OP_GT: return v > nd->value;
		default: return v >= nd->value;
		}
	case N_NOT:
		return !eval(e, nd->kid, r);
	case N_AND:
		for (k = nd->kid; k != NONE; k = e->node[k].next)
			if (!eval(e, k, r))
				return false;
		return true;
	case N_OR:
		for (k = nd->kid; k != NONE; k = e->node[k].next)
			if (eval(e, k, r))
				return true;
		return false;
	default:
		return true;
	}
}

bool mg_expr_match(const struct mg_expr *e, const struct magnet_record *r)
{
	return !e || eval(e, e->root, r);
}

bool mg_expr_all(const struct mg_expr *e)
{
	return !e || e->node[e->root].kind == N_TRUE;
}

unsigned int mg_expr_nodes(const struct mg_expr *e)
{
	return e->n;
}

void mg_expr_free(struct mg_expr *e)
{
	free(e);
}
