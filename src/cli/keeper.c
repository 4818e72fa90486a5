// SPDX-License-Identifier: MIT
/*
 * keeper.c: a command that may borrow a thread runs in two processes.  The
 * one the user started (the front) forks the worker, which does the whole
 * command and is the tracer, and only waits for it, passing on Ctrl-C and
 * the other stop signals.  Killing the front, SIGKILL included, is then a
 * request to stop, as SIGTERM is: the worker hears of its parent's death
 * (PR_SET_PDEATHSIG), finishes the step it is on, gives the thread back
 * whole and exits.  A SIGKILL of the tracer itself could not be made
 * harmless: the kernel lets a traced thread go from wherever its tracer
 * left it, and an epoll_wait that heapctl's stop interrupted a moment
 * before would return EINTR (docs/design.md, "A killed heapctl").
 *
 * The worker has a process group of its own, so that a kill of the job or
 * of the group (kill %1, timeout -s KILL) reaches the front only; being in
 * a background group never stops it, since it ignores SIGTTOU and SIGTTIN
 * (heapctl reads no terminal).  The front exits as the worker did: with
 * its status, or by the same signal.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

static const int relayed[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

/* The front's life after the fork: wait, pass signals on, end as the worker did. */
static void front(pid_t worker, const sigset_t *set)
{
	struct rlimit none = { 0, 0 };
	sigset_t one;
	int st = 0, sig;

	for (;;) {
		sig = sigwaitinfo(set, NULL);
		if (sig > 0 && sig != SIGCHLD) {
			kill(worker, sig);
			continue;
		}
		if (waitpid(worker, &st, WNOHANG) == worker)
			break;
	}
	if (WIFEXITED(st))
		_exit(WEXITSTATUS(st));
	/* the same death, without a second core file */
	sig = WTERMSIG(st);
	setrlimit(RLIMIT_CORE, &none);
	signal(sig, SIG_DFL);
	sigemptyset(&one);
	sigaddset(&one, sig);
	pthread_sigmask(SIG_UNBLOCK, &one, NULL);
	raise(sig);
	_exit(128 + sig);
}

void cli_keeper(void)
{
	pid_t me = getpid(), worker;
	sigset_t set, old;

	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(relayed) / sizeof(relayed[0]); i++)
		sigaddset(&set, relayed[i]);
	sigaddset(&set, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	fflush(NULL);
	worker = fork();
	if (worker > 0)
		front(worker, &set);
	if (worker == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		/* the front died before that: it was killed before anything began */
		if (getppid() != me)
			_exit(128 + SIGTERM);
		setpgid(0, 0);
		signal(SIGTTOU, SIG_IGN);
		signal(SIGTTIN, SIG_IGN);
	} else {
		cli_log(HC_LOG_DEBUG, "fork: %m; heapctl runs in one process (its SIGKILL may "
				      "leave an interrupted epoll_wait an EINTR)");
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}
