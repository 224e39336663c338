/* proto.h - per-frame protocol handling on raw bytes: ARP, ICMP echo, TCP RST (no DPDK). */
#ifndef SS_SERVICE_PROTO_H
#define SS_SERVICE_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stack/arp_cache.h"
#include "stack/counters.h"
#include "stack/flow_table.h"

/* What the NIC already verified for this frame (from mbuf ol_flags). */
#define SS_RX_IP_CSUM_GOOD 0x1
#define SS_RX_L4_CSUM_GOOD 0x2
/* The frame comes from the TCP stack's loopback queue, not the NIC: it is
 * not counted in rx_packets/rx_bytes (the stack counts rx_loopback), and
 * its source may be our own address.  Its checksums were computed by our
 * own builders and never crossed a wire: the loopback passes the two
 * flags above with it. */
#define SS_RX_LOOPBACK 0x4

struct ss_ipv4;
struct ss_tcp;

/*
 * The TCP stack behind a fast path: takes a valid segment (checksum
 * verified, addressed to us) and returns true if a connection or listener
 * took it, false if none exists (then a RST answers it).
 */
typedef bool (*ss_proto_tcp_fn)(void *arg, const uint8_t *frame, const struct ss_ipv4 *ip,
				const struct ss_tcp *seg);

/* One per fast-path thread; nothing in it is shared for writing. */
struct ss_proto_ctx {
	uint8_t mac[6];
	uint32_t ip;                 /* host order */
	uint32_t netmask;            /* host order */
	uint32_t src_good;           /* a source ipv4_src_bad() passed, never ip: the
				      * usual path's cache of that test (proto.c) */
	struct ss_arp_cache *arp;
	bool arp_writer;             /* this thread may update @arp */
	struct ss_counters *ctr;
	uint64_t now_ns;             /* set by the caller per burst */
	ss_proto_tcp_fn tcp_input;   /* NULL: no stack, every segment gets RST */
	void *tcp_arg;
};

void ss_proto_ctx_init(struct ss_proto_ctx *ctx, const uint8_t mac[6], uint32_t ip,
		       uint8_t prefix_len, struct ss_arp_cache *arp, bool arp_writer,
		       struct ss_counters *ctr);

/*
 * Handles one received Ethernet frame of @len bytes held in a buffer of
 * @cap bytes. Either the frame is consumed (counted, possibly dropped with
 * its drop_* counter) and 0 is returned, or a reply has been written over
 * it in place and its length is returned for transmission (ARP reply, ICMP
 * echo reply, TCP RST), counted in its tx_<class> counter; the caller
 * counts tx_packets/tx_bytes for what the NIC takes and drop_tx_full for
 * what it refuses.
 */
size_t ss_proto_input(struct ss_proto_ctx *ctx, uint8_t *frame, size_t len,
		      size_t cap, unsigned rx_flags);

/*
 * The 4-tuple (struct ss_flow_key, from our side) of @frame when it looks
 * like an IPv4 TCP segment, for ss_stack_rx_prefetch(); nothing else is
 * checked (ss_proto_input() does that).  Returns false otherwise.
 */
bool ss_proto_peek_tcp(const uint8_t *frame, size_t len, struct ss_flow_key *k);

/* Writes a broadcast ARP request for @target_ip; returns its length or 0. */
size_t ss_proto_build_arp_request(const struct ss_proto_ctx *ctx, uint8_t *buf,
				  size_t cap, uint32_t target_ip);

#endif
