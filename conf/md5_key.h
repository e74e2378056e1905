// The TCP MD5 signature key (RFC 2385) of a neighbor, inline or from a file.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "conf/bagd.pb.h"

namespace bagd::conf {

// The key in a password file: its one line, without the trailing newline. Errors say what
// is wrong with the file (missing, unreadable, empty, several lines, over 80 octets) and
// never contain key material.
absl::StatusOr<std::string> ReadMd5KeyFile(const std::string& path);

// The neighbor's key: `password`, else the contents of `password_file`, else "" (no TCP
// MD5). Reads the file on every call: called when a socket is set up, a rotated key file
// is picked up on the next connection.
absl::StatusOr<std::string> NeighborMd5Key(const bagd::config::v1::Neighbor& neighbor);

}  // namespace bagd::conf
