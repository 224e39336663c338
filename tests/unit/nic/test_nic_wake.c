/* test_nic_wake.c - a queue's wait (plan, ppoll or nap, eventfds) and memif's ring-header protocol. */
#include <fcntl.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "nic/memif_ring.h"
#include "nic/nic_wait.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void test_plan(void)
{
	struct ss_nic_wait_plan p;

	/* Sockets and RX interrupts: their fd, the caller's time. */
	p = ss_nic_wait_plan(SS_NIC_WAIT_SOCKET, 7, 5000000000ull);
	CHECK(p.fd == 7 && p.ns == 5000000000ull && !p.timed && !p.napped);
	p = ss_nic_wait_plan(SS_NIC_WAIT_RX_INTR, 9, 123);
	CHECK(p.fd == 9 && p.ns == 123 && !p.timed && !p.napped);

	/* No wake-up source: naps, no fd, never longer than the nap. */
	p = ss_nic_wait_plan(SS_NIC_WAIT_TIMED, 7, 1000000000ull);
	CHECK(p.timed && p.fd == -1 && p.ns == SS_NIC_TIMED_NAP_NS && !p.napped);
	p = ss_nic_wait_plan(SS_NIC_WAIT_TIMED, -1, 1000);
	CHECK(p.timed && p.ns == 1000);

	/* memif with a peer: its eventfd; without: a capped nap, counted. */
	p = ss_nic_wait_plan(SS_NIC_WAIT_MEMIF, 11, 1000000000ull);
	CHECK(p.fd == 11 && p.ns == 1000000000ull && !p.timed && !p.napped);
	p = ss_nic_wait_plan(SS_NIC_WAIT_MEMIF, -1, 1000000000ull);
	CHECK(p.fd == -1 && p.ns == SS_NIC_LINK_DOWN_NAP_NS && !p.timed && p.napped);
	p = ss_nic_wait_plan(SS_NIC_WAIT_MEMIF, -1, 0);
	CHECK(p.ns == 0 && p.napped);
}

static void test_block(void)
{
	int kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int bell = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int queue = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int fds[2] = { kick, bell };
	uint64_t one = 1, t0;
	unsigned ready = 99;
	CHECK(kick >= 0 && bell >= 0 && queue >= 0);

	/* Nothing readable: the time passes, nothing ready. */
	struct ss_nic_wait_plan p = ss_nic_wait_plan(SS_NIC_WAIT_MEMIF, queue, 2000000);
	t0 = mono_ns();
	CHECK(ss_nic_wait_block(&p, fds, 2, &ready) == 0);
	CHECK(mono_ns() - t0 >= 2000000);
	CHECK(ready == 0);

	/* The caller's second fd: bit 1. */
	CHECK(write(bell, &one, sizeof(one)) == sizeof(one));
	p.ns = 1000000000ull;
	t0 = mono_ns();
	CHECK(ss_nic_wait_block(&p, fds, 2, &ready) == 0);
	CHECK(ready == 2u);
	CHECK(mono_ns() - t0 < 500000000ull);
	CHECK(ss_nic_eventfd_drain(bell) == 0);

	/* The queue's fd wakes, and is none of the caller's. */
	CHECK(write(queue, &one, sizeof(one)) == sizeof(one));
	t0 = mono_ns();
	CHECK(ss_nic_wait_block(&p, fds, 1, &ready) == 0);
	CHECK(ready == 0);
	CHECK(mono_ns() - t0 < 500000000ull);

	/* Drained to zero: it waits again; a drained empty eventfd is fine. */
	CHECK(ss_nic_eventfd_drain(queue) == 0);
	CHECK(ss_nic_eventfd_drain(queue) == 0);
	CHECK(ss_nic_eventfd_drain(-1) == 0);
	p.ns = 1000000;
	t0 = mono_ns();
	CHECK(ss_nic_wait_block(&p, fds, 1, &ready) == 0);
	CHECK(mono_ns() - t0 >= 1000000);

	/* A timed plan polls nothing: a readable fd does not end it early
	 * and is not reported. */
	CHECK(write(kick, &one, sizeof(one)) == sizeof(one));
	p = ss_nic_wait_plan(SS_NIC_WAIT_TIMED, -1, 1000000000ull);
	CHECK(p.ns == SS_NIC_TIMED_NAP_NS);
	t0 = mono_ns();
	CHECK(ss_nic_wait_block(&p, fds, 2, &ready) == 0);
	CHECK(mono_ns() - t0 >= SS_NIC_TIMED_NAP_NS);
	CHECK(ready == 0);

	/* A closed fd polls as POLLNVAL, not readable. */
	p = ss_nic_wait_plan(SS_NIC_WAIT_SOCKET, -1, 0);
	int gone[1] = { 1000 };
	CHECK(ss_nic_wait_block(&p, gone, 1, &ready) == 0);
	CHECK(ready == 0);

	close(kick);
	close(bell);
	close(queue);
}

