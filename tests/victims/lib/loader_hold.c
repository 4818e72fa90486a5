// SPDX-License-Identifier: MIT
/*
 * An LD_AUDIT module that holds a starting process inside its dynamic
 * loader: when the loader begins adding the program's libraries (r_debug's
 * r_state is RT_ADD, libc not yet mapped for the program), it writes one
 * byte to fd 4, then waits for one on fd 3.  Tests use it to catch a
 * process that has not finished starting, with pipes instead of luck.
 */
#define _GNU_SOURCE
#include <link.h>
#include <stdint.h>
#include <unistd.h>

unsigned int la_version(unsigned int version)
{
	(void)version;
	return LAV_CURRENT;
}

void la_activity(uintptr_t *cookie, unsigned int flag)
{
	static int held;
	char c = 'r';

	(void)cookie;
	if (flag != LA_ACT_ADD || held++)
		return;
	if (write(4, &c, 1) == 1 && read(3, &c, 1) < 0)
		c = 0;
	close(3);
	close(4);
}
