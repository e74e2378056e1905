// `bagctl show bmp`: the stations' table and the block under it, from a hand-made answer.
#include <catch2/catch.hpp>

#include "tools/bagctl/bmp_render.h"

TEST_CASE("bagctl show bmp: the stations, their counters and the send buffer", "[control][bmp]") {
  bagd::control::v1::ListBmpStationsResponse r;
  CHECK(bagd::bagctl::RenderBmpStations(r, 0) == "No BMP stations are configured.\n");
  auto& up = *r.add_stations();
  up.set_name("192.0.2.9:1790");
  up.set_state("up");
  up.add_views("pre-policy");
  up.add_views("adj-rib-out-post");
  up.set_up_since_unix_ms(1000);
  up.set_syncing(true);
  up.set_messages(1234);
  up.set_bytes(3 << 20);
  up.set_drops(1);
  up.set_connects(3);
  up.set_reconnects(2);
  up.set_failures(2);
  up.set_syncs_done(2);
  up.set_buffered_bytes(16 << 20);
  up.set_max_buffer_bytes(64 << 20);
  up.set_longest_slice_seconds(0.0042);
  up.set_statistics_interval_seconds(60);
  auto& down = *r.add_stations();
  down.set_name("[2001:db8::9]:1790");
  down.set_state("backoff");
  down.add_views("loc-rib");
  down.set_max_buffer_bytes(64 << 20);
  down.set_last_error("connect: Connection refused");
  CHECK(bagd::bagctl::RenderBmpStations(r, 1000 + 125000) ==
        "Station             State      Up     Messages  Sent     Drops  Reconnects  Buffered  Views\n"
        "192.0.2.9:1790      up (sync)  2m05s  1234      3.0 MiB  1      2           16.0 MiB  pre-policy,adj-rib-out-post\n"
        "[2001:db8::9]:1790  backoff    -      0         0 B      0      0           0 B       loc-rib\n"
        "\n"
        "192.0.2.9:1790: 3 connections, 2 full table syncs (re-syncs after a drop or reconnect included), 2 failures\n"
        "  send buffer 16.0 MiB of 64.0 MiB (25.0 %), longest table-walk task 4.2 ms, statistics every 60 s\n"
        "\n"
        "[2001:db8::9]:1790: 0 connections, 0 full table syncs (re-syncs after a drop or reconnect included), 0 failures\n"
        "  send buffer 0 B of 64.0 MiB (0.0 %), longest table-walk task 0.0 ms, statistics off\n"
        "  last error: connect: Connection refused\n");
}
