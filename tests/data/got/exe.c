// SPDX-License-Identifier: MIT
/* A non-PIE executable (linked at 0x400000) that calls malloc and free through its PLT. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	char *p = malloc((size_t)argc * 16);

	snprintf(p, 16, "%s", argv[0]);
	puts(p);
	free(p);
	return 0;
}
