// Numpy arrays the extension returns: made in C++, filled without the GIL, owned by Python.
#pragma once

#include <nanobind/ndarray.h>

#include <cstdint>
#include <memory>

namespace ribbon::python {

/// A new 1-D numpy array of n Ts, filled by fill(pointer) without the GIL.
template <class T, class Fill>
nanobind::ndarray<nanobind::numpy, T, nanobind::ndim<1>> new_array(std::uint64_t n,
                                                                   const Fill& fill) {
  std::unique_ptr<T[]> data(new T[n == 0 ? 1 : n]);
  {
    nanobind::gil_scoped_release release;
    fill(data.get());
  }
  T* raw = data.release();
  nanobind::capsule owner(raw, [](void* p) noexcept { delete[] static_cast<T*>(p); });
  return nanobind::ndarray<nanobind::numpy, T, nanobind::ndim<1>>(
      raw, {static_cast<std::size_t>(n)}, owner);
}

}  // namespace ribbon::python
