/* test_posix_route.c - POSIX layer without a service: which sockets it takes, the kernel fallback, strict mode, the fd table. */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "posix/posix.h"

/* Not ours: every family/type/protocol but IPv4 TCP is handed back (-2)
 * before the service is even looked for. */
static void test_socket_not_ours(void)
{
	CHECK(ssp_socket(AF_INET6, SOCK_STREAM, 0) == -2);
	CHECK(ssp_socket(AF_UNIX, SOCK_STREAM, 0) == -2);
	CHECK(ssp_socket(AF_INET, SOCK_DGRAM, 0) == -2);
	CHECK(ssp_socket(AF_INET, SOCK_RAW, IPPROTO_TCP) == -2);
	CHECK(ssp_socket(AF_INET, SOCK_STREAM, IPPROTO_UDP) == -2);
	CHECK(ssp_socket(AF_INET, SOCK_SEQPACKET, 0) == -2);
	CHECK(ssp.mode == SSP_M_UNSET);
}

/* SLIPSTREAM_STRICT=1 and no service: socket() fails, every time. */
static void test_strict_child(void)
{
	pid_t pid = fork();
	int st = 0;

	if (pid == 0) {
		int bad = 0;

		setenv("SLIPSTREAM_STRICT", "1", 1);
		for (int i = 0; i < 2; i++) {
			errno = 0;
			if (ssp_socket(AF_INET, SOCK_STREAM, 0) != -1 || errno != ECONNREFUSED)
				bad++;
		}
		_exit(bad);
	}
	CHECK(pid > 0);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* No service, not strict: one warning, then everything goes to libc. */
static void test_fallback(void)
{
	CHECK(ssp_socket(AF_INET, SOCK_STREAM, 0) == -2);
	CHECK(ssp.mode == SSP_M_KERNEL);
	CHECK(ssp_socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, IPPROTO_TCP) == -2);
}

static void test_fd_table(void)
{
	struct ssp_file a = { SSP_F_SOCK }, b = { SSP_F_EPOLL };

	CHECK(ssp_fd_get(-1) == NULL);
	CHECK(ssp_fd_get(5) == NULL);
	ssp_glock();
	CHECK(ssp_fd_set(5, &a) == 0);
	CHECK(ssp_fd_set(100000, &b) == 0); /* grows the table */
	CHECK(ssp_fd_set(-3, &b) == -1 && errno == EBADF);
	ssp_gunlock();
	CHECK(ssp_fd_get(5) == &a);
	CHECK(ssp_fd_get(100000) == &b);
	CHECK(ssp_fd_get(99999) == NULL);
	CHECK(ssp_fd_busy(5) && !ssp_fd_busy(6));
	ssp_glock();
	CHECK(ssp_fd_set(5, NULL) == 0);
	CHECK(ssp_fd_set(100000, NULL) == 0);
	CHECK(ssp_fd_set(1 << 22, NULL) == 0); /* removing beyond the end: no-op */
	ssp_gunlock();
	CHECK(ssp_fd_get(5) == NULL && ssp_fd_get(100000) == NULL);
}

int main(void)
{
	char dir[] = "/tmp/ssp_route_XXXXXX";
	char path[64];

	ssp_real_init();
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/none.sock", dir);
	setenv("SLIPSTREAM_SOCK", path, 1);
	unsetenv("SLIPSTREAM_STRICT");
	test_socket_not_ours();
	test_strict_child();
	test_fallback();
	test_fd_table();
	rmdir(dir);
	return check_done("test_posix_route");
}
