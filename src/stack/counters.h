/* counters.h - named per-thread counters: every packet class and every drop reason. */
#ifndef SS_SERVICE_COUNTERS_H
#define SS_SERVICE_COUNTERS_H

#include <stdint.h>

/*
 * Each fast-path thread owns one struct ss_counters and is its only writer;
 * the control thread sums them for `slipstream stats`. Readers may see a
 * value one update stale, never a torn one (aligned 64-bit stores).
 *
 * Naming: rx_<class> / tx_<class> count packets handled; drop_<layer>_<why>
 * count packets dropped, one reason each, so that every received packet is
 * either answered, handed on, or counted in exactly one drop_* counter.
 */
#define SS_COUNTER_LIST(X)                                                    \
	X(rx_packets)                                                         \
	X(rx_bytes)                                                           \
	X(tx_packets)                                                         \
	X(tx_bytes)                                                           \
	X(rx_arp_request)                                                     \
	X(rx_arp_reply)                                                       \
	X(tx_arp_request)                                                     \
	X(tx_arp_reply)                                                       \
	X(rx_icmp_echo_request)                                               \
	X(tx_icmp_echo_reply)                                                 \
	X(rx_tcp)                                                             \
	X(tx_tcp_rst)                                                         \
	X(arp_cache_insert)                                                   \
	X(arp_cache_update)                                                   \
	X(arp_cache_evict)                                                    \
	X(fp_wakeups)                                                         \
	X(fp_sleeps)                                                          \
	X(fp_busy_yields)                                                     \
	X(fp_idle_polls_grown)                                                \
	X(fp_idle_polls_shrunk)                                               \
	X(fp_rx_gap_100us)                                                    \
	X(fp_rx_gap_1ms)                                                      \
	X(fp_rx_gap_10ms)                                                     \
	X(drop_eth_truncated)                                                 \
	X(drop_eth_not_for_us)                                                \
	X(drop_eth_unsupported_type)                                          \
	X(drop_arp_truncated)                                                 \
	X(drop_arp_unsupported)                                               \
	X(drop_arp_bad_op)                                                    \
	X(drop_arp_not_for_us)                                                \
	X(drop_ipv4_truncated)                                                \
	X(drop_ipv4_bad_version)                                              \
	X(drop_ipv4_bad_ihl)                                                  \
	X(drop_ipv4_bad_total_len)                                            \
	X(drop_ipv4_bad_checksum)                                             \
	X(drop_ipv4_not_for_us)                                               \
	X(drop_ipv4_options)                                                  \
	X(drop_ipv4_fragment)                                                 \
	X(drop_ipv4_unsupported_proto)                                        \
	X(drop_ipv4_bad_src)                                                  \
	X(drop_icmp_truncated)                                                \
	X(drop_icmp_bad_checksum)                                             \
	X(drop_icmp_unsupported_type)                                         \
	X(drop_tcp_truncated)                                                 \
	X(drop_tcp_bad_offset)                                                \
	X(drop_tcp_bad_option)                                                \
	X(drop_tcp_bad_checksum)                                              \
	X(drop_tcp_no_flow)                                                   \
	X(rx_tcp_fast)                                                           \
	X(rx_tcp_slow)                                                           \
	X(rx_tcp_syn)                                                            \
	X(rx_ahead_misses)                                                       \
	X(rx_ahead_stale)                                                        \
	X(tx_tcp_segments)                                                       \
	X(tx_tcp_payload_bytes)                                                  \
	X(tx_tso_frames)                                                         \
	X(tx_tso_no_frame)                                                       \
	X(tcp_conn_created)                                                      \
	X(tcp_conn_freed)                                                        \
	X(tcp_conn_closed)                                                       \
	X(tcp_passive_open)                                                      \
	X(tcp_syn_cookies_sent)                                                  \
	X(tcp_syn_cookies_ok)                                                    \
	X(tcp_syn_cookies_bad)                                                   \
	X(tcp_active_open)                                                       \
	X(tcp_tw_reused)                                                         \
	X(tcp_arp_failed)                                                        \
	X(tcp_reset_app_gone)                                                    \
	X(tcp_orphaned)                                                          \
	X(tcp_reset_orphan_mem)                                                  \
	X(tcp_reset_rcvd)                                                        \
	X(tcp_timeout)                                                           \
	X(tcp_retrans_segs)                                                      \
	X(tcp_fast_retrans)                                                      \
	X(tcp_rto_fired)                                                         \
	X(tcp_rst_rcvd)                                                          \
	X(tcp_challenge_acks)                                                    \
	X(tcp_dup_data_bytes)                                                    \
	X(app_commands)                                                          \
	X(app_cmd_errors)                                                        \
	X(app_kicks)                                                             \
	X(app_kick_failed)                                                       \
	X(app_event_ring_waits)                                                  \
	X(app_detached)                                                          \
	X(app_bad_ring)                                                          \
	X(app_populate_kicks)                                                    \
	X(app_slot_unpopulated)                                                  \
	X(app_rx_grown)                                                          \
	X(app_tx_grown)                                                          \
	X(tcp_oow_ack_limited)                                                   \
	X(app_inherits)                                                          \
	X(app_adopts)                                                            \
	X(app_handbacks)                                                         \
	X(app_handback_failed)                                                   \
	X(app_adopt_drained)                                                     \
	X(app_move_tx_claimed)                                                   \
	X(app_move_tx_claimed_bytes)                                             \
	X(app_move_rx_claimed)                                                   \
	X(app_move_rx_claimed_bytes)                                             \
	X(app_move_sync_bad)                                                     \
	X(app_inherit_listener_full)                                             \
	X(app_inherit_failed)                                                    \
	X(drop_tcp_seg_too_big)                                                  \
	X(drop_tcp_listener_gone)                                                \
	X(drop_tcp_backlog)                                                      \
	X(drop_tcp_app_conns_full)                                               \
	X(drop_tcp_flows_full)                                                   \
	X(drop_tcp_out_of_window)                                                \
	X(drop_tcp_old_ack)                                                      \
	X(drop_tcp_future_ack)                                                   \
	X(drop_tcp_ooo_outside)                                                  \
	X(tcp_ooo_evicted)                                                       \
	X(drop_tcp_rst_ignored)                                                  \
	X(drop_app_event_ring_full)                                              \
	X(tcp_lost_rexmits)                                                      \
	X(tcp_sack_rexmits)                                                      \
	X(tcp_rescue_rexmits)                                                    \
	X(tcp_sack_reneged)                                                      \
	X(tcp_challenge_ack_limited)                                             \
	X(tcp_dup_acks)                                                          \
	X(tcp_persist_probes)                                                    \
	X(tcp_ka_probes)                                                         \
	X(tcp_ka_timeouts)                                                       \
	X(tcp_rst_sent)                                                          \
	X(tcp_reset_data_after_close)                                            \
	X(drop_tcp_paws)                                                         \
	X(drop_tcp_no_ts)                                                        \
	X(drop_tcp_no_ack)                                                       \
	X(drop_tcp_syn_sent)                                                     \
	X(tcp_tail_probes)                                                       \
	X(tcp_rack_lost)                                                         \
	X(tcp_rack_timeouts)                                                     \
	X(tcp_ce_segs)                                                           \
	X(tcp_ecn_reductions)                                                    \
	X(tcp_ecn_echoes)                                                        \
	X(tcp_delack_acks)                                                       \
	X(tcp_timer_rearms)                                                      \
	X(tcp_delack_longer)                                                     \
	X(tcp_delack_shorter)                                                    \
	X(cc_intervals)                                                          \
	X(cc_rate_updates)                                                       \
	X(cc_window_updates)                                                     \
	X(cc_reductions)                                                         \
	X(cc_idle)                                                               \
	X(cc_host_intervals)                                                     \
	X(cc_host_slack_runs)                                                     \
	X(cc_host_slack_ends)                                                     \
	X(cc_interval_floored)                                                    \
	X(cc_auto_cubic)                                                          \
	X(cc_auto_dctcp)                                                          \
	X(cc_auto_bbr)                                                            \
	X(cc_unstretched)                                                         \
	X(cc_share_collisions)                                                   \
	X(cc_host_waits)                                                         \
	X(cc_host_pace_capped)                                                   \
	X(cc_paced_waits)                                                        \
	X(cc_cap_waits)                                                          \
	X(cc_pacer_releases)                                                     \
	X(cc_pacer_tick_holds)                                                   \
	X(tx_loopback)                                                           \
	X(rx_loopback)                                                           \
	X(drop_loopback_full)                                                    \
	X(drop_rx_chained)                                                    \
	X(drop_tx_full)                                                       \
	X(drop_tx_link_down)                                                  \
	X(tx_kept)                                                            \
	X(tx_ring_full)                                                       \
	X(fp_tx_waits)                                                        \
	X(fp_link_naps)                                                       \
	X(fp_peer_kicks)                                                      \
	X(fp_peer_kick_failed)                                                \
	X(fp_peer_polling)                                                    \
	X(fp_peer_pmd_rang)                                                   \
	X(drop_no_mbuf)                                                        \
	X(drop_tcp_listen_no_ack)

enum ss_counter_id {
#define SS_COUNTER_ENUM(name) SS_CTR_##name,
	SS_COUNTER_LIST(SS_COUNTER_ENUM)
#undef SS_COUNTER_ENUM
	SS_CTR_MAX
};

struct ss_counters {
	uint64_t v[SS_CTR_MAX];
};

/* Single writer: a plain increment compiles to one aligned 64-bit store. */
static inline void ss_ctr_inc(struct ss_counters *c, enum ss_counter_id id)
{
	__atomic_store_n(&c->v[id], c->v[id] + 1, __ATOMIC_RELAXED);
}

static inline void ss_ctr_add(struct ss_counters *c, enum ss_counter_id id,
			      uint64_t n)
{
	__atomic_store_n(&c->v[id], c->v[id] + n, __ATOMIC_RELAXED);
}

static inline uint64_t ss_ctr_read(const struct ss_counters *c,
				   enum ss_counter_id id)
{
	return __atomic_load_n(&c->v[id], __ATOMIC_RELAXED);
}

const char *ss_counter_name(enum ss_counter_id id);

#endif
