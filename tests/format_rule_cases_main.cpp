// format_rule_cases DIR: writes format_rule_cases.hpp's files into DIR and DIR/cases.tsv
// (FILE<TAB>accept|reject<TAB>RULE), after checking that this library's reader gives each
// its verdict, for the Java reader's `check-cases` to read.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "file_helpers.hpp"
#include "format_rule_cases.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: format_rule_cases DIR\n";
    return 2;
  }
  const std::string dir = argv[1];
  std::ofstream manifest(dir + "/cases.tsv");
  int wrong = 0;
  for (const ribbon_test::rule_case& c : ribbon_test::format_rule_cases()) {
    const std::string file = c.name + ".rbn";
    ribbon_test::write_bytes(dir + "/" + file, c.bytes.data(), c.bytes.size());
    manifest << file << '\t' << (c.accept ? "accept" : "reject") << '\t' << c.name << '\n';
    const std::string message = ribbon_test::error_message(
        [&] { (void)ribbon::filter::from_bytes(c.bytes.data(), c.bytes.size()); });
    if (message.empty() != c.accept) {
      std::cerr << "C++ reader: " << c.name << ": expected " << (c.accept ? "accept" : "reject")
                << (message.empty() ? "" : ": " + message) << '\n';
      ++wrong;
    }
  }
  manifest.close();
  if (!manifest) {
    std::cerr << "cannot write " << dir << "/cases.tsv\n";
    return 2;
  }
  return wrong == 0 ? 0 : 1;
}
