// The device build pipeline on Thrust's TBB backend (g++, THRUST_DEVICE_SYSTEM_TBB and
// RIBBON_GPU_ON_TBB set by CMake): the same algorithm as builder.cu, run on CPU threads, so
// that machines without a GPU test the pipeline's logic byte for byte.
#if !defined(RIBBON_GPU_ON_TBB)
#error "builder_tbb.cpp is the TBB backend: compile it with RIBBON_GPU_ON_TBB"
#endif
#include "pipeline.inl"
