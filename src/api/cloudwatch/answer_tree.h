#pragma once
// An answer built once as a tree and written in whichever protocol the client
// spoke (query XML with the operation's Response/Result wrapping and
// ResponseMetadata, AWS JSON 1.0, or Smithy RPC v2 CBOR): an ordered JSON
// object of the output members, in the order they are written, whose
// timestamps are Time() values (ISO 8601 in XML, epoch seconds in JSON, tag 1
// in CBOR) and whose lists are arrays (<member> items in XML). The alarm
// operations answer this way (alarms.cc).

#include <cstdint>
#include <string>
#include <string_view>

#include "api/cloudwatch/cloudwatch.h"
#include "nlohmann/json.hpp"

namespace trainwatch::api::cloudwatch {

using OJson = nlohmann::ordered_json;

// A timestamp member's value.
OJson Time(int64_t t_ms);

// The body for `operation`'s answer `result` (null: an operation without
// output: an empty Response in XML, {} in JSON, no body in CBOR).
std::string Encode(std::string_view operation, const OJson& result, Protocol protocol,
                   const Context& context);

}  // namespace trainwatch::api::cloudwatch
