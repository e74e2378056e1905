// A real ControlServer on a temporary Unix socket around a test backend, and clients for it.
#pragma once

#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>
#include <memory>

#include "bgpd/control/control.grpc.pb.h"
#include "bgpd/control/control_client.h"
#include "bgpd/control/control_server.h"
#include "tests/control/fake_backend.h"

namespace bagd::control::testing {

template <typename Backend>
struct Serving {
  TempDir dir;
  Backend backend;
  std::unique_ptr<ControlServer> server;

  explicit Serving(ControlServerOptions options = {}) {
    auto started = ControlServer::Start(dir.SocketPath(), &backend, options);
    REQUIRE(started.ok());
    server = *std::move(started);
  }

  std::unique_ptr<ControlClient> Client() {
    auto client = ControlClient::Connect(dir.SocketPath());
    REQUIRE(client.ok());
    return *std::move(client);
  }

  // A bare stub, for requests ControlClient would refuse to send.
  std::unique_ptr<v1::Control::Stub> RawStub() {
    return v1::Control::NewStub(grpc::CreateChannel("unix:" + dir.SocketPath(), grpc::InsecureChannelCredentials()));
  }
};

}  // namespace bagd::control::testing
