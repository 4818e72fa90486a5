// SPDX-License-Identifier: MIT
/*
 * pb.c: the protobuf wire format, just what profile.proto needs
 * (https://protobuf.dev/programming-guides/encoding/): varints, keys,
 * length-delimited fields and packed repeated varints; and gzip through
 * zlib.  Negative int64 values are sent as 10-byte two's complement
 * varints, as protobuf does for int64 (not zigzag, which is sint64).
 */
#include <string.h>
#include <zlib.h>

#include "prof_int.h"

enum { PB_VARINT = 0, PB_LEN = 2 };

void pb_varint(struct pbuf *b, uint64_t v)
{
	unsigned char tmp[10];
	size_t n = 0;

	do {
		tmp[n] = (unsigned char)(v & 0x7f);
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	pbuf_add(b, tmp, n);
}

void pb_key(struct pbuf *b, unsigned field, unsigned wiretype)
{
	pb_varint(b, (uint64_t)field << 3 | wiretype);
}

void pb_uint(struct pbuf *b, unsigned field, uint64_t v)
{
	if (!v)
		return;
	pb_key(b, field, PB_VARINT);
	pb_varint(b, v);
}

void pb_int(struct pbuf *b, unsigned field, int64_t v)
{
	if (!v)
		return;
	pb_key(b, field, PB_VARINT);
	pb_varint(b, (uint64_t)v);
}

void pb_bytes(struct pbuf *b, unsigned field, const void *data, size_t len)
{
	pb_key(b, field, PB_LEN);
	pb_varint(b, len);
	pbuf_add(b, data, len);
}

void pb_str(struct pbuf *b, unsigned field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

void pb_packed(struct pbuf *b, unsigned field, const uint64_t *v, size_t n)
{
	struct pbuf tmp = { 0 };
	size_t i;

	if (!n)
		return;
	for (i = 0; i < n; i++)
		pb_varint(&tmp, v[i]);
	if (tmp.oom)
		b->oom = true;
	else
		pb_bytes(b, field, tmp.p, tmp.len);
	pbuf_free(&tmp);
}

int pb_gzip(const void *in, size_t len, struct pbuf *out)
{
	unsigned char chunk[1 << 15];
	z_stream z;
	int rc;

	memset(&z, 0, sizeof(z));
	/* 15 window bits + 16: a gzip header and trailer instead of zlib's. */
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -1;
	z.next_in = (unsigned char *)(uintptr_t)in;
	do {
		size_t step = len > (1u << 30) ? (1u << 30) : len;

		z.avail_in = (uInt)step;
		len -= step;
		do {
			z.next_out = chunk;
			z.avail_out = sizeof(chunk);
			rc = deflate(&z, len ? Z_NO_FLUSH : Z_FINISH);
			if (rc == Z_STREAM_ERROR) {
				deflateEnd(&z);
				return -1;
			}
			pbuf_add(out, chunk, sizeof(chunk) - z.avail_out);
		} while (z.avail_out == 0);
	} while (len);
	deflateEnd(&z);
	return out->oom ? -1 : 0;
}
