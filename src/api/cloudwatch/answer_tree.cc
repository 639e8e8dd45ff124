#include "api/cloudwatch/answer_tree.h"

#include "absl/strings/str_format.h"
#include "api/cbor.h"
#include "api/wire_time.h"
#include "api/xml_writer.h"

namespace trainwatch::api::cloudwatch {

namespace {

// A timestamp in an answer tree: an object with this one member (ms).
constexpr char kTimeMember[] = "\x01time_ms";
bool IsTime(const OJson& j) { return j.is_object() && j.size() == 1 && j.contains(kTimeMember); }

OJson ToJson10(const OJson& j) {
  if (IsTime(j)) return EpochSeconds(j[kTimeMember].get<int64_t>());
  if (j.is_object()) {
    OJson out = OJson::object();
    for (const auto& [k, v] : j.items()) out[k] = ToJson10(v);
    return out;
  }
  if (j.is_array()) {
    OJson out = OJson::array();
    for (const OJson& v : j) out.push_back(ToJson10(v));
    return out;
  }
  return j;
}

void ToCbor(const OJson& j, CborWriter* out) {
  if (IsTime(j)) {
    out->Timestamp(j[kTimeMember].get<int64_t>());
  } else if (j.is_object()) {
    out->MapHeader(j.size());
    for (const auto& [k, v] : j.items()) {
      out->Text(k);
      ToCbor(v, out);
    }
  } else if (j.is_array()) {
    out->ArrayHeader(j.size());
    for (const OJson& v : j) ToCbor(v, out);
  } else if (j.is_string()) {
    out->Text(j.get<std::string>());
  } else if (j.is_boolean()) {
    out->Bool(j.get<bool>());
  } else if (j.is_number_integer()) {
    out->Int(j.get<int64_t>());
  } else if (j.is_number()) {
    out->Double(j.get<double>());
  }
}

void ToXml(std::string_view tag, const OJson& j, XmlWriter* xml) {
  if (IsTime(j)) {
    xml->Element(tag, FormatIsoMillis(j[kTimeMember].get<int64_t>()));
  } else if (j.is_object() || j.is_array()) {
    if (j.empty()) {
      xml->Empty(tag);
      return;
    }
    xml->Open(tag);
    if (j.is_object()) {
      for (const auto& [k, v] : j.items()) ToXml(k, v, xml);
    } else {
      for (const OJson& v : j) ToXml("member", v, xml);
    }
    xml->Close(tag);
  } else if (j.is_string()) {
    xml->Element(tag, j.get<std::string>());
  } else if (j.is_boolean()) {
    xml->Element(tag, j.get<bool>() ? "true" : "false");
  } else if (j.is_number_integer()) {
    xml->Element(tag, std::to_string(j.get<int64_t>()));
  } else if (j.is_number()) {
    xml->Element(tag, FormatDouble(j.get<double>()));
  }
}

}  // namespace

OJson Time(int64_t t_ms) { return OJson{{kTimeMember, t_ms}}; }

std::string Encode(std::string_view operation, const OJson& result, Protocol protocol,
                   const Context& context) {
  switch (protocol) {
    case Protocol::kQuery: {
      if (result.is_null()) return EncodeEmptyXml(operation, context.request_id);
      XmlWriter xml;
      xml.Open(absl::StrFormat("%sResponse", operation),
               "xmlns=\"http://monitoring.amazonaws.com/doc/2010-08-01/\"");
      ToXml(absl::StrFormat("%sResult", operation), result, &xml);
      xml.Open("ResponseMetadata");
      xml.Element("RequestId", context.request_id);
      xml.Close("ResponseMetadata");
      xml.Close(absl::StrFormat("%sResponse", operation));
      return xml.Take();
    }
    case Protocol::kCbor: {
      if (result.is_null()) return std::string();
      CborWriter out;
      ToCbor(result, &out);
      return out.Take();
    }
    default:
      return result.is_null() ? std::string("{}") : DumpJson(ToJson10(result));
  }
}

}  // namespace trainwatch::api::cloudwatch