static void test_fds(void)
{
	int efd = eventfd(0, EFD_CLOEXEC);
	int pfd[2];
	CHECK(efd >= 0 && pipe(pfd) == 0);
	CHECK(ss_nic_fd_is_eventfd(efd));
	CHECK(!ss_nic_fd_is_eventfd(pfd[0]));
	CHECK(!ss_nic_fd_is_eventfd(-1));

	/* A duplicate follows the source; the same source: kept. */
	int fd = -1, src = -1;
	ss_nic_fd_track(&fd, &src, efd);
	CHECK(fd >= 0 && fd != efd && src == efd);
	CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	CHECK(ss_nic_fd_is_eventfd(fd));
	int first = fd;
	ss_nic_fd_track(&fd, &src, efd);
	CHECK(fd == first && src == efd);
	/* Another source: the old duplicate closed, a new one made. */
	ss_nic_fd_track(&fd, &src, pfd[1]);
	CHECK(fd >= 0 && src == pfd[1] && !ss_nic_fd_is_eventfd(fd));
	/* Gone: closed, -1. */
	int last = fd;
	ss_nic_fd_track(&fd, &src, -1);
	CHECK(fd == -1 && src == -1);
	CHECK(fcntl(last, F_GETFD) == -1);
	/* A source that cannot be duplicated: none. */
	ss_nic_fd_track(&fd, &src, 1000);
	CHECK(fd == -1 && src == -1);

	close(efd);
	close(pfd[0]);
	close(pfd[1]);
}

static void test_memif_ring(void)
{
	struct ss_memif_ring_hdr ring;
	volatile struct ss_memif_ring_hdr *r = &ring;
	memset(&ring, 0, sizeof(ring));
	ring.flags = SS_MEMIF_RING_MASK_INT;
	ring.arms = 41;

	/* The receiver polls: a sender sees MASK_INT, nobody rings. */
	struct ss_memif_tx_mark m = ss_memif_tx_mark(r);
	CHECK(m.arms == 41 && m.flags == SS_MEMIF_RING_MASK_INT);
	CHECK_EQ_U64(ss_memif_tx_check(r, m), SS_MEMIF_PEER_POLLING);

	/* The receiver arms during the burst: ring it. */
	ss_memif_rx_arm(r);
	CHECK(ring.arms == 42 && ring.flags == 0);
	CHECK_EQ_U64(ss_memif_tx_check(r, m), SS_MEMIF_RING_PEER);

	/* Armed before and through the burst: the PMD rang. */
	m = ss_memif_tx_mark(r);
	CHECK(m.arms == 42 && m.flags == 0);
	CHECK_EQ_U64(ss_memif_tx_check(r, m), SS_MEMIF_PMD_RANG);

	/* Disarmed and armed again during the burst: another arming, ring. */
	ss_memif_rx_disarm(r);
	CHECK(ring.flags == SS_MEMIF_RING_MASK_INT && ring.arms == 42);
	ss_memif_rx_arm(r);
	CHECK_EQ_U64(ss_memif_tx_check(r, m), SS_MEMIF_RING_PEER);

	/* Disarmed after the burst: polling, no ring. */
	m = ss_memif_tx_mark(r);
	ss_memif_rx_disarm(r);
	CHECK_EQ_U64(ss_memif_tx_check(r, m), SS_MEMIF_PEER_POLLING);

	/* The count wraps; the protocol's fields are untouched. */
	ring.arms = UINT32_MAX;
	ring.cookie = 0x3E31F20u;
	ring.head = 17;
	ss_memif_rx_arm(r);
	CHECK(ring.arms == 0 && ring.cookie == 0x3E31F20u && ring.head == 17);
}

int main(void)
{
	test_plan();
	test_block();
	test_fds();
	test_memif_ring();
	return check_done("test_nic_wake");
}
