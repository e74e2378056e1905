// A token for completion handlers that capture a raw `this`: the owner holds a Lifetime,
// each handler a Lifetime::Watch taken when it was started, and the handler checks the
// watch before it touches the owner. Destroying the owner expires every watch at once.
// (shared_ptr/weak_ptr to the owner itself would do too, but Peer and Timer are owned
// by unique_ptr and members.)
#pragma once

#include <memory>

namespace bagd::session {

class Lifetime {
 public:
  class Watch {
   public:
    bool expired() const { return token_.expired(); }

   private:
    friend class Lifetime;
    explicit Watch(std::weak_ptr<const char> t) : token_(std::move(t)) {}
    std::weak_ptr<const char> token_;
  };

  Lifetime() = default;
  Lifetime(const Lifetime&) = delete;  // a copy would be a second owner
  Lifetime& operator=(const Lifetime&) = delete;

  Watch watch() const { return Watch(token_); }

 private:
  std::shared_ptr<const char> token_ = std::make_shared<const char>(0);
};

}  // namespace bagd::session
