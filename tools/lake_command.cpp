// `ribbon lake ...`: the data-skipping index of a Parquet table (docs/lake.md) is built and
// asked in Python (pyarrow reads the table), so this subcommand hands its arguments, unparsed,
// to ribbon.lake's command line in a Python interpreter: $RIBBON_PYTHON if set, else the
// python3 beside this executable (a virtual environment's bin/, where pip installs `ribbon`),
// else that of the environment whose site-packages holds it (a manylinux wheel's: auditwheel
// moves it to site-packages/ribbon_filter.scripts/, bin/ribbon a script that runs it), else
// python3 on the PATH.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "commands.hpp"
#include "ribbon/error.hpp"

namespace ribbon::cli {
namespace {

/// Imports ribbon.lake and runs it; a missing package is one clear line, not a traceback.
constexpr const char* run_lake = R"py(import sys
try:
    from ribbon.lake import main
except ImportError as e:
    print(f"ribbon lake: this Python ({sys.executable}) cannot import ribbon.lake: {e} "
          "(pip install 'ribbon-filter[arrow]' there, or set RIBBON_PYTHON)", file=sys.stderr)
    sys.exit(2)
sys.exit(main(sys.argv[1:], prog="ribbon lake"))
)py";

std::string python_interpreter() {
  if (const char* chosen = std::getenv("RIBBON_PYTHON"); chosen && *chosen) return chosen;
  std::error_code ignored;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ignored);
  if (!self.empty()) {
    const auto beside = self.parent_path() / "python3";
    if (::access(beside.c_str(), X_OK) == 0) return beside.string();
    // PREFIX/lib/python3.X/site-packages/ribbon_filter.scripts/ribbon: PREFIX/bin/python3.
    const auto prefix = self.parent_path().parent_path().parent_path().parent_path().parent_path();
    const auto environment = prefix / "bin" / "python3";
    if (self.parent_path().filename() == "ribbon_filter.scripts" &&
        ::access(environment.c_str(), X_OK) == 0) {
      return environment.string();
    }
  }
  return "python3";
}

}  // namespace

std::function<int()> add_lake_command(CLI::App& app) {
  CLI::App* lake = app.add_subcommand(
      "lake",
      "Data-skipping indexes of Parquet tables: build, update, query, info (runs ribbon.lake in "
      "Python; `ribbon lake --help` lists its options)");
  lake->set_help_flag();  // --help is ribbon.lake's
  lake->prefix_command();
  lake->allow_extras();
  return [lake]() -> int {
    const std::string python = python_interpreter();
    std::vector<std::string> words = {python, "-c", run_lake};
    for (const std::string& w : lake->remaining()) words.push_back(w);
    std::vector<char*> argv;
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    throw error("ribbon lake runs ribbon.lake in Python, but " + python + " cannot be run: " +
                std::strerror(errno) + " (set RIBBON_PYTHON to a Python with the ribbon package)");
  };
}

}  // namespace ribbon::cli
