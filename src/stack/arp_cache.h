/* arp_cache.h - IPv4 -> Ethernet neighbour cache: one writer, lock-free readers. */
#ifndef SS_SERVICE_ARP_CACHE_H
#define SS_SERVICE_ARP_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Open addressing with linear probing over a bounded window. Entries are
 * never deleted, only refreshed or replaced in place (the oldest in the
 * window goes when it is full), so a lookup stops at the first empty slot.
 *
 * One thread writes (the fast-path thread that owns queue 0, where the NIC
 * steers non-IP frames); any thread reads. Each entry carries a sequence
 * count (seqlock): even = stable, odd = being written.
 */
struct ss_arp_entry {
	uint32_t seq;
	uint32_t ip;            /* host order; 0 = empty slot */
	uint64_t mac;           /* 48 bits, first octet in the low byte */
	uint64_t updated_ns;
};

struct ss_arp_cache {
	struct ss_arp_entry *slots;
	uint32_t mask;          /* capacity - 1 */
};

enum ss_arp_cache_result {
	SS_ARP_CACHE_UNCHANGED, /* not present and not created */
	SS_ARP_CACHE_INSERTED,
	SS_ARP_CACHE_UPDATED,   /* refreshed an existing entry */
	SS_ARP_CACHE_EVICTED,   /* inserted by replacing the oldest entry */
};

#define SS_ARP_CACHE_PROBES 8

/* @capacity must be a power of two >= SS_ARP_CACHE_PROBES. 0 or -1 (ENOMEM/EINVAL). */
int ss_arp_cache_init(struct ss_arp_cache *c, uint32_t capacity);
void ss_arp_cache_free(struct ss_arp_cache *c);

/*
 * Records ip -> mac at @now_ns. An existing entry is refreshed; a missing
 * one is created only if @create (RFC 826: a request for our address
 * creates, any other packet only updates what is already known).
 */
enum ss_arp_cache_result ss_arp_cache_update(struct ss_arp_cache *c, uint32_t ip,
					     const uint8_t mac[6], uint64_t now_ns,
					     bool create);

/* Any thread. Returns true and fills @mac (and @updated_ns if not NULL). */
bool ss_arp_cache_lookup(const struct ss_arp_cache *c, uint32_t ip, uint8_t mac[6],
			 uint64_t *updated_ns);

/* Any thread. Copies up to @max stable entries; returns how many. */
size_t ss_arp_cache_snapshot(const struct ss_arp_cache *c, struct ss_arp_entry *out,
			     size_t max);

uint64_t ss_arp_mac_pack(const uint8_t mac[6]);
void ss_arp_mac_unpack(uint64_t packed, uint8_t mac[6]);

#endif
