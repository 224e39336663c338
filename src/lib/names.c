/* names.c - printable names for events and the errno values the service reports. */
#include <errno.h>

#include "slipstream.h"

const char *ss_event_name(enum ss_event_type type)
{
	switch (type) {
	case SS_EVENT_LISTENING: return "LISTENING";
	case SS_EVENT_CONNECTED: return "CONNECTED";
	case SS_EVENT_ACCEPTED: return "ACCEPTED";
	case SS_EVENT_DATA: return "DATA";
	case SS_EVENT_SENT: return "SENT";
	case SS_EVENT_PEER_CLOSED: return "PEER_CLOSED";
	case SS_EVENT_RESET: return "RESET";
	case SS_EVENT_ERROR: return "ERROR";
	case SS_EVENT_CLOSED: return "CLOSED";
	case SS_EVENT_CMD_ERROR: return "CMD_ERROR";
	case SS_EVENT_BOUND: return "BOUND";
	case SS_EVENT_INHERITED: return "INHERITED";
	case SS_EVENT_ADOPTED: return "ADOPTED";
	case SS_EVENT_MOVED: return "MOVED";
	case SS_EVENT_LISTEN_STOPPED: return "LISTEN_STOPPED";
	}
	return "?";
}

const char *ss_errno_name(int err)
{
	switch (err) {
	case 0: return NULL;
	case ECONNRESET: return "ECONNRESET";
	case ECONNREFUSED: return "ECONNREFUSED";
	case ECONNABORTED: return "ECONNABORTED";
	case ETIMEDOUT: return "ETIMEDOUT";
	case EHOSTUNREACH: return "EHOSTUNREACH";
	case ENETUNREACH: return "ENETUNREACH";
	case EADDRINUSE: return "EADDRINUSE";
	case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
	case EPIPE: return "EPIPE";
	case EINVAL: return "EINVAL";
	case ENOMEM: return "ENOMEM";
	case ENOBUFS: return "ENOBUFS";
	case EMFILE: return "EMFILE";
	case EAGAIN: return "EAGAIN";
	case EINTR: return "EINTR";
	case EPROTO: return "EPROTO";
	case EREMOTEIO: return "EREMOTEIO";
	case EIO: return "EIO";
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case ENOENT: return "ENOENT";
	case EBADF: return "EBADF";
	case ENOTCONN: return "ENOTCONN";
	}
	return "E?";
}
