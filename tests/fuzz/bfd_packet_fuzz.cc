// Fuzz target: the BFD control packet decoder (bfd/packet.h), and the session state machine
// fed with whatever decodes. Properties: no crash; a decoded packet encodes to 24 octets that
// decode to the same value; a step never sends a packet with both P and F.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "bfd/packet.h"
#include "bfd/session_fsm.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace bagd::bfd;
  DropReason reason = DropReason::kNone;
  auto packet = Decode(std::span<const uint8_t>(data, size), &reason);
  if (!packet.ok()) {
    if (reason == DropReason::kNone) std::abort();  // every error names its reason
    return 0;
  }
  const auto bytes = Encode(*packet);
  auto again = Decode(bytes);
  if (bytes.size() != kMinLength || !again.ok() || !(*again == *packet)) std::abort();
  // The packet as the peer's, against a session in each state the handshake reaches.
  SessionConfig config;
  config.detect_mult = static_cast<uint8_t>(size % 4 + 1);
  config.passive = (size & 1) != 0;
  Session s = NewSession(config, 0x1234, 1'000'000);
  ControlPacket down;
  down.state = State::kDown;
  down.detect_mult = 3;
  down.my_discriminator = packet->my_discriminator;
  down.desired_min_tx_us = 100'000;
  down.required_min_rx_us = 100'000;
  for (int round = 0; round < 3; ++round) {
    const Output out = StepInPlace(s, Event::Receive(*packet, 1'000'000 + round * 1000, 0.8));
    for (const auto& p : out.send) {
      if (p.poll && p.final) std::abort();
    }
    StepInPlace(s, Event::Of(EventType::kTransmitTimer, s.next_tx_us == kNever ? 0 : s.next_tx_us, 0.9));
    StepInPlace(s, Event::Of(EventType::kDetectTimer, s.detect_at_us == kNever ? 0 : s.detect_at_us));
    StepInPlace(s, Event::Receive(down, 2'000'000 + round, 1.0));
  }
  return 0;
}
