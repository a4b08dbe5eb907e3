// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of
// TFRecord files (TensorBoard event files) and iSCSI.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gnn {

// The CRC-32C of `size` bytes at `data`; Crc32c("123456789", 9) is
// 0xE3069283. Pure, thread-safe.
uint32_t Crc32c(const void* data, size_t size);

// Continues `crc` (a previous Crc32c result) over more bytes:
// Crc32cExtend(Crc32c(a), b) == Crc32c(a followed by b).
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size);

// TFRecord's masked form (rotated and offset, so that a CRC stored beside
// the data it covers does not checksum to something trivial) and its
// inverse: UnmaskCrc32c(MaskCrc32c(c)) == c.
uint32_t MaskCrc32c(uint32_t crc);
uint32_t UnmaskCrc32c(uint32_t masked);

}  // namespace gnn
