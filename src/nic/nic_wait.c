/* nic_wait.c - an idle fast path's wait on its queue: the plan, ppoll() or a nap, eventfds (see nic_wait.h). */
#include "nic/nic_wait.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct ss_nic_wait_plan ss_nic_wait_plan(enum ss_nic_wait_mode mode, int fd, uint64_t wait_ns)
{
	struct ss_nic_wait_plan p = { .fd = -1, .ns = wait_ns, .timed = false, .napped = false };

	switch (mode) {
	case SS_NIC_WAIT_TIMED:
		p.timed = true;
		if (p.ns > SS_NIC_TIMED_NAP_NS)
			p.ns = SS_NIC_TIMED_NAP_NS;
		break;
	case SS_NIC_WAIT_MEMIF:
		p.fd = fd;
		if (fd < 0) {
			p.napped = true;
			if (p.ns > SS_NIC_LINK_DOWN_NAP_NS)
				p.ns = SS_NIC_LINK_DOWN_NAP_NS;
		}
		break;
	default:
		p.fd = fd;
		break;
	}
	return p;
}

int ss_nic_wait_block(const struct ss_nic_wait_plan *plan, const int *fds, unsigned nfds,
		      unsigned *ready)
{
	*ready = 0;
	if (plan->timed) {
		struct timespec ts = { (time_t)(plan->ns / 1000000000u),
				       (long)(plan->ns % 1000000000u) };
		nanosleep(&ts, NULL);
		return 0;
	}
	struct pollfd pfd[SS_NIC_WAIT_FDS + 1];
	nfds_t n = 0;
	if (nfds > SS_NIC_WAIT_FDS)
		nfds = SS_NIC_WAIT_FDS;
	for (unsigned i = 0; i < nfds; i++)
		pfd[n++] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	if (plan->fd >= 0)
		pfd[n++] = (struct pollfd){ .fd = plan->fd, .events = POLLIN };
	struct timespec ts = { (time_t)(plan->ns / 1000000000u), (long)(plan->ns % 1000000000u) };
	if (ppoll(pfd, n, &ts, NULL) < 0)
		return errno == EINTR ? 0 : -errno;
	for (unsigned i = 0; i < nfds; i++)
		if (pfd[i].revents & POLLIN)
			*ready |= 1u << i;
	return 0;
}

int ss_nic_eventfd_drain(int fd)
{
	uint64_t v;
	if (fd >= 0 && read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return -errno;
	return 0;
}

bool ss_nic_fd_is_eventfd(int fd)
{
	char path[64], target[64];
	if (fd < 0)
		return false;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ssize_t len = readlink(path, target, sizeof(target) - 1);
	target[len > 0 ? len : 0] = '\0';
	return strstr(target, "eventfd") != NULL;
}

void ss_nic_fd_track(int *fd, int *src, int now_src)
{
	if (now_src == *src)
		return;
	if (*fd >= 0)
		close(*fd);
	*fd = now_src >= 0 ? fcntl(now_src, F_DUPFD_CLOEXEC, 0) : -1;
	*src = *fd >= 0 ? now_src : -1;
}
