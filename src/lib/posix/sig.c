/* sig.c - POSIX layer signal interception: wraps the application's handlers so a blocking call knows whether SA_RESTART applies. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <ucontext.h>

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

static bool fault_sig(int sig);
static int fault_sigaction(int sig, const struct sigaction *act, struct sigaction *oact);

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
	if (fault_sig(sig) && __atomic_load_n(&ssp_fault_ready, __ATOMIC_ACQUIRE)) {
		rc = fault_sigaction(sig, act, oact);
		err = errno;
		spin_unlock();
		pthread_sigmask(SIG_SETMASK, &saved, NULL);
		errno = err;
		return rc;
	}
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

/* -------------------------------------------------- faults (EFAULT) */

__thread sigjmp_buf *ssp_fault_jmp __attribute__((tls_model("initial-exec")));
int ssp_fault_ready;
/* The program's action for SIGSEGV and SIGBUS once the layer's handler is
 * in the kernel: what sigaction() reports, and its handler and flags as
 * the layer's handler reads them. */
static struct sigaction fault_app[NSIG];
static plain_fn fault_fn[NSIG]; /* the handler (sa_handler's view of it) */
static info_fn fault_info[NSIG]; /* the same, sa_sigaction's view */
static int fault_flags[NSIG];
static pthread_once_t fault_once = PTHREAD_ONCE_INIT;

static bool fault_sig(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS;
}

/* The program's action @a for fault signal @sig, as the handler reads it
 * (spin lock held). */
static void fault_set(int sig, const struct sigaction *a)
{
	plain_fn fn = a->sa_handler; /* the union: sa_sigaction too */

	fault_app[sig] = *a;
	__atomic_store_n(&fault_info[sig], a->sa_sigaction, __ATOMIC_RELAXED);
	__atomic_store_n(&fault_flags[sig], a->sa_flags, __ATOMIC_RELAXED);
	__atomic_store_n(&fault_fn[sig], fn, __ATOMIC_RELEASE);
}

/* Not a fault of a guarded copy: what the program asked for. */
static void fault_chain(int sig, siginfo_t *si, void *uc)
{
	plain_fn fn = __atomic_load_n(&fault_fn[sig], __ATOMIC_ACQUIRE);
	int flags = __atomic_load_n(&fault_flags[sig], __ATOMIC_RELAXED);
	bool sent = !si || si->si_code <= 0; /* kill(), raise(): not a fault */

	if (fn == SIG_IGN && sent)
		return;
	if (fn == SIG_DFL || fn == SIG_IGN) {
		/* The default action: for a fault, when the instruction runs
		 * again; a sent signal again, pending until we return. */
		struct sigaction d;

		memset(&d, 0, sizeof(d));
		d.sa_handler = SIG_DFL;
		real_sigaction(sig, &d, NULL);
		if (sent)
			raise(sig);
		return;
	}
	if (flags & SA_RESETHAND) {
		__atomic_store_n(&fault_fn[sig], SIG_DFL, __ATOMIC_RELAXED);
		__atomic_store_n(&fault_flags[sig], 0, __ATOMIC_RELAXED);
		fault_app[sig].sa_handler = SIG_DFL;
		fault_app[sig].sa_flags = 0;
	}
	note(flags & SA_RESTART ? NOTE_RESTART : NOTE_EINTR);
	if (flags & SA_SIGINFO)
		__atomic_load_n(&fault_info[sig], __ATOMIC_RELAXED)(sig, si, uc);
	else
		fn(sig);
}

static void fault_handler(int sig, siginfo_t *si, void *uc)
{
	sigjmp_buf *jb = ssp_fault_jmp;

	if (jb && si && si->si_code > 0) {
		/* A guarded copy: back to its recovery point, with the signal
		 * mask of the moment of the fault (not the handler's). */
		ssp_fault_jmp = NULL;
		pthread_sigmask(SIG_SETMASK, &((ucontext_t *)uc)->uc_sigmask, NULL);
		siglongjmp(*jb, 1);
	}
	fault_chain(sig, si, uc);
}

/* The kernel's action for fault signal @sig: the layer's handler with the
 * program's flags and mask (SA_ONSTACK, SA_NODEFER act as they would). */
static int fault_install(int sig, const struct sigaction *a)
{
	struct sigaction k = *a;

	k.sa_sigaction = fault_handler;
	k.sa_flags = (a->sa_flags | SA_SIGINFO) & ~SA_RESETHAND;
	return real_sigaction(sig, &k, NULL);
}

static void fault_setup(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS };
	sigset_t all, saved;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &saved);
	spin_lock();
	for (unsigned i = 0; i < 2; i++) {
		int sig = sigs[i];
		struct sigaction old;

		if (real_sigaction(sig, NULL, &old) < 0)
			continue;
		act_unwrap(&old, app_plain[sig], app_info[sig]);
		fault_set(sig, &old);
		fault_install(sig, &old);
	}
	__atomic_store_n(&ssp_fault_ready, 1, __ATOMIC_RELEASE);
	spin_unlock();
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
}

void ssp_fault_init(void)
{
	pthread_once(&fault_once, fault_setup);
}

/* sigaction() of SIGSEGV or SIGBUS once the layer's handler is in place
 * (signals blocked, spin lock held). */
static int fault_sigaction(int sig, const struct sigaction *act, struct sigaction *oact)
{
	struct sigaction old = fault_app[sig];

	if (act) {
		fault_set(sig, act);
		if (fault_install(sig, act) < 0) {
			fault_set(sig, &old);
			return -1;
		}
	}
	if (oact)
		*oact = old;
	return 0;
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
