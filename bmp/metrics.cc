#include "bmp/metrics.h"

namespace bagd::bmp {

BmpMetrics::BmpMetrics(std::shared_ptr<prometheus::Registry> registry)
    : registry_(std::move(registry)),
      state_(prometheus::BuildGauge()
                 .Name("bagd_bmp_station_state")
                 .Help("BMP station connection: 0 idle, 1 connecting, 2 up, 3 backoff, 4 stopping, 5 stopped")
                 .Register(*registry_)),
      messages_(prometheus::BuildCounter().Name("bagd_bmp_messages_total").Help("BMP messages queued to the station").Register(*registry_)),
      bytes_(prometheus::BuildCounter().Name("bagd_bmp_bytes_total").Help("Octets written to the BMP station").Register(*registry_)),
      drops_(prometheus::BuildCounter()
                 .Name("bagd_bmp_drops_total")
                 .Help("Times the BMP station was dropped for a full send buffer")
                 .Register(*registry_)),
      reconnects_(prometheus::BuildCounter()
                      .Name("bagd_bmp_reconnects_total")
                      .Help("Connections to the BMP station after the first")
                      .Register(*registry_)),
      buffered_(prometheus::BuildGauge()
                    .Name("bagd_bmp_buffered_bytes")
                    .Help("Octets waiting to be written to the BMP station")
                    .Register(*registry_)) {}

void BmpMetrics::Declare(const std::string& station) {
  if (auto it = series_.find(station); it != series_.end()) {
    ++it->second.second;
    return;
  }
  const prometheus::Labels l{{"station", station}};
  series_[station] = {Series{&state_.Add(l), &messages_.Add(l), &bytes_.Add(l), &drops_.Add(l), &reconnects_.Add(l),
                             &buffered_.Add(l)},
                      1};
}

void BmpMetrics::Remove(const std::string& station) {
  auto it = series_.find(station);
  if (it == series_.end() || --it->second.second > 0) return;
  const Series& s = it->second.first;
  state_.Remove(s.state);
  messages_.Remove(s.messages);
  bytes_.Remove(s.bytes);
  drops_.Remove(s.drops);
  reconnects_.Remove(s.reconnects);
  buffered_.Remove(s.buffered);
  series_.erase(it);
}

BmpMetrics::Series* BmpMetrics::Find(const std::string& station) {
  auto it = series_.find(station);
  return it == series_.end() ? nullptr : &it->second.first;
}

void BmpMetrics::SetState(const std::string& station, int state) {
  if (auto* s = Find(station)) s->state->Set(state);
}
void BmpMetrics::Messages(const std::string& station, uint64_t n) {
  if (auto* s = Find(station)) s->messages->Increment(static_cast<double>(n));
}
void BmpMetrics::Bytes(const std::string& station, uint64_t n) {
  if (auto* s = Find(station)) s->bytes->Increment(static_cast<double>(n));
}
void BmpMetrics::Dropped(const std::string& station) {
  if (auto* s = Find(station)) s->drops->Increment();
}
void BmpMetrics::Reconnected(const std::string& station) {
  if (auto* s = Find(station)) s->reconnects->Increment();
}
void BmpMetrics::Buffered(const std::string& station, size_t n) {
  if (auto* s = Find(station)) s->buffered->Set(static_cast<double>(n));
}

}  // namespace bagd::bmp
