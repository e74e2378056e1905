// bagctl: the bagd command-line tool.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "bgpd/version.h"
#include "tools/bagctl/decode_command.h"
#ifdef BAGD_HAVE_CONTROL
#include "tools/bagctl/control_commands.h"
#endif

namespace {

constexpr const char* kUsage = R"(usage: bagctl <command> [args]

commands:
  decode [HEX...] [flags]   decode BGP messages given as hex (arguments, or stdin if none);
                            with or without the 16-octet marker, several back to back.
      --json                JSON output (fields: docs/bagctl-decode.md)
      --four-octet-as       AS numbers are 4 octets (default)
      --two-octet-as        AS numbers are 2 octets (AS4_PATH is merged, RFC 6793)
      --add-path[=ipv4,ipv6]  NLRI carry ADD-PATH path identifiers (default: both)
      --extended-message    allow messages up to 65535 octets (RFC 8654)
      --ebgp                apply eBGP rules (LOCAL_PREF etc. discarded, no confed segments)
    exit status: 0 all accepted, 1 a message is malformed (verdict printed), 2 usage/input error
  --version                 the version and the git commit it was built from
  --help                    this text (on stdout)
)";

void PrintUsage(std::ostream& out) {
  out << kUsage;
#ifdef BAGD_HAVE_CONTROL
  out << "\ncommands that ask a running bagd (control API, docs/control-api.md):\n" << bagd::bagctl::kControlUsage;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    PrintUsage(std::cerr);
    return 2;
  }
  if (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    PrintUsage(std::cout);
    return 0;
  }
  if (args[0] == "--version" || args[0] == "version") {
    std::cout << bagd::VersionLine("bagctl") << "\n";
    return 0;
  }
#ifdef BAGD_HAVE_CONTROL
  if (bagd::bagctl::IsControlCommand(args)) {
    return bagd::bagctl::RunControlCommand(args, std::getenv(bagd::bagctl::kControlSocketEnv), std::cout, std::cerr);
  }
#endif
  const std::string cmd = args[0];
  args.erase(args.begin());
  if (cmd == "decode") return bagd::bagctl::RunDecode(args, std::cin, std::cout, std::cerr);
  std::cerr << "bagctl: unknown command '" << cmd << "'\n";
  PrintUsage(std::cerr);
  return 2;
}
