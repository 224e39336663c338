/* test_arp_cache.c - neighbour cache: insert, refresh, merge rule, eviction of the oldest. */
#include <string.h>

#include "check.h"
#include "stack/arp_cache.h"

static void mac_of(uint32_t ip, uint8_t mac[6])
{
	mac[0] = 0x02;
	mac[1] = 0;
	mac[2] = (uint8_t)(ip >> 24);
	mac[3] = (uint8_t)(ip >> 16);
	mac[4] = (uint8_t)(ip >> 8);
	mac[5] = (uint8_t)ip;
}

int main(void)
{
	struct ss_arp_cache c;
	uint8_t mac[6], got[6];
	uint64_t when;

	CHECK_EQ_U64(ss_arp_cache_init(&c, 12), (uint64_t)-22); /* not a power of two */
	CHECK_EQ_U64(ss_arp_cache_init(&c, 4), (uint64_t)-22);  /* below the probe window */
	CHECK_EQ_U64(ss_arp_cache_init(&c, 16), 0);

	uint32_t a = 0xC6120002u;
	mac_of(a, mac);
	CHECK(!ss_arp_cache_lookup(&c, a, got, NULL));
	CHECK_EQ_U64(ss_arp_cache_update(&c, a, mac, 10, false), SS_ARP_CACHE_UNCHANGED);
	CHECK(!ss_arp_cache_lookup(&c, a, got, NULL));
	CHECK_EQ_U64(ss_arp_cache_update(&c, a, mac, 10, true), SS_ARP_CACHE_INSERTED);
	CHECK(ss_arp_cache_lookup(&c, a, got, &when));
	CHECK_MEM(got, mac, 6);
	CHECK_EQ_U64(when, 10);

	/* A new MAC for a known address replaces it even without create. */
	mac[5] ^= 0xff;
	CHECK_EQ_U64(ss_arp_cache_update(&c, a, mac, 20, false), SS_ARP_CACHE_UPDATED);
	CHECK(ss_arp_cache_lookup(&c, a, got, &when));
	CHECK_MEM(got, mac, 6);
	CHECK_EQ_U64(when, 20);

	/* Fill far past capacity: every update lands, lookups stay exact. */
	unsigned evicted = 0;
	for (uint32_t i = 0; i < 100; i++) {
		uint32_t ip = 0x0A000000u + i;
		mac_of(ip, mac);
		enum ss_arp_cache_result r = ss_arp_cache_update(&c, ip, mac, 100 + i, true);
		CHECK(r == SS_ARP_CACHE_INSERTED || r == SS_ARP_CACHE_EVICTED);
		evicted += r == SS_ARP_CACHE_EVICTED;
		CHECK(ss_arp_cache_lookup(&c, ip, got, NULL));
		CHECK_MEM(got, mac, 6);
	}
	CHECK(evicted >= 100 - 16 + 1);
	/* The newest 8 are all still there: eviction takes the oldest. */
	for (uint32_t i = 92; i < 100; i++)
		CHECK(ss_arp_cache_lookup(&c, 0x0A000000u + i, got, NULL));

	struct ss_arp_entry snap[32];
	size_t n = ss_arp_cache_snapshot(&c, snap, 32);
	CHECK_EQ_U64(n, 16);
	for (size_t i = 0; i < n; i++) {
		uint8_t m[6];
		ss_arp_mac_unpack(snap[i].mac, m);
		mac_of(snap[i].ip, mac);
		CHECK_MEM(m, mac, 6);
		CHECK_EQ_U64(snap[i].seq & 1, 0);
	}
	CHECK_EQ_U64(ss_arp_cache_snapshot(&c, snap, 3), 3);

	uint8_t round[6] = { 1, 2, 3, 4, 5, 6 };
	ss_arp_mac_unpack(ss_arp_mac_pack(round), got);
	CHECK_MEM(got, round, 6);

	ss_arp_cache_free(&c);
	return check_done("test_arp_cache");
}
