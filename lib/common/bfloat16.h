// bfloat16: the upper 16 bits of an IEEE float32 (same 8-bit exponent, 7
// mantissa bits), the narrow wire of feature rows and partial sums. Its
// range is float32's, so a sum of rows never overflows where float32 does
// not; it keeps ~3 significant decimal digits (relative error <= 2^-8 after
// round-to-nearest-even).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace gnn {

// Rounds to the nearest bfloat16 (ties to even); NaN stays NaN (quiet).
inline uint16_t FloatToBfloat16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0) {
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);  // NaN: keep it a (quiet) NaN
  }
  const uint32_t lsb = (bits >> 16) & 1u;
  bits += 0x7fffu + lsb;  // round to nearest, ties to even (may carry into the exponent: inf)
  return static_cast<uint16_t>(bits >> 16);
}

inline float Bfloat16ToFloat(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

inline void ToBfloat16(const float* in, size_t n, uint16_t* out) {
  for (size_t i = 0; i < n; ++i) out[i] = FloatToBfloat16(in[i]);
}

inline void FromBfloat16(const uint16_t* in, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = Bfloat16ToFloat(in[i]);
}

}  // namespace gnn
