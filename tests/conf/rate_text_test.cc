// conf/rate_text.h: ParseRate and FormatRate.
#include "conf/rate_text.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>

using namespace bagd::conf;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

TEST_CASE("ParseRate accepts numbers with K, M, G, T and bps, bit/s, b/s", "[conf][rate]") {
  struct Case {
    const char* text;
    double bps;
  };
  const Case cases[] = {
      {"0", 0},
      {"0G", 0},  // a drained link
      {"0.0", 0},
      {"1", 1},
      {"10000000000", 10e9},
      {"1000000000000000", 1e15},  // the largest
      {"1000T", 1e15},
      {"100G", 100e9},
      {"100g", 100e9},
      {"400Gbps", 400e9},
      {"2.5G", 2.5e9},
      {"800M", 800e6},
      {"800m", 800e6},
      {"1T", 1e12},
      {"1t", 1e12},
      {"25Gbit/s", 25e9},
      {"25gBIT/S", 25e9},
      {"10Gb/s", 10e9},
      {"100K", 100e3},
      {"100k", 100e3},
      {"100kbps", 100e3},
      {"1000bps", 1000},
      {"1000bit/s", 1000},
      {"1.5", 1.5},
      {"0.1G", 1e8},  // exactly: read as the decimal 0.1e9, not 0.1 * 1e9
      {"0.3G", 3e8},
      {"1.234567M", 1234567},
      {"007G", 7e9},
      {"100 G", 100e9},
      {"100 Gbps", 100e9},
      {"  100G\t", 100e9},
      {"999.999999999999T", 999.999999999999e12},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    const absl::StatusOr<double> rate = ParseRate(c.text);
    REQUIRE(rate.ok());
    CHECK(*rate == c.bps);
  }
}

TEST_CASE("ParseRate rejects what is not a rate, saying what to write", "[conf][rate]") {
  struct Case {
    const char* text;
    const char* message;  // the whole message, or its start when it ends with "..."
  };
  const Case cases[] = {
      {"10Q", "\"10Q\": unknown unit 'Q': use a number with K, M, G or T (bits per second), "
              "e.g. \"100G\""},
      {"1P", "\"1P\": unknown unit 'P': use a number with K, M, G or T..."},
      {"10\xc2\xb5", "\"10\xc2\xb5\": unknown unit '\xc2\xb5': ..."},
      {"", "\"\": no rate given: write bits per second with a unit, e.g. \"100G\"..."},
      {"   ", "\"   \": no rate given..."},
      {"-1G", "\"-1G\": a rate cannot be negative: use 0 (a drained link) or more, e.g. \"100G\""},
      {"-0", "\"-0\": a rate cannot be negative..."},
      {"+5G", "\"+5G\": write the number without a sign, e.g. \"100G\""},
      {"nan", "\"nan\": not a number: use a number with K, M, G or T (bits per second), e.g. "
              "\"100G\""},
      {"NaN", "\"NaN\": not a number..."},
      {"inf", "\"inf\": not a number..."},
      {"infinity", "\"infinity\": not a number..."},
      {"G", "\"G\": not a number..."},
      {"fast", "\"fast\": not a number..."},
      {"0x10", "\"0x10\": unknown unit 'x'..."},
      {".5G", "\".5G\": write a digit before the decimal point: \"0.5G\""},
      {"5.G", "\"5.G\": a digit must follow the decimal point, e.g. \"2.5G\""},
      {"5.", "\"5.\": a digit must follow the decimal point..."},
      {"1.2.3G", "\"1.2.3G\": more than one decimal point"},
      {"2,5G", "\"2,5G\": use a decimal point, not a comma, e.g. \"2.5G\""},
      {"1e9", "\"1e9\": exponents are not accepted: use a unit instead, e.g. \"1G\"..."},
      {"1E+9", "\"1E+9\": exponents are not accepted..."},
      {"100GB/s", "\"100GB/s\": 'B' means bytes; rates are in bits per second: write \"100G\" or "
                  "\"100Gbit/s\""},
      {"400GBPS", "\"400GBPS\": 'B' means bytes..."},
      {"1000B", "\"1000B\": 'B' means bytes; rates are in bits per second: write \"1000bps\" or "
                "\"1000bit/s\""},
      {"100Gx", "\"100Gx\": unexpected \"x\" after \"100G\": write \"100G\", \"100Gbps\" or "
                "\"100Gbit/s\""},
      {"100Gi", "\"100Gi\": unexpected \"i\" after \"100G\"..."},
      {"100G bps", "\"100G bps\": unexpected \" bps\" after \"100G\"..."},
      {"100GG", "\"100GG\": unexpected \"G\" after \"100G\"..."},
      {"100bit", "\"100bit\": unexpected \"bit\" after \"100\"..."},
      {"100Mbit/sec", "\"100Mbit/sec\": unexpected \"bit/sec\" after \"100M\"..."},
      {"1001T", "\"1001T\": above 1000T (1e15 bits per second), the largest rate bagd accepts"},
      {"1000000000000001", "\"1000000000000001\": above 1000T..."},
      {"1000.0000000001T", "\"1000.0000000001T\": above 1000T..."},
      {"99999999999999999999999999999999999999999999999999999999999999999999999999999999999999"
       "99999999999999999999999999999999999999999999999999999999999999999999999999999999999999"
       "99999999999999999999999999999999999999999999999999999999999999999999999999999999999999"
       "99999999999999999999999999999999999999999999999999999999999999999999999999999T",
       "\"999...above 1000T..."},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    const absl::StatusOr<double> rate = ParseRate(c.text);
    REQUIRE_FALSE(rate.ok());
    CHECK(rate.status().code() == absl::StatusCode::kInvalidArgument);
    const std::string message(rate.status().message());
    std::string want = c.message;
    if (want.size() >= 3 && want.compare(want.size() - 3, 3, "...") == 0) {
      want.resize(want.size() - 3);
      // "\"999...above": a start and a part further on.
      const std::size_t gap = want.find("...");
      if (gap != std::string::npos) {
        CHECK_THAT(message, StartsWith(want.substr(0, gap)));
        CHECK_THAT(message, Contains(want.substr(gap + 3)));
      } else {
        CHECK_THAT(message, StartsWith(want));
      }
    } else {
      CHECK(message == want);
    }
    CHECK(message.find('\n') == std::string::npos);
  }
}

