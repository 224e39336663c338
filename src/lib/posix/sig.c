/* sig.c - POSIX layer signal interception: wraps the application's handlers so a blocking call knows whether SA_RESTART applies. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>

#include "posix/posix_ext.h"

/*
 * Linux restarts a blocking socket call interrupted by a signal whose
 * handler has SA_RESTART (unless the socket has a timeout for that
 * direction); the layer's waits are poll() calls, which the kernel never
 * restarts.  So every handler the application installs reaches the kernel
 * as one of four wrappers, chosen by the action's style (sa_handler or
 * SA_SIGINFO) and its SA_RESTART bit; the kernel keeps the application's
 * sa_flags and sa_mask exactly (SA_RESETHAND, SA_NODEFER, SA_ONSTACK act
 * as they would).  A wrapper notes in a thread-local which kind ran, then
 * calls the application's handler from the table.  The handler that runs
 * last in a thread is the one the kernel delivered first (each delivery
 * stacks its frame on the previous), which is the one whose SA_RESTART
 * Linux goes by.
 *
 * Old actions are read back from the kernel, so SIG_DFL after an
 * SA_RESETHAND delivery or SIG_IGN set by glibc internally show as they
 * are; a wrapper found there is translated to the application's handler.
 *
 * The table is written before the kernel is told (a signal racing with
 * the change runs the old or the new handler, as on Linux) and never
 * cleared, so a wrapper always finds a handler.  sigaction() is
 * async-signal-safe: the update runs with signals blocked, under a spin
 * lock that no handler of the same thread can be waiting for.
 */

struct ssp_real_ext ssp_real_ext;

#define RESOLVE(name) \
	do { \
		void *p_ = dlsym(RTLD_NEXT, #name); \
		if (p_) \
			memcpy(&ssp_real_ext.name, &p_, sizeof(p_)); \
	} while (0)

static void ext_resolve(void)
{
	RESOLVE(sigaction);
	RESOLVE(sendfile);
	RESOLVE(recvmmsg);
	RESOLVE(sendmmsg);
	RESOLVE(splice);
}

static pthread_once_t ext_once = PTHREAD_ONCE_INIT;

void ssp_ext_init(void)
{
	pthread_once(&ext_once, ext_resolve);
}

/* ------------------------------------------------------------ wrappers */

typedef void (*plain_fn)(int);
typedef void (*info_fn)(int, siginfo_t *, void *);

static plain_fn app_plain[NSIG];
static info_fn app_info[NSIG];
static uint64_t sig_interrupt; /* bit sig-1: siginterrupt(sig, 1) */
static int sig_spin;

enum { NOTE_NONE, NOTE_RESTART, NOTE_EINTR };

/* What the last handler run in this thread had; initial-exec so that a
 * handler never calls into the dynamic linker. */
static __thread int intr_note __attribute__((tls_model("initial-exec")));

static void note(int kind)
{
	__atomic_store_n(&intr_note, kind, __ATOMIC_RELAXED);
}

static void call_plain(int sig)
{
	plain_fn fn = __atomic_load_n(&app_plain[sig], __ATOMIC_ACQUIRE);

	if (fn)
		fn(sig);
}

static void call_info(int sig, siginfo_t *si, void *uc)
{
	info_fn fn = __atomic_load_n(&app_info[sig], __ATOMIC_ACQUIRE);

	if (fn)
		fn(sig, si, uc);
}

static void wrap_plain_restart(int sig)
{
	note(NOTE_RESTART);
	call_plain(sig);
}

static void wrap_plain_eintr(int sig)
{
	note(NOTE_EINTR);
	call_plain(sig);
}

static void wrap_info_restart(int sig, siginfo_t *si, void *uc)
{
	note(NOTE_RESTART);
	call_info(sig, si, uc);
}

static void wrap_info_eintr(int sig, siginfo_t *si, void *uc)
{
	note(NOTE_EINTR);
	call_info(sig, si, uc);
}

bool ssp_intr_restart(void)
{
	return __atomic_exchange_n(&intr_note, NOTE_NONE, __ATOMIC_RELAXED) == NOTE_RESTART;
}

static bool is_plain_wrapper(plain_fn fn)
{
	return fn == wrap_plain_restart || fn == wrap_plain_eintr;
}

static bool is_info_wrapper(info_fn fn)
{
	return fn == wrap_info_restart || fn == wrap_info_eintr;
}

/* ----------------------------------------------------------- sigaction */

static void spin_lock(void)
{
	while (__atomic_exchange_n(&sig_spin, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&sig_spin, __ATOMIC_RELAXED))
			;
}

static void spin_unlock(void)
{
	__atomic_store_n(&sig_spin, 0, __ATOMIC_RELEASE);
}

static int real_sigaction(int sig, const struct sigaction *act, struct sigaction *oact)
{
	if (!ssp_real_ext.sigaction) {
		ssp_ext_init();
		if (!ssp_real_ext.sigaction) {
			errno = ENOSYS;
			return -1;
		}
	}
	return ssp_real_ext.sigaction(sig, act, oact);
}

/* @act with its handler replaced by the matching wrapper (in @k), the
 * application's handler stored; NULL when @act installs no function. */
static const struct sigaction *act_wrap(int sig, const struct sigaction *act,
					struct sigaction *k)
{
	bool restart = act->sa_flags & SA_RESTART;

	/* SIG_DFL and SIG_IGN mean the same with or without SA_SIGINFO. */
	if (act->sa_handler == SIG_DFL || act->sa_handler == SIG_IGN ||
	    act->sa_handler == SIG_ERR)
		return NULL;
	if (act->sa_flags & SA_SIGINFO) {
		info_fn fn = act->sa_sigaction;

		if (is_info_wrapper(fn))
			return NULL;
		__atomic_store_n(&app_info[sig], fn, __ATOMIC_RELEASE);
		*k = *act;
		k->sa_sigaction = restart ? wrap_info_restart : wrap_info_eintr;
		return k;
	}
	if (is_plain_wrapper(act->sa_handler))
		return NULL;
	__atomic_store_n(&app_plain[sig], act->sa_handler, __ATOMIC_RELEASE);
	*k = *act;
	k->sa_handler = restart ? wrap_plain_restart : wrap_plain_eintr;
	return k;
}

/* Show the application's handler where the kernel has a wrapper. */
static void act_unwrap(struct sigaction *oact, plain_fn old_plain, info_fn old_info)
{
	if (is_plain_wrapper(oact->sa_handler))
		oact->sa_handler = old_plain;
	else if (is_info_wrapper(oact->sa_sigaction))
		oact->sa_sigaction = old_info;
}

int ssp_sigaction(int sig, const struct sigaction *act, struct sigaction *oact)
{
	struct sigaction k;
	const struct sigaction *use = act;
	sigset_t all, saved;
	plain_fn old_plain;
	info_fn old_info;
	int rc, err;

	if (sig < 1 || sig >= NSIG)
		return real_sigaction(sig, act, oact); /* EINVAL, as libc words it */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &saved);
	spin_lock();
	old_plain = app_plain[sig];
	old_info = app_info[sig];
	if (act) {
		use = act_wrap(sig, act, &k);
		if (!use)
			use = act;
	}
	rc = real_sigaction(sig, use, oact);
	err = errno;
	if (rc < 0) {
		/* Refused (SIGKILL, a libc-internal signal): table as it was. */
		__atomic_store_n(&app_plain[sig], old_plain, __ATOMIC_RELEASE);
		__atomic_store_n(&app_info[sig], old_info, __ATOMIC_RELEASE);
	} else if (oact) {
		act_unwrap(oact, old_plain, old_info);
	}
	spin_unlock();
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	errno = err;
	return rc;
}

