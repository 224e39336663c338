/* idpool.c - id pool: a stack of free ids plus generation and in-use arrays. */
#include "stack/idpool.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

int ss_idpool_init(struct ss_idpool *p, uint32_t n)
{
	size_t cells = n ? n : 1;       /* calloc(0) may return NULL */

	p->free_stack = malloc(cells * sizeof(*p->free_stack));
	p->gen = calloc(cells, sizeof(*p->gen));
	p->used = calloc(cells, sizeof(*p->used));
	if (!p->free_stack || !p->gen || !p->used) {
		free(p->free_stack);
		free(p->gen);
		free(p->used);
		p->free_stack = p->gen = NULL;
		p->used = NULL;
		p->n = p->n_free = 0;
		return -ENOMEM;
	}
	/* Lowest id on top of the stack, so a fresh pool allocates 0, 1, ... */
	for (uint32_t i = 0; i < n; i++)
		p->free_stack[i] = n - 1 - i;
	p->n = n;
	p->n_free = n;
	return 0;
}

void ss_idpool_fini(struct ss_idpool *p)
{
	free(p->free_stack);
	free(p->gen);
	free(p->used);
	p->free_stack = p->gen = NULL;
	p->used = NULL;
	p->n = p->n_free = 0;
}

int64_t ss_idpool_alloc(struct ss_idpool *p)
{
	uint32_t id;

	if (p->n_free == 0)
		return -1;
	id = p->free_stack[--p->n_free];
	p->used[id] = 1;
	return id;
}

int ss_idpool_free(struct ss_idpool *p, uint32_t id)
{
	if (id >= p->n || !p->used[id])
		return -EINVAL;
	p->used[id] = 0;
	p->gen[id]++;
	p->free_stack[p->n_free++] = id;
	return 0;
}
