/* list.h - intrusive circular doubly linked lists: a link in each element, a head that is a link too. */
#ifndef SS_UTIL_LIST_H
#define SS_UTIL_LIST_H

/*
 * An element embeds a struct ss_list and is found again from it with
 * SS_LIST_ENTRY() (offsetof arithmetic; free when the link is the first
 * member).  A head is a bare struct ss_list: empty when it points at
 * itself, so insertion and removal never test for an end.  An element
 * that is on no list either has NULL links (never added, or taken off
 * with ss_list_del(): following them faults at once) or points at itself
 * (ss_list_init(), or taken off with ss_list_del_init(): then
 * ss_list_empty() on its own link tells whether it is on a list).
 *
 * A head or a linked element must not move in memory (copy a head with
 * ss_list_move()).  Header-only, no locking, no allocation: every
 * operation is O(1) but the walks.
 */

#include <stdbool.h>
#include <stddef.h>

struct ss_list {
	struct ss_list *next, *prev;
};

/* The structure of type @type whose member @member is at @ptr. */
#define SS_CONTAINER_OF(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* The element of type @type whose link @member is @link. */
#define SS_LIST_ENTRY(link, type, member) SS_CONTAINER_OF(link, type, member)

/* @l over the links of @head, first to last; @l must stay on the list. */
#define SS_LIST_FOR_EACH(l, head) \
	for ((l) = (head)->next; (l) != (head); (l) = (l)->next)

/* The same, but @l may be removed (or moved): @n holds the next one. */
#define SS_LIST_FOR_EACH_SAFE(l, n, head) \
	for ((l) = (head)->next; (l) != (head) && ((n) = (l)->next, 1); (l) = (n))

/* An empty head, or an element on no list. */
static inline void ss_list_init(struct ss_list *h)
{
	h->next = h->prev = h;
}

static inline bool ss_list_empty(const struct ss_list *h)
{
	return h->next == h;
}

/* First and last links of a non-empty list (@h itself when empty). */
static inline struct ss_list *ss_list_first(const struct ss_list *h)
{
	return h->next;
}

static inline struct ss_list *ss_list_last(const struct ss_list *h)
{
	return h->prev;
}

/* Put @e right after @pos (a head: at the front). */
static inline void ss_list_add_after(struct ss_list *pos, struct ss_list *e)
{
	e->prev = pos;
	e->next = pos->next;
	pos->next->prev = e;
	pos->next = e;
}

/* Put @e first on @h. */
static inline void ss_list_add_head(struct ss_list *h, struct ss_list *e)
{
	ss_list_add_after(h, e);
}

/* Put @e last on @h. */
static inline void ss_list_add_tail(struct ss_list *h, struct ss_list *e)
{
	e->prev = h->prev;
	e->next = h;
	h->prev->next = e;
	h->prev = e;
}

/* Take @e off its list.  Its links are cleared (NULL): it must be added
 * again before anything follows them. */
static inline void ss_list_del(struct ss_list *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
	e->prev = e->next = NULL;
}

/* Take @e off its list and leave it on none (pointing at itself), so
 * that ss_list_empty(@e) holds until it is added again. */
static inline void ss_list_del_init(struct ss_list *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
	e->prev = e->next = e;
}

/* Everything on @from, in order, onto the end of @to; @from ends empty. */
static inline void ss_list_splice_tail(struct ss_list *to, struct ss_list *from)
{
	if (ss_list_empty(from))
		return;
	from->next->prev = to->prev;
	to->prev->next = from->next;
	from->prev->next = to;
	to->prev = from->prev;
	ss_list_init(from);
}

/* Everything on @from, in order, onto the front of @to; @from ends empty. */
static inline void ss_list_splice_head(struct ss_list *to, struct ss_list *from)
{
	if (ss_list_empty(from))
		return;
	from->prev->next = to->next;
	to->next->prev = from->prev;
	to->next = from->next;
	from->next->prev = to;
	ss_list_init(from);
}

/* Everything on @from onto @to, which must be empty; @from ends empty. */
static inline void ss_list_move(struct ss_list *to, struct ss_list *from)
{
	ss_list_init(to);
	ss_list_splice_tail(to, from);
}

#endif /* SS_UTIL_LIST_H */
