/* arp_cache.c - IPv4 neighbour cache (RFC 826 merge rules), seqlock per entry. */
#include "stack/arp_cache.h"

#include <errno.h>
#include <stdlib.h>

uint64_t ss_arp_mac_pack(const uint8_t mac[6])
{
	uint64_t v = 0;
	for (int i = 5; i >= 0; i--)
		v = v << 8 | mac[i];
	return v;
}

void ss_arp_mac_unpack(uint64_t packed, uint8_t mac[6])
{
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)(packed >> (8 * i));
}

int ss_arp_cache_init(struct ss_arp_cache *c, uint32_t capacity)
{
	if (capacity < SS_ARP_CACHE_PROBES || (capacity & (capacity - 1)) != 0)
		return -EINVAL;
	c->slots = calloc(capacity, sizeof(*c->slots));
	if (!c->slots)
		return -ENOMEM;
	c->mask = capacity - 1;
	return 0;
}

void ss_arp_cache_free(struct ss_arp_cache *c)
{
	free(c->slots);
	c->slots = NULL;
}

static uint32_t slot_of(const struct ss_arp_cache *c, uint32_t ip)
{
	/* Fibonacci hashing spreads consecutive addresses. */
	return (uint32_t)((ip * 2654435761u) >> 8) & c->mask;
}

/* Writer side: only the owning thread calls this. */
static void entry_write(struct ss_arp_entry *e, uint32_t ip, uint64_t mac,
			uint64_t now_ns)
{
	uint32_t s = e->seq;
	__atomic_store_n(&e->seq, s + 1, __ATOMIC_RELAXED);
	/* Pairs with the acquire fence in entry_read: odd seq visible first. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&e->ip, ip, __ATOMIC_RELAXED);
	__atomic_store_n(&e->mac, mac, __ATOMIC_RELAXED);
	__atomic_store_n(&e->updated_ns, now_ns, __ATOMIC_RELAXED);
	/* Pairs with the acquire load of seq in entry_read. */
	__atomic_store_n(&e->seq, s + 2, __ATOMIC_RELEASE);
}

/* Reader side: returns a consistent copy of @e. */
static void entry_read(const struct ss_arp_entry *e, struct ss_arp_entry *out)
{
	for (;;) {
		uint32_t s1 = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
		out->ip = __atomic_load_n(&e->ip, __ATOMIC_RELAXED);
		out->mac = __atomic_load_n(&e->mac, __ATOMIC_RELAXED);
		out->updated_ns = __atomic_load_n(&e->updated_ns, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		uint32_t s2 = __atomic_load_n(&e->seq, __ATOMIC_RELAXED);
		if (s1 == s2 && !(s1 & 1)) {
			out->seq = s1;
			return;
		}
	}
}

enum ss_arp_cache_result ss_arp_cache_update(struct ss_arp_cache *c, uint32_t ip,
					     const uint8_t mac[6], uint64_t now_ns,
					     bool create)
{
	uint32_t start = slot_of(c, ip);
	struct ss_arp_entry *oldest = NULL;

	for (uint32_t i = 0; i < SS_ARP_CACHE_PROBES; i++) {
		struct ss_arp_entry *e = &c->slots[(start + i) & c->mask];
		if (e->ip == ip) {
			entry_write(e, ip, ss_arp_mac_pack(mac), now_ns);
			return SS_ARP_CACHE_UPDATED;
		}
		if (e->ip == 0) {
			if (!create)
				return SS_ARP_CACHE_UNCHANGED;
			entry_write(e, ip, ss_arp_mac_pack(mac), now_ns);
			return SS_ARP_CACHE_INSERTED;
		}
		if (!oldest || e->updated_ns < oldest->updated_ns)
			oldest = e;
	}
	if (!create)
		return SS_ARP_CACHE_UNCHANGED;
	entry_write(oldest, ip, ss_arp_mac_pack(mac), now_ns);
	return SS_ARP_CACHE_EVICTED;
}

bool ss_arp_cache_lookup(const struct ss_arp_cache *c, uint32_t ip, uint8_t mac[6],
			 uint64_t *updated_ns)
{
	uint32_t start = slot_of(c, ip);

	for (uint32_t i = 0; i < SS_ARP_CACHE_PROBES; i++) {
		struct ss_arp_entry e;
		entry_read(&c->slots[(start + i) & c->mask], &e);
		if (e.ip == ip) {
			ss_arp_mac_unpack(e.mac, mac);
			if (updated_ns)
				*updated_ns = e.updated_ns;
			return true;
		}
		if (e.ip == 0)
			return false;
	}
	return false;
}

size_t ss_arp_cache_snapshot(const struct ss_arp_cache *c, struct ss_arp_entry *out,
			     size_t max)
{
	size_t n = 0;
	for (uint32_t i = 0; i <= c->mask && n < max; i++) {
		entry_read(&c->slots[i], &out[n]);
		if (out[n].ip != 0)
			n++;
	}
	return n;
}
