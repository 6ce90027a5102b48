/* cpu plugin: the per-ISA builds of simd_kernels.h and the choice between
 * them (see simd.h). One source, compiled here three times under GCC target
 * pragmas; nothing outside the chosen functions uses AVX, so the plugin loads
 * and runs on any x86-64 CPU. Other compilers and architectures build the
 * baseline only. */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "simd.h"

/* No a * b + c contracted into an FMA in one variant and not in another: the
 * variants must agree bit for bit. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CPU_SIMD_X86 1
#endif

#ifdef CPU_SIMD_X86
#include <immintrin.h>
#define SIMD_ISA_NAME "sse2"
#define SIMD_LEVEL 1
#else
#define SIMD_ISA_NAME "generic"
#define SIMD_LEVEL 0
#endif
#define SIMD_SUF base
#include "simd_kernels.h"
#undef SIMD_SUF
#undef SIMD_ISA_NAME
#undef SIMD_LEVEL

#ifdef CPU_SIMD_X86
#pragma GCC push_options
#pragma GCC target("avx2")
#define SIMD_ISA_NAME "avx2"
#define SIMD_LEVEL 2
#define SIMD_SUF avx2
#include "simd_kernels.h"
#undef SIMD_SUF
#undef SIMD_ISA_NAME
#undef SIMD_LEVEL
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq,prefer-vector-width=512")
#define SIMD_ISA_NAME "avx512"
#define SIMD_LEVEL 3
#define SIMD_SUF avx512
#include "simd_kernels.h"
#undef SIMD_SUF
#undef SIMD_ISA_NAME
#undef SIMD_LEVEL
#pragma GCC pop_options
#endif

const cpu_simd_table *cpu_simd = &simd_table_base;

wk_status cpu_simd_init(void) {
  const cpu_simd_table *best = &simd_table_base;
#ifdef CPU_SIMD_X86
  bool has_avx2, has_avx512;
  __builtin_cpu_init();
  /* libgcc's checks include the OS saving the ymm / zmm state (XGETBV) */
  has_avx2 = __builtin_cpu_supports("avx2");
  has_avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
  best = has_avx512 ? &simd_table_avx512 : has_avx2 ? &simd_table_avx2 : &simd_table_base;
#endif
  const char *want = getenv("WICK_CPU_ISA");
  if (!want || !*want) {
    cpu_simd = best;
    return WK_OK;
  }
  if (strcmp(want, "sse2") == 0 || strcmp(want, simd_table_base.isa) == 0) {
    cpu_simd = &simd_table_base;
    return WK_OK;
  }
  if (strcmp(want, "avx2") != 0 && strcmp(want, "avx512") != 0)
    return wk_error(WK_ERR_INVALID_ARG, "cpu: WICK_CPU_ISA='%s' is not one of sse2, avx2, avx512", want);
#ifdef CPU_SIMD_X86
  if (strcmp(want, "avx2") == 0 && has_avx2) {
    cpu_simd = &simd_table_avx2;
    return WK_OK;
  }
  if (strcmp(want, "avx512") == 0 && has_avx512) {
    cpu_simd = &simd_table_avx512;
    return WK_OK;
  }
  return wk_error(WK_ERR_UNSUPPORTED, "cpu: WICK_CPU_ISA=%s, but this CPU does not run it (%s)", want,
                  strcmp(want, "avx2") == 0 ? "no avx2" : "needs avx512f, avx512vl, avx512bw and avx512dq");
#else
  return wk_error(WK_ERR_UNSUPPORTED, "cpu: WICK_CPU_ISA=%s, but this build has only the generic loops", want);
#endif
}
