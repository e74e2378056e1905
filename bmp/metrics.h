// Prometheus series of the BMP stations (docs/bmp.md):
//   bagd_bmp_station_state{station}                 gauge: 0 idle, 1 connecting, 2 up, 3 backoff, 4 stopping, 5 stopped
//   bagd_bmp_messages_total{station}                counter: BMP messages queued to the station
//   bagd_bmp_bytes_total{station}                   counter: octets written to it
//   bagd_bmp_drops_total{station}                   counter: dropped for a full send buffer
//   bagd_bmp_reconnects_total{station}              counter: connections after the first
//   bagd_bmp_buffered_bytes{station}                gauge: octets waiting to be written (at each sync slice)
#pragma once

#include <map>
#include <memory>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace bagd::bmp {

class BmpMetrics {
 public:
  explicit BmpMetrics(std::shared_ptr<prometheus::Registry> registry);
  void Declare(const std::string& station);
  void Remove(const std::string& station);
  void SetState(const std::string& station, int state);
  void Messages(const std::string& station, uint64_t n);
  void Bytes(const std::string& station, uint64_t n);
  void Dropped(const std::string& station);
  void Reconnected(const std::string& station);
  void Buffered(const std::string& station, size_t n);

 private:
  struct Series {
    prometheus::Gauge* state;
    prometheus::Counter* messages;
    prometheus::Counter* bytes;
    prometheus::Counter* drops;
    prometheus::Counter* reconnects;
    prometheus::Gauge* buffered;
  };
  Series* Find(const std::string& station);
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Gauge>& state_;
  prometheus::Family<prometheus::Counter>& messages_;
  prometheus::Family<prometheus::Counter>& bytes_;
  prometheus::Family<prometheus::Counter>& drops_;
  prometheus::Family<prometheus::Counter>& reconnects_;
  prometheus::Family<prometheus::Gauge>& buffered_;
  // A station replaced by a reload (same address and port) overlaps its successor while it
  // sends its Termination: the series go when the last of them does.
  std::map<std::string, std::pair<Series, int>> series_;
};

}  // namespace bagd::bmp
