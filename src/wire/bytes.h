/* Big-endian, alignment-safe loads and stores for wire-format fields. */
#ifndef SS_WIRE_BYTES_H
#define SS_WIRE_BYTES_H

#include <stdint.h>
#include <string.h>

/*
 * All four work on any byte address (no alignment needed) and convert
 * between network (big-endian) byte order on the wire and host-order
 * integers.
 */
static inline uint16_t ss_rd16(const uint8_t *p)
{
	return (uint16_t)((uint16_t)p[0] << 8 | (uint16_t)p[1]);
}

static inline uint32_t ss_rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* The stores as one byte swap and one store where the host is
 * little-endian: byte by byte, gcc's store merging may gather a run of
 * them into a wide value built a byte at a time. */
static inline void ss_wr16(uint8_t *p, uint16_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap16(v);
	memcpy(p, &v, 2);
#else
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
#endif
}

static inline void ss_wr32(uint8_t *p, uint32_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap32(v);
	memcpy(p, &v, 4);
#else
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
#endif
}

#endif /* SS_WIRE_BYTES_H */
