// The extension module ribbon._ribbon (the package's public API is re-exported by
// python/ribbon/__init__.py).
#include "bindings.hpp"
#include "errors.hpp"

NB_MODULE(_ribbon, m) {
  m.doc() = "Static Ribbon filters: the ribbon C++ library's builders, readers and file format.";
  m.attr("__version__") = RIBBON_VERSION;
#if defined(RIBBON_PYTHON_WITH_CUDA)
  m.attr("has_cuda") = true;
#else
  m.attr("has_cuda") = false;
#endif
  ribbon::python::register_errors(m);
  bind_keys(m);
  bind_filter(m);
  bind_many(m);
  bind_sets(m);
  bind_bulk(m);
  bind_distributed(m);
}
