#include "tools/bagctl/decode_command.h"

#include <iostream>
#include <iterator>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"

namespace bagd::bagctl {

absl::Status ParseDecodeArgs(const std::vector<std::string>& args, DecodeOptions& opts, std::string& hex) {
  for (const std::string& a : args) {
    if (a == "--json") {
      opts.json = true;
    } else if (a == "--four-octet-as") {
      opts.ctx.four_octet_as = true;
    } else if (a == "--two-octet-as") {
      opts.ctx.four_octet_as = false;
    } else if (a == "--extended-message") {
      opts.ctx.extended_message = true;
    } else if (a == "--ebgp") {
      opts.ctx.ebgp = true;
    } else if (a == "--ibgp") {
      opts.ctx.ebgp = false;
    } else if (a == "--add-path") {
      opts.ctx.add_path = {true, true};
    } else if (absl::StartsWith(a, "--add-path=")) {
      opts.ctx.add_path = {false, false};
      for (absl::string_view f : absl::StrSplit(a.substr(11), ',', absl::SkipEmpty())) {
        if (f == "ipv4" || f == "ipv4-unicast") {
          opts.ctx.add_path[0] = true;
        } else if (f == "ipv6" || f == "ipv6-unicast") {
          opts.ctx.add_path[1] = true;
        } else {
          return absl::InvalidArgumentError(absl::StrCat("--add-path: unknown family '", f, "' (ipv4, ipv6)"));
        }
      }
    } else if (absl::StartsWith(a, "--")) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", a));
    } else {
      hex += a;
      hex += '\n';
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<DecodedMessage>> DecodeHexInput(std::string_view hex, const wire::CodecContext& ctx,
                                                           std::string* trailing_error) {
  auto bytes = ParseHex(hex);
  if (!bytes.ok()) return bytes.status();
  SplitResult split = SplitMessages(*bytes);
  if (trailing_error) *trailing_error = split.trailing_error;
  std::vector<DecodedMessage> out;
  out.reserve(split.messages.size());
  for (auto& raw : split.messages) {
    DecodedMessage d;
    auto res = wire::DecodeMessage(raw.bytes, ctx);
    if (res.ok()) {
      d.message = std::move(res).value();
    } else {
      d.error = res.error();
    }
    d.raw = std::move(raw);
    out.push_back(std::move(d));
  }
  return out;
}

int RunDecode(const std::vector<std::string>& args, std::istream& in, std::ostream& out, std::ostream& err) {
  DecodeOptions opts;
  opts.ctx.ebgp = false;  // show every attribute; --ebgp applies the eBGP-only discards
  std::string hex;
  if (auto st = ParseDecodeArgs(args, opts, hex); !st.ok()) {
    err << "bagctl decode: " << st.message() << "\n";
    return kExitUsage;
  }
  if (hex.empty()) hex.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  std::string trailing;
  auto decoded = DecodeHexInput(hex, opts.ctx, &trailing);
  if (!decoded.ok()) {
    err << "bagctl decode: " << decoded.status().message() << "\n";
    return kExitUsage;
  }
  if (decoded->empty() && trailing.empty()) {
    err << "bagctl decode: no BGP message in the input\n";
    return kExitUsage;
  }
  bool bad = !trailing.empty();
  for (const auto& d : *decoded) bad |= d.malformed();
  if (opts.json) {
    nlohmann::json doc = {{"messages", nlohmann::json::array()}};
    for (const auto& d : *decoded) doc["messages"].push_back(MessageToJson(d, opts.ctx));
    doc["malformed"] = bad;
    doc["trailing_error"] = trailing.empty() ? nlohmann::json(nullptr) : nlohmann::json(trailing);
    // Peers send arbitrary bytes in FQDN and shutdown messages: never let bad UTF-8 abort.
    out << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    for (size_t i = 0; i < decoded->size(); ++i) out << MessageToText((*decoded)[i], opts.ctx, i + 1);
    if (!trailing.empty()) out << "error: " << trailing << "\n";
  }
  return bad ? kExitMalformed : kExitOk;
}

}  // namespace bagd::bagctl
