/* shim_proc.c - LD_PRELOAD front-end for process calls: fork and the exec family. */

/*
 * fork() goes to the POSIX layer, which lets the child share the parent's
 * accelerated sockets (src/lib/posix/fork.c).  Every exec closes the
 * accelerated sockets first: they cannot cross exec (the new image has
 * none of the layer's state), and closing them now sends a clean FIN
 * instead of a reset when the attachment hangs up.  The variadic execl*
 * forms are rebuilt as arrays and passed to their execv* counterparts.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "posix/posix.h"

int execvpe(const char *file, char *const argv[], char *const envp[]);
int fexecve(int fd, char *const argv[], char *const envp[]);

#define REAL_PROC(name) \
	static __typeof__(name) *real_##name; \
	if (!real_##name) { \
		void *p_ = dlsym(RTLD_NEXT, #name); \
		memcpy(&real_##name, &p_, sizeof(p_)); \
		if (!real_##name) { \
			errno = ENOSYS; \
			return -1; \
		} \
	}

/* ssp_exec_prepare, cancellation held off (exec is no cancellation point). */
static void exec_prepare(void)
{
	int err = errno;

	ssp_call_enter(false);
	ssp_exec_prepare();
	ssp_call_leave();
	errno = err;
}

pid_t fork(void)
{
	pid_t pid;
	int err;

	/* Not a cancellation point: held off throughout (posix.h). */
	ssp_call_enter(false);
	pid = ssp_fork();
	err = errno;
	ssp_call_leave();
	errno = err;
	return pid;
}

int execve(const char *path, char *const argv[], char *const envp[])
{
	REAL_PROC(execve);
	exec_prepare();
	return real_execve(path, argv, envp);
}

int execv(const char *path, char *const argv[])
{
	REAL_PROC(execv);
	exec_prepare();
	return real_execv(path, argv);
}

int execvp(const char *file, char *const argv[])
{
	REAL_PROC(execvp);
	exec_prepare();
	return real_execvp(file, argv);
}

int execvpe(const char *file, char *const argv[], char *const envp[])
{
	REAL_PROC(execvpe);
	exec_prepare();
	return real_execvpe(file, argv, envp);
}

int fexecve(int fd, char *const argv[], char *const envp[])
{
	REAL_PROC(fexecve);
	exec_prepare();
	return real_fexecve(fd, argv, envp);
}

/* The arguments after @arg0 up to the NULL (and, for execle, the
 * environment after it) as an array; NULL with errno when out of memory. */
static char **va_argv(const char *arg0, va_list ap, char ***envp)
{
	va_list aq;
	size_t n = 1;
	char **argv;

	va_copy(aq, ap);
	while (va_arg(aq, char *))
		n++;
	va_end(aq);
	argv = malloc((n + 1) * sizeof(*argv));
	if (!argv) {
		errno = ENOMEM;
		return NULL;
	}
	argv[0] = (char *)(uintptr_t)arg0;
	for (size_t i = 1; i <= n; i++)
		argv[i] = va_arg(ap, char *); /* the last one read is the NULL */
	if (envp)
		*envp = va_arg(ap, char **);
	return argv;
}

/* Runs exec @kind ('v': execv, 'p': execvp, 'e': execve) on the array
 * va_argv built, then frees it (exec returned: it failed). */
static int exec_array(char kind, const char *path, char **argv, char **envp)
{
	int rc, err;

	if (!argv)
		return -1;
	rc = kind == 'p' ? execvp(path, argv) : kind == 'e' ? execve(path, argv, envp)
							    : execv(path, argv);
	err = errno;
	free(argv);
	errno = err;
	return rc;
}

int execl(const char *path, const char *arg0, ...)
{
	va_list ap;
	char **argv;

	va_start(ap, arg0);
	argv = va_argv(arg0, ap, NULL);
	va_end(ap);
	return exec_array('v', path, argv, NULL);
}

int execlp(const char *file, const char *arg0, ...)
{
	va_list ap;
	char **argv;

	va_start(ap, arg0);
	argv = va_argv(arg0, ap, NULL);
	va_end(ap);
	return exec_array('p', file, argv, NULL);
}

int execle(const char *path, const char *arg0, ...)
{
	va_list ap;
	char **argv, **envp = NULL;

	va_start(ap, arg0);
	argv = va_argv(arg0, ap, &envp);
	va_end(ap);
	return exec_array('e', path, argv, envp);
}
