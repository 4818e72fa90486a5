// SPDX-License-Identifier: MIT
#include "harm.h"

const struct itest t_hostile_tests[] = {
	{ NULL, NULL, 0 },
};
