/* nic_kind.c - port kinds, wait-mode names, memif devargs, the TX queue's kept frames (pure). */
#include "nic/nic_kind.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum ss_nic_kind ss_nic_kind_of(const char *driver)
{
	if (!driver)
		return SS_NIC_KIND_OTHER;
	if (strcmp(driver, "net_af_xdp") == 0)
		return SS_NIC_KIND_AF_XDP;
	if (strcmp(driver, "net_af_packet") == 0)
		return SS_NIC_KIND_AF_PACKET;
	if (strcmp(driver, "net_memif") == 0)
		return SS_NIC_KIND_MEMIF;
	return SS_NIC_KIND_OTHER;
}

const char *ss_nic_kind_name(enum ss_nic_kind k)
{
	switch (k) {
	case SS_NIC_KIND_AF_XDP: return "af_xdp";
	case SS_NIC_KIND_AF_PACKET: return "af_packet";
	case SS_NIC_KIND_MEMIF: return "memif";
	default: return "other";
	}
}

const char *ss_nic_wait_mode_name(enum ss_nic_wait_mode m)
{
	switch (m) {
	case SS_NIC_WAIT_SOCKET: return "socket-poll";
	case SS_NIC_WAIT_RX_INTR: return "rx-interrupt";
	case SS_NIC_WAIT_MEMIF: return "memif-eventfd";
	default: return "timed-sleep";
	}
}

static bool yes_no(const char *v, size_t n, bool *out)
{
	if (n == 3 && strncmp(v, "yes", 3) == 0)
		*out = true;
	else if (n == 2 && strncmp(v, "no", 2) == 0)
		*out = false;
	else
		return false;
	return true;
}

bool ss_memif_args_parse(const char *vdev, struct ss_memif_args *out)
{
	memset(out, 0, sizeof(*out));
	out->abstract = true;
	snprintf(out->socket, sizeof(out->socket), "/run/memif.sock");
	if (!vdev || strncmp(vdev, "net_memif", 9) != 0)
		return false;
	const char *p = strchr(vdev, ',');
	while (p) {
		p++;
		size_t len = strcspn(p, ",");
		const char *eq = memchr(p, '=', len);
		if (!eq)
			return false;
		size_t klen = (size_t)(eq - p);
		const char *v = eq + 1;
		size_t vlen = len - klen - 1;
		if (klen == 4 && strncmp(p, "role", 4) == 0) {
			if (vlen == 6 && strncmp(v, "server", 6) == 0)
				out->server = true;
			else if (vlen == 6 && strncmp(v, "client", 6) == 0)
				out->server = false;
			else
				return false;
		} else if (klen == 6 && strncmp(p, "socket", 6) == 0) {
			if (vlen == 0 || vlen >= sizeof(out->socket))
				return false;
			memcpy(out->socket, v, vlen);
			out->socket[vlen] = '\0';
		} else if (klen == 15 && strncmp(p, "socket-abstract", 15) == 0) {
			if (!yes_no(v, vlen, &out->abstract))
				return false;
		} else if (klen == 9 && strncmp(p, "zero-copy", 9) == 0) {
			if (!yes_no(v, vlen, &out->zero_copy))
				return false;
		} else if (klen == 2 && strncmp(p, "id", 2) == 0) {
			char num[16];
			char *end;
			if (vlen == 0 || vlen >= sizeof(num))
				return false;
			memcpy(num, v, vlen);
			num[vlen] = '\0';
			unsigned long id = strtoul(num, &end, 10);
			if (*end != '\0' || id > 0xffffffffUL)
				return false;
			out->id = (unsigned)id;
		}
		p = strchr(p, ',');
	}
	return true;
}

unsigned ss_txq_keep(void **q, unsigned n, unsigned sent)
{
	if (sent >= n)
		return 0;
	if (sent > 0)
		memmove(q, q + sent, (size_t)(n - sent) * sizeof(*q));
	return n - sent;
}

enum ss_memif_after_tx ss_memif_after_tx(uint32_t pre_arms, uint16_t pre_flags, uint32_t arms,
					 uint16_t flags)
{
	if (flags & SS_MEMIF_RING_MASK_INT)
		return SS_MEMIF_PEER_POLLING;
	if (!(pre_flags & SS_MEMIF_RING_MASK_INT) && arms == pre_arms)
		return SS_MEMIF_PMD_RANG;
	return SS_MEMIF_RING_PEER;
}
