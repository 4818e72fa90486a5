// SPDX-License-Identifier: MIT
/*
 * json.c: hc_json_str(), the one JSON string writer of the CLI's --json
 * output and the report's JSON.  Pure code.
 *
 * What goes in is bytes, not text: a path, a process name, a symbol or a
 * frame label the profile made up.  So the output is valid JSON (RFC 8259)
 * and valid UTF-8 whatever they hold: valid UTF-8 passes through, each
 * byte of an invalid sequence becomes U+FFFD, as docs/cli.md promises.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <heapctl/heapctl.h>

/*
 * Length of the valid UTF-8 sequence at s, or 0: overlong forms, UTF-16
 * surrogates and code points past U+10FFFF are not valid (RFC 3629).  A
 * sequence cut short by the terminating NUL stops at it, which is no
 * continuation byte, so nothing past the string is read.
 */
static size_t utf8_len(const unsigned char *s)
{
	size_t n, i;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0) {
		n = 2;
		cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		n = 3;
		cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		n = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void hc_json_str(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");

	putc('"', f);
	while (*s) {
		const unsigned char *run = s;
		size_t n;

		/* Most names are printable ASCII: write them in one go. */
		while (*s >= 0x20 && *s < 0x7f && *s != '"' && *s != '\\')
			s++;
		if (s > run)
			fwrite(run, 1, (size_t)(s - run), f);
		if (!*s)
			break;
		if (*s == '"' || *s == '\\') {
			putc('\\', f);
			putc(*s, f);
			s++;
		} else if (*s < 0x20 || *s == 0x7f) {
			/* JSON's short forms where it has them, as most encoders write */
			const char *esc = strchr("\bb\tt\nn\ff\rr", *s);

			if (esc && *s)
				fprintf(f, "\\%c", esc[1]);
			else
				fprintf(f, "\\u%04x", *s);
			s++;
		} else if ((n = utf8_len(s))) {
			fwrite(s, 1, n, f);
			s += n;
		} else {
			fputs("\\ufffd", f);
			s++;
		}
	}
	putc('"', f);
}
