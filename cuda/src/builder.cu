// The device build pipeline on CUDA (nvcc). The algorithm is pipeline.inl, shared with the
// TBB build (builder_tbb.cpp) that CI runs without a GPU.
#include "pipeline.inl"
