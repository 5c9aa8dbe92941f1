// The ribbon command-line tool. Exit status: 0 success, 1 a negative answer (query: no key
// positive; verify: keys missing; bench: false negatives), 2 an error.
#include <cstdio>
#include <exception>
#include <functional>
#include <new>
#include <string>
#include <system_error>

#include "commands.hpp"
#include "ribbon/error.hpp"
#include "ribbon/version.hpp"

namespace {

/// `ribbon --version`: the release, then the format versions read and written (as the C ABI's
/// ribbon_format_versions and `java -jar ribbon.jar --version` say them).
std::string version_text() {
  constexpr ribbon::release_info release = ribbon::release();
  return std::string(release.version) + "\nformat versions: reads " +
         std::to_string(release.oldest_read_format) + "-" +
         std::to_string(release.newest_read_format) + ", writes " +
         std::to_string(release.oldest_written_format) + "-" +
         std::to_string(release.newest_written_format);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ribbon: static Ribbon filters built in bulk"};
  app.require_subcommand(1);
  app.set_version_flag("--version", version_text());
  const std::pair<const char*, std::function<int()>> commands[] = {
      {"build", ribbon::cli::add_build_command(app)},
      {"query", ribbon::cli::add_query_command(app)},
      {"info", ribbon::cli::add_info_command(app)},
      {"verify", ribbon::cli::add_verify_command(app)},
      {"bench", ribbon::cli::add_bench_command(app)},
      {"lake", ribbon::cli::add_lake_command(app)},
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    for (const auto& [name, run] : commands) {
      if (app.got_subcommand(name)) return run();
    }
  } catch (const ribbon::error& e) {
    std::fprintf(stderr, "ribbon: %s\n", e.what());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "ribbon: out of memory\n");
  } catch (const std::system_error& e) {
    std::fprintf(stderr, "ribbon: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ribbon: internal error: %s\n", e.what());
  }
  return 2;
}
