#include "errors.hpp"

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

namespace nb = nanobind;

namespace ribbon::python {
namespace {

PyObject* exception_types[7] = {};

/// A new exception class ribbon.<name> with the given bases, added to `m`.
PyObject* make_exception(nb::module_& m, const char* name, PyObject* bases, const char* doc) {
  const std::string qualified = std::string("ribbon.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  if (type == nullptr) throw nb::python_error();
  m.attr(name) = nb::handle(type);
  return type;
}

}  // namespace

void register_errors(nb::module_& m) {
  PyObject* base = make_exception(m, "Error", PyExc_Exception,
                                  "Base of every ribbon error; carries the C++ library's message.");
  auto derived = [&](const char* name, PyObject* builtin, const char* doc) {
    nb::object bases = nb::make_tuple(nb::handle(base), nb::handle(builtin));
    return make_exception(m, name, bases.ptr(), doc);
  };
  exception_types[static_cast<int>(failure::generic)] = base;
  exception_types[static_cast<int>(failure::options)] =
      derived("OptionsError", PyExc_ValueError, "Invalid build or load options.");
  exception_types[static_cast<int>(failure::file)] = derived(
      "FileError", PyExc_OSError,
      "A filter file or image that cannot be read or written: missing, truncated, corrupt.");
  exception_types[static_cast<int>(failure::keys)] =
      derived("KeysError", PyExc_ValueError, "Keys that cannot be used: nulls, out of range.");
  exception_types[static_cast<int>(failure::query)] = derived(
      "QueryError", PyExc_TypeError,
      "A query that does not fit the filter: the other key kind, or contains() on a retrieval "
      "structure and lookup() on a filter.");
  exception_types[static_cast<int>(failure::key_type)] =
      derived("KeyTypeError", PyExc_TypeError, "Keys of a type that is not supported.");
  exception_types[static_cast<int>(failure::conflicting)] =
      derived("ConflictingValuesError", PyExc_ValueError,
              "A retrieval build given one key twice with two different values.");
}

void raise(failure kind, const std::string& message) {
  PyErr_SetString(exception_types[static_cast<int>(kind)], message.c_str());
  throw nb::python_error();
}

void raise_conflicting(const conflicting_values_error& e) {
  nb::handle type = exception_types[static_cast<int>(failure::conflicting)];
  nb::object error = nb::borrow(type)(e.what());
  error.attr("key_hash") = e.key_hash();
  PyErr_SetObject(type.ptr(), error.ptr());
  throw nb::python_error();
}

void run_interruptibly(const std::function<void()>& work, std::atomic<bool>* cancel) {
  if (cancel == nullptr) {
    nb::gil_scoped_release release;
    work();
    return;
  }
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  std::exception_ptr failed;
  PyObject *signal_type = nullptr, *signal_value = nullptr, *signal_trace = nullptr;
  {
    nb::gil_scoped_release release;
    std::thread worker([&] {
      try {
        work();
      } catch (...) {
        failed = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mutex);
      done = true;
      finished.notify_all();
    });
    std::unique_lock<std::mutex> lock(mutex);
    while (!done) {
      if (finished.wait_for(lock, std::chrono::milliseconds(100), [&] { return done; })) break;
      if (signal_type != nullptr) continue;  // cancelled: wait for the builder to stop
      lock.unlock();
      {
        nb::gil_scoped_acquire acquire;  // Python signal handlers run on the main thread only
        if (PyErr_CheckSignals() != 0) {
          PyErr_Fetch(&signal_type, &signal_value, &signal_trace);
          cancel->store(true, std::memory_order_relaxed);
        }
      }
      lock.lock();
    }
    lock.unlock();
    worker.join();
  }
  if (signal_type != nullptr) {
    PyErr_Restore(signal_type, signal_value, signal_trace);
    throw nb::python_error();
  }
  if (failed) std::rethrow_exception(failed);
}

}  // namespace ribbon::python
