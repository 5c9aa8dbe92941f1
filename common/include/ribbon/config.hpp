/// @file config.hpp
/// Project-wide macros. Every function that a GPU kernel may call is marked RIBBON_HD.
#pragma once

#if defined(__CUDACC__)
/// Host+device qualifier: `__host__ __device__` under nvcc, nothing under a host compiler.
#define RIBBON_HD __host__ __device__
#else
#define RIBBON_HD
#endif

#if defined(__GNUC__) || defined(__clang__)
#define RIBBON_FORCE_INLINE inline __attribute__((always_inline))
#define RIBBON_LIKELY(x) __builtin_expect(!!(x), 1)
#define RIBBON_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define RIBBON_NOINLINE __attribute__((noinline))
#else
#define RIBBON_FORCE_INLINE inline
#define RIBBON_LIKELY(x) (x)
#define RIBBON_UNLIKELY(x) (x)
#define RIBBON_NOINLINE
#endif

/// Unrolls the loop that follows (small loops with a constant trip count, whose per-iteration
/// variables should live in registers).
#if defined(__CUDA_ARCH__) || (defined(__clang__) && !defined(__CUDACC__))
#define RIBBON_UNROLL _Pragma("unroll")
#elif defined(__GNUC__) && !defined(__CUDACC__)  // nvcc's host pass knows no GCC pragma
#define RIBBON_UNROLL _Pragma("GCC unroll 8")
#else
#define RIBBON_UNROLL
#endif

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ribbon's file format is read in place and requires a little-endian target"
#endif
