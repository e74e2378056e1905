#include "bmp/station.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <random>

#include "absl/strings/str_format.h"
#include "bmp/metrics.h"

namespace bagd::bmp {

namespace asio = boost::asio;
using asio::ip::tcp;

std::string StationConfig::Name() const {
  return address.is_v6() ? absl::StrFormat("[%s]:%d", address.ToString(), port)
                         : absl::StrFormat("%s:%d", address.ToString(), port);
}

const char* StationStateName(Station::State s) {
  switch (s) {
    case Station::State::kIdle: return "idle";
    case Station::State::kConnecting: return "connecting";
    case Station::State::kUp: return "up";
    case Station::State::kBackoff: return "backoff";
    case Station::State::kStopping: return "stopping";
    case Station::State::kStopped: return "stopped";
  }
  return "?";
}

namespace {
asio::ip::address ToAsio(const net::IpAddress& a) {
  if (a.is_v4()) return asio::ip::address_v4(a.v4());
  asio::ip::address_v6::bytes_type b;
  std::memcpy(b.data(), a.bytes(), 16);
  return asio::ip::address_v6(b);
}
}  // namespace

Station::Station(asio::io_context& io, StationConfig config, Callbacks callbacks, BmpMetrics* metrics)
    : io_(io),
      config_(std::move(config)),
      name_(config_.Name()),
      callbacks_(std::move(callbacks)),
      metrics_(metrics),
      socket_(io),
      timer_(io) {
  if (metrics_) metrics_->Declare(name_);
}

Station::~Station() {
  token_.reset();  // every queued handler sees the watch expired
  boost::system::error_code ignored;
  socket_.close(ignored);
  timer_.cancel();
  if (metrics_) metrics_->Remove(name_);
}

void Station::SetState(State s) {
  if (s == State::kUp && state_ != State::kUp) up_since_ = std::chrono::system_clock::now();
  state_ = s;
  if (metrics_) metrics_->SetState(name_, static_cast<int>(s));
}

void Station::Start() {
  if (state_ != State::kIdle) return;
  Connect();
}

void Station::Connect() {
  SetState(State::kConnecting);
  ++generation_;
  boost::system::error_code ignored;
  socket_.close(ignored);
  socket_ = tcp::socket(io_);
  const tcp::endpoint ep(ToAsio(config_.address), config_.port);
  socket_.async_connect(ep, [this, alive = std::weak_ptr<char>(token_), gen = generation_](boost::system::error_code ec) {
    if (alive.expired() || gen != generation_ || state_ != State::kConnecting) return;
    if (ec) {
      Lost(absl::StrFormat("connect: %s", ec.message()), false);
      return;
    }
    boost::system::error_code opt;
    socket_.set_option(tcp::no_delay(true), opt);
    attempts_ = 0;
    ++counters_.connects;
    if (ever_up_) {
      ++counters_.reconnects;
      if (metrics_) metrics_->Reconnected(name_);
    }
    ever_up_ = true;
    last_error_.clear();
    SetState(State::kUp);
    Read();
    if (callbacks_.up) callbacks_.up();
  });
}

void Station::Read() {
  // RFC 7854 §3.3: the station sends nothing; reading tells a close or a reset apart from a
  // station that is only slow. What it sends anyway is ignored.
  socket_.async_read_some(asio::buffer(read_buffer_),
                          [this, alive = std::weak_ptr<char>(token_), gen = generation_](boost::system::error_code ec, size_t) {
                            if (alive.expired() || gen != generation_) return;
                            if (state_ != State::kUp && state_ != State::kStopping) return;
                            if (ec) {
                              Lost(ec == asio::error::eof ? std::string("the station closed the connection")
                                                          : absl::StrFormat("read: %s", ec.message()),
                                   false);
                              return;
                            }
                            Read();
                          });
}

bool Station::Send(wire::ByteSpan messages) {
  if (state_ != State::kUp) return false;
  if (buffered() + messages.size() > config_.max_buffer_bytes) {
    // A station that does not keep up is dropped, never waited for: its `down` comes from a
    // posted handler (the caller may be in the middle of a table walk).
    ++counters_.drops;
    if (metrics_) metrics_->Dropped(name_);
    Lost(absl::StrFormat("send buffer full (%d octets not written): dropped, re-synced on reconnect", buffered()), true);
    return false;
  }
  pending_.insert(pending_.end(), messages.begin(), messages.end());
  WriteMore();
  return true;
}

void Station::CountMessages(uint64_t n) {
  counters_.messages += n;
  if (metrics_) metrics_->Messages(name_, n);
}

void Station::WriteMore() {
  if (write_in_flight_) return;
  if (written_ == writing_.size()) {
    writing_.clear();
    written_ = 0;
    if (pending_.empty()) return;
    std::swap(writing_, pending_);
  }
  write_in_flight_ = true;
  // At most 1 MiB per write: a completion comes back often enough to let a sync go on.
  const size_t n = std::min<size_t>(writing_.size() - written_, 1u << 20);
  socket_.async_write_some(
      asio::buffer(writing_.data() + written_, n),
      [this, alive = std::weak_ptr<char>(token_), gen = generation_](boost::system::error_code ec, size_t bytes) {
        if (alive.expired()) return;
        if (gen != generation_) return;  // the buffers were reset when that connection ended
        write_in_flight_ = false;
        if (ec) {
          Lost(absl::StrFormat("write: %s", ec.message()), false);
          return;
        }
        written_ += bytes;
        counters_.bytes += bytes;
        if (metrics_) metrics_->Bytes(name_, bytes);
        if (state_ == State::kStopping && buffered() == 0) {
          CloseSocket();
          SetState(State::kStopped);
          return;
        }
        WriteMore();
        if (want_drained_ && below_low_water()) {
          want_drained_ = false;
          if (callbacks_.drained) callbacks_.drained();
        }
      });
}

void Station::CloseSocket() {
  boost::system::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  // The memory of a dropped station goes at once (a full buffer may be tens of MiB).
  wire::Bytes().swap(pending_);
  wire::Bytes().swap(writing_);
  written_ = 0;
  write_in_flight_ = false;
  want_drained_ = false;
}

void Station::Lost(const std::string& why, bool dropped) {
  const bool was_up = state_ == State::kUp || dropped;
  ++generation_;
  CloseSocket();
  last_error_ = why;
  ++counters_.failures;
  if (state_ == State::kStopping || state_ == State::kStopped) {
    SetState(State::kStopped);
    return;
  }
  ScheduleReconnect();
  // Posted: Lost may run inside Send(), in the middle of the monitor's table walk.
  if (was_up && callbacks_.down) {
    asio::post(io_, [this, alive = std::weak_ptr<char>(token_), gen = generation_] {
      // Not when a new connection came since (its `up` resets the monitor's state).
      if (!alive.expired() && gen == generation_ && callbacks_.down) callbacks_.down();
    });
  }
}

void Station::ScheduleReconnect() {
  SetState(State::kBackoff);
  static thread_local std::mt19937 rng{std::random_device{}()};
  const uint32_t shift = std::min<uint32_t>(attempts_, 16);
  const uint64_t base = std::min<uint64_t>(static_cast<uint64_t>(config_.retry_min_ms) << shift, config_.retry_max_ms);
  const auto delay = static_cast<int64_t>(static_cast<double>(base) * std::uniform_real_distribution<double>(0.75, 1.0)(rng));
  ++attempts_;
  timer_.expires_after(std::chrono::milliseconds(delay));
  timer_.async_wait([this, alive = std::weak_ptr<char>(token_), gen = generation_](boost::system::error_code ec) {
    if (ec || alive.expired() || gen != generation_ || state_ != State::kBackoff) return;
    Connect();
  });
}

void Station::Stop(wire::ByteSpan termination, std::chrono::milliseconds grace) {
  if (state_ == State::kStopped || state_ == State::kStopping) return;
  timer_.cancel();
  if (state_ != State::kUp) {
    ++generation_;
    CloseSocket();
    SetState(State::kStopped);
    return;
  }
  pending_.insert(pending_.end(), termination.begin(), termination.end());
  SetState(State::kStopping);
  WriteMore();
  timer_.expires_after(grace);
  timer_.async_wait([this, alive = std::weak_ptr<char>(token_)](boost::system::error_code ec) {
    if (ec || alive.expired() || state_ != State::kStopping) return;
    ++generation_;
    CloseSocket();
    SetState(State::kStopped);
  });
}

}  // namespace bagd::bmp
