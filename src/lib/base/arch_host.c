// SPDX-License-Identifier: MIT
#include "arch.h"

const struct hc_arch *hc_arch_host(void)
{
#if defined(__x86_64__)
	return &hc_arch_x86_64;
#elif defined(__aarch64__)
	return &hc_arch_aarch64;
#else
#error "unsupported host architecture"
#endif
}
