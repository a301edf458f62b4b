//===- hector/cpu/parallel.h - OpenMP queries of the CPU templates --------===//
//
// The thread count and index the CPU templates size their per-thread buffers with, valid with
// and without OpenMP (a build without it runs every template on one thread).
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_TEMPLATES_CPU_PARALLEL_H
#define HECTOR_TEMPLATES_CPU_PARALLEL_H

#if defined(_OPENMP)
#include <omp.h>
#endif

/// `#pragma GCC unroll N` for the host compiler (nvcc, which also reads the CPU templates in
/// the template checks, has its own unroll pragma).
#define HECTOR_PRAGMA(x) _Pragma(#x)
#if defined(__CUDACC__)
#define HECTOR_UNROLL(n) HECTOR_PRAGMA(unroll n)
#elif defined(__GNUC__) && !defined(__clang__)
#define HECTOR_UNROLL(n) HECTOR_PRAGMA(GCC unroll n)
#else
#define HECTOR_UNROLL(n)
#endif

namespace hector {
namespace tmpl {
namespace cpu {

/// The most threads a following `#pragma omp parallel` region may run.
inline int maxThreadCount() {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

/// The calling thread's index in the current parallel region (0 outside one).
inline int threadIndex() {
#if defined(_OPENMP)
  return omp_get_thread_num();
#else
  return 0;
#endif
}

} // namespace cpu
} // namespace tmpl
} // namespace hector

#endif // HECTOR_TEMPLATES_CPU_PARALLEL_H