TEST_CASE("FormatRate: the largest unit that keeps the value exact", "[conf][rate]") {
  struct Case {
    double bps;
    const char* text;
  };
  const Case cases[] = {
      {0, "0"},
      {1, "1"},
      {999, "999"},
      {1000, "1K"},
      {1500, "1.5K"},
      {100e3, "100K"},
      {800e6, "800M"},
      {1e9, "1G"},
      {2.5e9, "2.5G"},
      {10e9, "10G"},
      {25e9, "25G"},
      {40e9, "40G"},
      {100e9, "100G"},
      {400e9, "400G"},
      {800e9, "800G"},
      {1e12, "1T"},
      {1.6e12, "1.6T"},
      {1e15, "1000T"},
      {1234567, "1.234567M"},
      {1234567.5, "1.2345675M"},
      {0.5, "0.5"},
      {1.5, "1.5"},
      {2e15, "2000T"},  // out of range, but written
      {-1e9, "-1G"},
      {std::numeric_limits<double>::infinity(), "inf"},
      {std::nan(""), "nan"},
  };
  for (const Case& c : cases) {
    INFO(c.bps);
    CHECK(FormatRate(c.bps) == c.text);
  }
}

TEST_CASE("FormatRate output parses back to the same value", "[conf][rate]") {
  // Common link speeds, the values of the table above, and awkward doubles.
  std::vector<double> values = {0,      1,       8,       999,     1000,   1001,    1e5,
                                10e6,   100e6,   1e9,     2.5e9,   10e9,   25e9,    40e9,
                                50e9,   100e9,   200e9,   400e9,   800e9,  1.6e12,  3.2e12,
                                1e15,   0.1,     1e-3,    1.0 / 3, 2.0 / 3 * 1e9, 123456789.123,
                                3.7e14, 5e-324,  999999999999999.9};
  // Bandwidths as float32 bytes per second on the wire, times 8: what a daemon may format.
  for (float bytes : {1.25e9f, 3.1e9f, 5e10f, 1.2345e11f}) values.push_back(double(bytes) * 8);
  for (double v = 1; v < 1e15; v *= 1.7) values.push_back(v);
  for (const double v : values) {
    const std::string text = FormatRate(v);
    INFO(v << " -> " << text);
    const absl::StatusOr<double> back = ParseRate(text);
    REQUIRE(back.ok());
    CHECK(*back == v);
  }
}
