// The std::visit helper: a set of lambdas as one overloaded callable.
#pragma once

namespace bagd::net {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;  // clang 14 has no aggregate CTAD

}  // namespace bagd::net
