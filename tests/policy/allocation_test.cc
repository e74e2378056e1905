// "No allocation on the hot path": a realistic import policy (a 1,000-entry prefix set with
// ranges, a community match, an AS-path regex) evaluated on routes it does not modify must
// not allocate once warm. Counted by replacing the global operator new in this test binary.
#include <atomic>
#include <cstdlib>
#include <new>

#include "absl/strings/str_cat.h"
#include "policy/policy.h"
#include "tests/policy/policy_test_support.h"

namespace {
std::atomic<long> allocations{0};

void* Allocate(std::size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
}  // namespace

// Every non-aligned form, so that each allocation and its release go through malloc/free
// (a sanitizer build reports a mix of its own new with this delete as a mismatch).
void* operator new(std::size_t size) {
  if (void* p = Allocate(size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) {
  if (void* p = Allocate(size)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return Allocate(size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return Allocate(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

using namespace bagd;
using namespace bagd::policy;
using namespace bagd::policy::testing;

TEST_CASE("a realistic import policy allocates nothing on routes it does not change", "[policy][cost]") {
  std::string sets = "defined_sets { prefix_sets { name: \"customers\"";
  for (int i = 0; i < 1000; ++i) {
    absl::StrAppend(&sets, " prefixes { prefix: \"", 20 + i / 250, ".", i % 250, ".0.0/16\" le: 24 }");
  }
  absl::StrAppend(&sets, " } community_sets { name: \"blackhole\" communities: \"blackhole\" communities: \"65000:666\" }",
                  " as_path_sets { name: \"private\" regexes: \"_(6451[2-9]|645[2-9][0-9]|64[6-9][0-9][0-9]|65[0-4][0-9][0-9])_\" } }");
  const PolicySet set = CompilePolicies(sets + R"pb(
    policies {
      name: "import"
      statements { conditions { community_set { set: "blackhole" } } actions { disposition: DISPOSITION_REJECT } }
      statements { conditions { as_path_set { set: "private" } } actions { disposition: DISPOSITION_REJECT } }
      statements { conditions { prefix_set { set: "customers" } } actions { disposition: DISPOSITION_ACCEPT } }
      statements { actions { disposition: DISPOSITION_REJECT } }
    }
  )pb");
  const CompiledPolicy& p = *set.Find("import");
  wire::PathAttributes a = Attrs({3356, 1299, 2914, 174, 6939, 13335});
  a.communities = {Community(3356, 100), Community(3356, 2001)};
  const wire::PathAttributes private_path = Attrs({3356, 64600});
  const RouteContext accepted = Route("23.100.4.0/24", a);
  const RouteContext rejected = Route("99.0.0.0/8", a);
  const RouteContext private_as = Route("23.100.4.0/24", private_path);
  // Warm up: RE2's lazily built DFA and the AS-path text buffer.
  for (const RouteContext* r : {&accepted, &rejected, &private_as}) Evaluate(p, *r);

  const long before = allocations.load();
  REQUIRE(before > 0);  // the counter sees this binary's allocations (compiling the policy made some)
  int accepts = 0, rejects = 0;
  for (int i = 0; i < 1000; ++i) {
    for (const RouteContext* r : {&accepted, &rejected, &private_as}) {
      const PolicyResult result = Evaluate(p, *r);
      (result.verdict == Verdict::kAccept ? accepts : rejects) += 1;
    }
  }
  const long during = allocations.load() - before;
  CHECK(during == 0);
  CHECK(accepts == 1000);
  CHECK(rejects == 2000);
  CHECK(p.hits(1) == 1001);  // the private AS, warm-up included
}
