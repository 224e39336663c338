/* epoll_nums.c - the numbers of an epoll set the layer did not see made: other fds of the same open file, found when the set first takes a socket. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "posix/posix.h"
#include "posix/posix_ext.h"

/*
 * dup, dup2, dup3 and F_DUPFD of a number the layer knows as a set go
 * through ssp_ep_dup.  Copies made earlier, while the set held kernel
 * fds only, went straight to libc: nothing was known then, and looking
 * at every dup of every fd for an epoll set would cost all programs.
 * So when a set takes its first accelerated socket (epoll.c, ep_make),
 * the fds of the process are looked at once: those that are the same
 * open file as the set's number (kcmp KCMP_FILE) are numbers of the set
 * too.  Raw system calls only (no cancellation point, no allocation but
 * the result): /proc/self/fd read with getdents64.  Without /proc or
 * kcmp (a kernel without it, a seccomp filter) the earlier copies stay
 * unknown, as before, said once in the log.
 */

#define KCMP_FILE_ 0 /* linux/kcmp.h: KCMP_FILE */

struct dirent64_ {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

/* @fd is the same open file as @epfd: 1, 0, or -1 when kcmp cannot say. */
static int same_file(int epfd, int fd)
{
	long pid = (long)getpid();
	long r = syscall(SYS_kcmp, pid, pid, KCMP_FILE_, (long)epfd, (long)fd);

	return r == 0 ? 1 : r > 0 ? 0 : -1;
}

static int num_parse(const char *s)
{
	int n = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || n > (1 << 27))
			return -1;
		n = n * 10 + (*s - '0');
	}
	return n;
}

/* Append @fd to *@out (*@n of *@cap): false without memory. */
static bool push(int **out, unsigned *n, unsigned *cap, int fd)
{
	if (*n == *cap) {
		unsigned c = *cap ? 2 * *cap : 4;
		int *p = realloc(*out, c * sizeof(*p));

		if (!p)
			return false;
		*out = p;
		*cap = c;
	}
	(*out)[(*n)++] = fd;
	return true;
}

int ssp_ep_numbers(int epfd, int **out)
{
	_Alignas(8) char buf[4096];
	unsigned n = 0, cap = 0;
	int dir, err = 0;
	long got;

	*out = NULL;
	dir = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/fd",
			   O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0) {
		ssp_log_once("ep_numbers_proc", "/proc/self/fd cannot be read: copies of an "
			     "epoll fd made before its first accelerated socket are not known");
		return 0;
	}
	while (!err && (got = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < got && !err;) {
			const struct dirent64_ *d = (const void *)(buf + off);
			int fd = num_parse(d->name);
			int same;

			off += d->reclen;
			if (fd < 0 || fd == epfd || fd == dir || ssp_fd_get(fd))
				continue;
			same = same_file(epfd, fd);
			if (same < 0) {
				ssp_log_once("ep_numbers_kcmp", "kcmp() is not available: copies "
					     "of an epoll fd made before its first accelerated "
					     "socket are not known");
				err = 1;
			} else if (same && !push(out, &n, &cap, fd)) {
				err = 1;
			}
		}
	}
	ss_sys_close(dir);
	if (err) {
		free(*out);
		*out = NULL;
		return 0;
	}
	return (int)n;
}