/* ------------------------------------------ signal, sysv_signal, sigset */

static bool interrupt_set(int sig)
{
	return __atomic_load_n(&sig_interrupt, __ATOMIC_RELAXED) & (1ull << (sig - 1));
}

/* signal()-style installation: @handler with @flags, the signal itself
 * blocked in its handler when @block_self. */
static sighandler_t signal_install(int sig, sighandler_t handler, int flags, bool block_self)
{
	struct sigaction act, old;

	if (handler == SIG_ERR || sig < 1 || sig >= NSIG) {
		errno = EINVAL;
		return SIG_ERR;
	}
	memset(&act, 0, sizeof(act));
	act.sa_handler = handler;
	sigemptyset(&act.sa_mask);
	if (block_self)
		sigaddset(&act.sa_mask, sig);
	act.sa_flags = flags;
	if (ssp_sigaction(sig, &act, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* glibc's __bsd_signal: the signal itself blocked in its handler,
 * SA_RESTART unless siginterrupt() asked otherwise. */
sighandler_t ssp_signal(int sig, sighandler_t handler)
{
	if (sig < 1 || sig >= NSIG) {
		errno = EINVAL;
		return SIG_ERR;
	}
	return signal_install(sig, handler, interrupt_set(sig) ? 0 : SA_RESTART, true);
}

/* glibc's __sysv_signal: one-shot, not blocked in its handler, EINTR. */
sighandler_t ssp_sysv_signal(int sig, sighandler_t handler)
{
	int flags = SA_RESETHAND | SA_NODEFER;

#ifdef SA_INTERRUPT
	flags |= SA_INTERRUPT;
#endif
	return signal_install(sig, handler, flags, false);
}

/* glibc's sigset: SIG_HOLD blocks the signal; anything else installs the
 * disposition (no flags) and unblocks it.  SIG_HOLD is returned when the
 * signal was blocked before. */
sighandler_t ssp_sigset(int sig, sighandler_t disp)
{
	struct sigaction act, old;
	sigset_t set, oset;

	if (disp == SIG_ERR || sig < 1 || sig >= NSIG) {
		errno = EINVAL;
		return SIG_ERR;
	}
	sigemptyset(&set);
	sigaddset(&set, sig);
	if (disp == SIG_HOLD) {
		if (sigprocmask(SIG_BLOCK, &set, &oset) < 0)
			return SIG_ERR;
		if (sigismember(&oset, sig))
			return SIG_HOLD;
		if (ssp_sigaction(sig, NULL, &old) < 0)
			return SIG_ERR;
		return old.sa_handler;
	}
	memset(&act, 0, sizeof(act));
	act.sa_handler = disp;
	sigemptyset(&act.sa_mask);
	act.sa_flags = 0;
	if (ssp_sigaction(sig, &act, &old) < 0)
		return SIG_ERR;
	if (sigprocmask(SIG_UNBLOCK, &set, &oset) < 0)
		return SIG_ERR;
	return sigismember(&oset, sig) ? SIG_HOLD : old.sa_handler;
}

/* glibc's siginterrupt: flips SA_RESTART of the current action and
 * remembers the choice for later signal() calls. */
int ssp_siginterrupt(int sig, int flag)
{
	struct sigaction act;

	if (ssp_sigaction(sig, NULL, &act) < 0)
		return -1;
	if (flag) {
		__atomic_fetch_or(&sig_interrupt, 1ull << (sig - 1), __ATOMIC_RELAXED);
		act.sa_flags &= ~SA_RESTART;
	} else {
		__atomic_fetch_and(&sig_interrupt, ~(1ull << (sig - 1)), __ATOMIC_RELAXED);
		act.sa_flags |= SA_RESTART;
	}
	return ssp_sigaction(sig, &act, NULL);
}
