/* Wick SDK: float16 and bfloat16 conversions (round to nearest even), shared
 * by the core and every kernel so all agree bit for bit. */
#ifndef WICK_SDK_HALF_H
#define WICK_SDK_HALF_H

#include <stdint.h>
#include <string.h>

static inline float wk_bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
/* Written as a select, not a branch, so loops over arrays vectorise. */
static inline uint16_t wk_f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16, quiet = (u >> 16) | 0x40u; /* NaN: quieted */
  return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
}
static inline float wk_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, u;
  if (exp == 0) {
    if (man == 0) {
      u = sign;
    } else { /* subnormal: renormalise */
      exp = 127 - 15 + 1;
      while (!(man & 0x400u)) { man <<= 1; exp--; }
      man &= 0x3ffu;
      u = sign | (exp << 23) | (man << 13);
    }
  } else if (exp == 31) {
    u = sign | 0x7f800000u | (man << 13);
  } else {
    u = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline uint16_t wk_f32_to_f16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);        /* NaN */
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);        /* overflow -> inf */
  if (a < 0x38800000u) {                                          /* subnormal or zero */
    if (a < 0x33000000u) return (uint16_t)sign;                   /* rounds to 0 */
    uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e;                                     /* 14..24 */
    uint32_t half = 1u << (shift - 1), rem = m & ((1u << shift) - 1), r = m >> shift;
    if (rem > half || (rem == half && (r & 1u))) r++;
    return (uint16_t)(sign | r);
  }
  uint32_t r = a + 0xfffu + ((a >> 13) & 1u);                     /* round mantissa */
  r -= 0x38000000u;                                               /* rebias 127 -> 15 */
  return (uint16_t)(sign | (r >> 13));
}

#endif
