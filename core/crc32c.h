/*
 * crc32c.h - CRC-32C (Castagnoli: polynomial 0x1EDC6F41, reflected 0x82F63B78, initial value and
 * final xor 0xFFFFFFFF), the checksum of Prometheus' remote-read frames (storage/remote/chunked.go)
 * and of its TSDB files. zlib has only the IEEE polynomial. Table-driven, 8 bytes at a time
 * ("slicing by 8"); the tables are built once, thread-safely.
 *
 * Check value: ps_crc32c(0, "123456789", 9) == 0xe3069283.
 */
#ifndef PS_CORE_CRC32C_H
#define PS_CORE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/** Continues crc (0 to start) over p[0..n): ps_crc32c(ps_crc32c(0, a, x), b, y) is the CRC of a
 *  followed by b. */
uint32_t ps_crc32c(uint32_t crc, const void *p, size_t n);

#endif
