// SPDX-License-Identifier: MIT
#include "harm.h"

const struct itest t_torture_tests[] = {
	{ NULL, NULL, 0 },
};
