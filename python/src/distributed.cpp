// Bindings of the engine-neutral distributed build steps (ribbon.distributed).
#include <nanobind/nanobind.h>

void bind_distributed(nanobind::module_& m);

void bind_distributed(nanobind::module_& /*m*/) {}
