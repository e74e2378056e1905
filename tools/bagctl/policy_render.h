// Text views of the control API's routing policies: `bagctl policy test` (TestPolicy) and
// `bagctl show policies` (ListPolicies). JSON: RenderProtoJson (neighbor_render.h). Pure
// functions of the messages, so each view is a golden string in the tests.
#pragma once

#include <string>

#include "bgpd/control/control.pb.h"

namespace bagd::bagctl {

// The route tested, each statement tried with why it matched or not (as policy::Trace
// prints it, without the policy name), the verdict, the attributes after the policy and
// what was left to the export stage.
std::string RenderPolicyTest(const control::v1::TestPolicyResponse& response);

// One line per statement: policy, its number, its name, hits; then what hits count.
std::string RenderPolicyCounters(const control::v1::ListPoliciesResponse& response);

}  // namespace bagd::bagctl
