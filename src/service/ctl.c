/* ctl.c - the control thread: tool requests (one line in, one JSON document out) and application attach/hang-up. */
#include "service/ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/time.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"
#include <rte_ethdev.h>
#include "nic/nic_stats.h"
#include "stack/stack.h"

#define CTL_REPLY_MAX (256 * 1024)
#define CTL_ARP_MAX 4096
#define CTL_IO_TIMEOUT_MS 2000

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Appends to a bounded buffer; output past @cap is cut (and still NUL-terminated). */
struct sbuf {
	char *p;
	size_t len, cap;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	if (b->len + 1 >= b->cap)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		b->len = b->len + (size_t)n < b->cap ? b->len + (size_t)n : b->cap - 1;
}

static const char *jbool(bool v)
{
	return v ? "true" : "false";
}

static void fmt_mac(const uint8_t m[6], char out[18])
{
	snprintf(out, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

/*
 * The drops DPDK's counters do not separate (nic_stats.h): each AF_XDP
 * socket's own statistics, and the link under the port with its veth peer.
 */
static void reply_below(const struct ss_nic *nic, struct sbuf *b)
{
	struct ss_xsk_stats xs;
	bool have_xsk = false;
	memset(&xs, 0, sizeof(xs));
	for (unsigned q = 0; q < nic->nb_queues; q++)
		if (nic->xsk_fd[q] >= 0 && ss_xsk_stats_add(nic->xsk_fd[q], &xs) == 0)
			have_xsk = true;
	if (have_xsk)
		sb_printf(b, ", \"xsk_umem_outside_mbufs\": %u, \"xsk_fill_buffers\": %u",
			  nic->umem_outside, nic->xsk_fill);
	if (have_xsk)
		sb_printf(b, ", \"xsk_rx_dropped\": %llu, \"xsk_rx_ring_full\": %llu, "
			  "\"xsk_fill_ring_empty\": %llu, \"xsk_rx_invalid_descs\": %llu, "
			  "\"xsk_tx_invalid_descs\": %llu",
			  (unsigned long long)xs.rx_dropped, (unsigned long long)xs.rx_ring_full,
			  (unsigned long long)xs.rx_fill_empty,
			  (unsigned long long)xs.rx_invalid_descs,
			  (unsigned long long)xs.tx_invalid_descs);
	struct ss_link_drops ld;
	ss_link_drops_read(nic->ifindex, &ld);
	if (ld.ok)
		sb_printf(b, ", \"link_rx_dropped\": %llu, \"link_tx_dropped\": %llu",
			  (unsigned long long)ld.own.rx_dropped,
			  (unsigned long long)ld.own.tx_dropped);
	if (ld.peer_ok)
		sb_printf(b, ", \"link_peer_tx_dropped\": %llu",
			  (unsigned long long)ld.peer.tx_dropped);
}

static void reply_stats(const struct ss_ctl *ctl, struct sbuf *b)
{
	const struct ss_config *cfg = ctl->cfg;
	const struct ss_nic *nic = ctl->nic;
	char ip[16], gw[16], mac[18];

	fmt_mac(nic->mac, mac);
	sb_printf(b, "{\"service\": {\"version\": \"%s\", \"pid\": %ld, \"uptime_s\": %.3f, "
		  "\"ip\": \"%s/%u\", \"gateway\": ", SS_VERSION, (long)getpid(),
		  (double)(mono_ns() - ctl->start_ns) / 1e9, ss_format_ipv4(cfg->ip, ip),
		  cfg->prefix_len);
	if (cfg->gateway)
		sb_printf(b, "\"%s\"", ss_format_ipv4(cfg->gateway, gw));
	else
		sb_printf(b, "null");
	sb_printf(b, ", \"mac\": \"%s\", \"fast_path_threads\": %u, \"idle_wait\": \"%s\", "
		  "\"shm_huge\": %s, \"shmem_thp\": \"%s\", \"shm_populated_bytes\": %llu, "
		  "\"shm_populate_errors\": %llu, ",
		  mac, ctl->nb_fps, ss_nic_wait_mode_name(nic->wait_mode),
		  jbool(ctl->reg && ctl->reg->shm_huge), ctl->reg ? ctl->reg->shmem_thp : "",
		  (unsigned long long)(ctl->reg ? ctl->reg->populated_bytes : 0),
		  (unsigned long long)(ctl->reg ? ctl->reg->populate_errors : 0));
	sb_printf(b, "\"port\": {\"id\": %u, \"driver\": \"%s\", \"kind\": \"%s\", "
		  "\"link_up\": %s, \"name\": \"%s\", "
		  "\"rx_queues\": %u, \"tx_queues\": %u, \"mtu\": %u, \"rss\": %s, "
		  "\"reta_size\": %u, \"rx_csum_offload\": %s, \"tx_csum_offload\": %s, "
		  "\"tso\": %s, \"max_rx_queues\": %u, \"max_tx_queues\": %u}}, ",
		  nic->port_id, nic->driver, ss_nic_kind_name(nic->kind),
		  jbool(ss_nic_link_up(nic->port_id)), nic->name, nic->nb_queues, nic->nb_queues, nic->mtu,
		  jbool(nic->caps.rss), nic->caps.reta_size,
		  jbool(nic->use_rx_ip_csum || nic->use_rx_tcp_csum),
		  jbool(nic->use_tx_ip_csum || nic->use_tx_tcp_csum), jbool(nic->use_tso),
		  nic->caps.max_rx_queues, nic->caps.max_tx_queues);
	/* Drops below us: the port's own counters (frames the NIC or the
	 * kernel socket behind the PMD could not hand over). */
	struct rte_eth_stats es;
	if (rte_eth_stats_get(nic->port_id, &es) == 0) {
		sb_printf(b, "\"nic\": {\"rx_missed\": %llu, \"rx_errors\": %llu, "
			  "\"rx_nombuf\": %llu, \"tx_errors\": %llu",
			  (unsigned long long)es.imissed, (unsigned long long)es.ierrors,
			  (unsigned long long)es.rx_nombuf, (unsigned long long)es.oerrors);
		reply_below(nic, b);
		sb_printf(b, "}, ");
	}
	if (ctl->stack) {
		struct ss_stack_gauges g;
		ss_stack_gauges(ctl->stack, &g);
		sb_printf(b, "\"gauges\": {\"flows\": %u, \"listeners\": %u, \"apps\": %u, "
			  "\"app_conns\": %u, \"app_memory_bytes\": %llu, \"orphan_bytes\": %llu}, ",
			  g.flows, g.listeners, g.apps, g.app_conns,
			  (unsigned long long)ss_app_reg_memory(ctl->reg),
			  (unsigned long long)g.orphan_bytes);
	}
	sb_printf(b, "\"counters\": {");
	for (unsigned id = 0; id < SS_CTR_MAX; id++) {
		uint64_t sum = 0;
		for (unsigned t = 0; t < ctl->nb_fps; t++)
			sum += ss_ctr_read(&ctl->fps[t]->ctr, (enum ss_counter_id)id);
		sb_printf(b, "%s\"%s\": %llu", id ? ", " : "", ss_counter_name((enum ss_counter_id)id),
			  (unsigned long long)sum);
	}
	sb_printf(b, "}}\n");
}

static void reply_arp(const struct ss_ctl *ctl, struct sbuf *b)
{
	static struct ss_arp_entry entries[CTL_ARP_MAX]; /* control thread only */
	size_t n = ss_arp_cache_snapshot(ctl->arp, entries, CTL_ARP_MAX);
	uint64_t now = mono_ns();

	sb_printf(b, "{\"entries\": [");
	for (size_t i = 0; i < n; i++) {
		char ip[16], mac[18];
		uint8_t m[6];
		ss_arp_mac_unpack(entries[i].mac, m);
		fmt_mac(m, mac);
		double age = now > entries[i].updated_ns
				     ? (double)(now - entries[i].updated_ns) / 1e9 : 0.0;
		sb_printf(b, "%s{\"ip\": \"%s\", \"mac\": \"%s\", \"state\": \"reachable\", "
			  "\"age_s\": %.3f}", i ? ", " : "", ss_format_ipv4(entries[i].ip, ip),
			  mac, age);
	}
	/* Say so when the cache holds more than one reply carries. */
	sb_printf(b, "], \"truncated\": %s}\n",
		  jbool(n == CTL_ARP_MAX && ctl->arp->mask + 1 > CTL_ARP_MAX));
}

size_t ss_ctl_handle(const struct ss_ctl *ctl, const char *line, char *buf, size_t cap)
{
	struct sbuf b = { buf, 0, cap };
	buf[0] = '\0';
	if (strcmp(line, "stats") == 0) {
		reply_stats(ctl, &b);
	} else if (strcmp(line, "arp") == 0) {
		reply_arp(ctl, &b);
	} else {
		/* Echo the command back only if it is printable and short. */
		char safe[64];
		size_t i;
		for (i = 0; line[i] && i < sizeof(safe) - 1; i++)
			safe[i] = (line[i] >= 0x20 && line[i] < 0x7f && line[i] != '"' &&
				   line[i] != '\\') ? line[i] : '?';
		safe[i] = '\0';
		sb_printf(&b, "{\"error\": \"unknown command: %s\"}\n", safe);
	}
	return b.len;
}

static void send_all(int fd, const char *p, size_t n)
{
	size_t off = 0;
	while (off < n) {
		ssize_t w = send(fd, p + off, n - off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		off += (size_t)w;
	}
}

/* A request line on a new connection, then the reply; returns true if the
 * fd was kept (an application that attached). */
static bool serve_line(struct ss_ctl *ctl, int fd, char *line, char *reply)
{
	line[strcspn(line, "\r\n")] = '\0';
	/* The reply goes out blocking, bounded: a client that does not read
	 * cannot hold the thread for more than a second. */
	struct timeval tv = { .tv_sec = 1 };
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (strncmp(line, "attach", 6) == 0 && (line[6] == ' ' || line[6] == '\0')) {
		if (!ctl->reg) {
			static const char no[] = "{\"ok\": false, \"error\": \"this service takes no applications\"}\n";
			send_all(fd, no, sizeof(no) - 1);
			return false;
		}
		return ss_app_attach(ctl->reg, fd, line) == 1;
	}
	send_all(fd, reply, ss_ctl_handle(ctl, line, reply, CTL_REPLY_MAX));
	return false;
}

/*
 * Connections that have not sent their request line yet.  They wait in the
 * same poll() as everything else, so a slow or silent client delays nobody:
 * it is dropped when its line does not arrive within CTL_IO_TIMEOUT_MS or
 * outgrows the buffer, and when all slots are taken the oldest goes.
 */
#define CTL_PENDING 16
struct pending {
	int fd;
	size_t len;
	uint64_t deadline_ns;
	char buf[256];
};

static void pending_drop(struct pending *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->len = 0;
}

static void pending_add(struct pending *pend, int fd)
{
	struct pending *slot = NULL, *oldest = &pend[0];
	for (int i = 0; i < CTL_PENDING; i++) {
		if (pend[i].fd < 0) {
			slot = &pend[i];
			break;
		}
		if (pend[i].deadline_ns < oldest->deadline_ns)
			oldest = &pend[i];
	}
	if (!slot) {
		pending_drop(oldest);
		slot = oldest;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	slot->fd = fd;
	slot->len = 0;
	slot->deadline_ns = mono_ns() + (uint64_t)CTL_IO_TIMEOUT_MS * 1000000ull;
}

/* Reads what is there; serves the line once complete (or at EOF). */
static void pending_read(struct ss_ctl *ctl, struct pending *c, char *reply)
{
	ssize_t n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0)
		c->len += (size_t)n;
	c->buf[c->len] = '\0';
	bool complete = memchr(c->buf, '\n', c->len) != NULL || (n == 0 && c->len > 0);
	if (!complete && n > 0 && c->len + 1 < sizeof(c->buf))
		return; /* more to come */
	if (complete && serve_line(ctl, c->fd, c->buf, reply)) {
		c->fd = -1; /* kept: now an application's socket */
		c->len = 0;
		return;
	}
	pending_drop(c); /* served, EOF, error, or a line too long */
}

/* Apps marked broken by the fast path are disconnected here. */
static void hang_up_broken(struct ss_ctl *ctl)
{
	for (uint32_t i = 0; i < ctl->reg->lim.max_apps; i++) {
		struct ss_app *a = &ctl->reg->apps[i];
		if (__atomic_load_n(&a->state, __ATOMIC_ACQUIRE) == SS_APP_ACTIVE && a->broken) {
			shutdown(a->sock_fd, SHUT_RDWR);
			ss_app_hangup(ctl->reg, a);
		}
	}
}

static void *ctl_main(void *arg)
{
	struct ss_ctl *ctl = arg;
	char *reply = malloc(CTL_REPLY_MAX);
	uint32_t max_apps = ctl->reg ? ctl->reg->lim.max_apps : 0;
	struct pollfd *p = calloc(3 + CTL_PENDING + max_apps, sizeof(*p));
	struct ss_app **who = calloc(3 + CTL_PENDING + max_apps, sizeof(*who)); /* app sockets */
	struct pending pend[CTL_PENDING];
	int pidx[CTL_PENDING]; /* poll slot first_pending + k -> pend[pidx[k]] */

	for (int i = 0; i < CTL_PENDING; i++)
		pend[i].fd = -1, pend[i].len = 0;

	if (!reply || !p || !who) {
		SS_ERR("control: out of memory");
		goto out;
	}
	for (;;) {
		nfds_t n = 0;
		p[n++] = (struct pollfd){ .fd = ctl->listen_fd, .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = ctl->stop_fd, .events = POLLIN };
		if (ctl->reg)
			p[n++] = (struct pollfd){ .fd = ctl->reg->reclaim_fd, .events = POLLIN };
		nfds_t first_pending = n;
		uint64_t now = mono_ns(), next = UINT64_MAX;
		for (int i = 0; i < CTL_PENDING; i++) {
			if (pend[i].fd < 0)
				continue;
			if (pend[i].deadline_ns <= now) {
				pending_drop(&pend[i]);
				continue;
			}
			if (pend[i].deadline_ns < next)
				next = pend[i].deadline_ns;
			pidx[n - first_pending] = i;
			p[n++] = (struct pollfd){ .fd = pend[i].fd, .events = POLLIN };
		}
		nfds_t first_app = n;
		for (uint32_t i = 0; i < max_apps; i++) {
			struct ss_app *a = &ctl->reg->apps[i];
			if (__atomic_load_n(&a->state, __ATOMIC_ACQUIRE) != SS_APP_ACTIVE)
				continue;
			who[n] = a;
			p[n++] = (struct pollfd){ .fd = a->sock_fd, .events = POLLIN };
		}
		int timeout = next == UINT64_MAX ? -1 : (int)((next - now) / 1000000ull + 1);
		if (poll(p, n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			SS_ERR("control: poll: %s", strerror(errno));
			break;
		}
		if (p[1].revents)
			break;
		if (ctl->reg && p[2].revents) {
			uint64_t v;
			if (read(ctl->reg->reclaim_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				SS_WARN("control: reclaim: %s", strerror(errno));
			hang_up_broken(ctl);
			ss_app_reclaim(ctl->reg);
			ss_app_populate(ctl->reg);
		}
		for (nfds_t i = first_pending; i < first_app; i++)
			if (p[i].revents)
				pending_read(ctl, &pend[pidx[i - first_pending]], reply);
		/* An application's socket: anything but EOF is ignored. */
		for (nfds_t i = first_app; i < n; i++) {
			if (!p[i].revents)
				continue;
			char junk[256];
			ssize_t r = recv(p[i].fd, junk, sizeof(junk), MSG_DONTWAIT);
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR) ||
			    (p[i].revents & (POLLHUP | POLLERR)))
				ss_app_hangup(ctl->reg, who[i]);
		}
		if (p[0].revents) {
			int fd = accept4(ctl->listen_fd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0)
				pending_add(pend, fd);
		}
	}
	for (int i = 0; i < CTL_PENDING; i++)
		pending_drop(&pend[i]);
out:
	free(reply);
	free(p);
	free(who);
	return NULL;
}

static int make_parent_dir(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int ss_ctl_start(struct ss_ctl *ctl)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = ctl->cfg->ctl_path;
	int rc;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ctl->start_ns = mono_ns();
	if ((rc = make_parent_dir(path)) != 0) {
		SS_ERR("control: cannot create the directory of %s: %s", path, strerror(-rc));
		return rc;
	}
	ctl->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ctl->listen_fd < 0)
		return -errno;
	/* A live service answers on the path: refuse. A dead one left a file: replace it. */
	if (connect(ctl->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		SS_ERR("control: another slipstreamd is serving %s", path);
		close(ctl->listen_fd);
		return -EADDRINUSE;
	}
	close(ctl->listen_fd);
	unlink(path);
	ctl->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ctl->listen_fd < 0)
		return -errno;
	if (bind(ctl->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(ctl->listen_fd, 16) != 0) {
		rc = -errno;
		SS_ERR("control: bind %s: %s", path, strerror(errno));
		close(ctl->listen_fd);
		return rc;
	}
	ctl->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ctl->stop_fd < 0) {
		rc = -errno;
		close(ctl->listen_fd);
		unlink(path);
		return rc;
	}
	rc = pthread_create(&ctl->thread, NULL, ctl_main, ctl);
	if (rc != 0) {
		close(ctl->stop_fd);
		close(ctl->listen_fd);
		unlink(path);
		return -rc;
	}
	ctl->running = true;
	SS_INFO("control socket at %s", path);
	return 0;
}

void ss_ctl_stop(struct ss_ctl *ctl)
{
	if (!ctl->running)
		return;
	uint64_t one = 1;
	if (write(ctl->stop_fd, &one, sizeof(one)) != sizeof(one))
		SS_WARN("control: stop kick: %s", strerror(errno));
	pthread_join(ctl->thread, NULL);
	close(ctl->listen_fd);
	close(ctl->stop_fd);
	unlink(ctl->cfg->ctl_path);
	ctl->running = false;
}
