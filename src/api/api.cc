#include "api/api.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "api/cbor.h"
#include "api/cloudwatch/cloudwatch.h"
#include "api/form.h"
#include "util/gzip.h"
#include "api/input.h"
#include "api/logs/logs.h"
#include "api/protocol.h"
#include "api/sagemaker/sagemaker.h"

namespace trainwatch::api {
namespace {

constexpr size_t kMaxJsonDepth = 64;

std::string_view ContentType(Protocol protocol) {
  switch (protocol) {
    case Protocol::kQuery: return "text/xml";
    case Protocol::kJson10: return "application/x-amz-json-1.0";
    case Protocol::kJson11: return "application/x-amz-json-1.1";
    case Protocol::kCbor: return "application/cbor";
  }
  return "application/octet-stream";
}

// The body to decode: as received, or gunzipped.
absl::StatusOr<std::string> DecodedBody(const HttpRequest& request, size_t max_bytes) {
  const std::string* encoding = request.headers.Find("Content-Encoding");
  if (encoding == nullptr) return request.body;
  std::string e = absl::AsciiStrToLower(absl::StripAsciiWhitespace(*encoding));
  if (e.empty() || e == "identity") return request.body;
  if (e != "gzip") {
    return InvalidParameterValue(absl::StrFormat(
        "Content-Encoding %s is not supported; send gzip or identity.", e.substr(0, 64)));
  }
  absl::StatusOr<std::string> body = util::Gunzip(request.body, max_bytes);
  if (absl::IsResourceExhausted(body.status())) return RequestEntityTooLarge(MessageOf(body.status()));
  if (!body.ok()) return InvalidParameterValue(MessageOf(body.status()));
  return body;
}

absl::StatusOr<nlohmann::json> ParseJsonBody(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return nlohmann::json::object();
  }
  if (JsonNestingDepth(body, kMaxJsonDepth) > kMaxJsonDepth) {
    return InvalidParameterValue(absl::StrFormat(
        "The request body nests JSON deeper than %d levels.", kMaxJsonDepth));
  }
  nlohmann::json parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return InvalidParameterValue("The request body is not valid JSON.");
  }
  if (!parsed.is_object()) {
    return InvalidParameterValue("The request body must be a JSON object of input members.");
  }
  return parsed;
}

}  // namespace

size_t JsonNestingDepth(std::string_view text, size_t limit) {
  size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return limit + 1;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

Api::Api(ApiOptions options, Backends backends, const util::Clock& clock)
    : options_(std::move(options)), backends_(backends), clock_(clock) {}

HttpResponse Api::TooLarge(const HttpRequest& headers_only, size_t limit_bytes) const {
  Route route = RouteRequest(headers_only);
  return ErrorResponse(route.service, route.protocol,
                       RequestEntityTooLarge(absl::StrFormat(
                           "The request body exceeds the limit of %d bytes.", limit_bytes)),
                       options_.request_id());
}

std::optional<HttpResponse> Api::RefuseOwnRoute(const HttpRequest& request) const {
  if (options_.credentials == nullptr) return std::nullopt;
  absl::Status auth =
      sigv4::VerifyOwnRoute(request, *options_.credentials, clock_.NowMs(), options_.verify);
  if (auth.ok()) return std::nullopt;
  // Credentials that are right but used from another site: 403, no challenge.
  const bool refused_here = absl::IsPermissionDenied(auth);
  HttpResponse r;
  r.status = refused_here ? 403 : 401;
  r.headers.Add("x-amzn-RequestId", options_.request_id());
  r.headers.Add("Content-Type", "application/json");
  if (!refused_here) {
    r.headers.Add("WWW-Authenticate", "Basic realm=\"trainwatch\", charset=\"UTF-8\"");
  }
  // The message may quote what the client sent (not necessarily UTF-8).
  r.body = nlohmann::json{{"error", {{"code", refused_here ? "Forbidden" : "Unauthenticated"},
                                     {"message", std::string(auth.message())}}}}
               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
           "\n";
  return r;
}

HttpResponse Api::Handle(const HttpRequest& request) const {
  std::string request_id = options_.request_id();
  Route route = RouteRequest(request);
  auto fail = [&](const absl::Status& status) {
    return ErrorResponse(route.service, route.protocol, status, request_id);
  };
  if (request.body.size() > options_.max_body_bytes) {
    return fail(RequestEntityTooLarge(absl::StrFormat(
        "The request body is %d bytes; the limit is %d bytes.", request.body.size(),
        options_.max_body_bytes)));
  }
  // Authentication comes before the route's own errors, so that an unsigned
  // caller learns nothing but "sign your request".
  if (options_.credentials != nullptr) {
    absl::Status auth = sigv4::Verify(request, route.service, route.protocol,
                                      *options_.credentials, clock_.NowMs(), options_.verify);
    if (!auth.ok()) return fail(auth);
  }
  if (!route.error.ok()) return fail(route.error);
  return Dispatch(request, route.service, route.protocol, route.operation, request_id);
}

HttpResponse Api::Dispatch(const HttpRequest& request, Service service, Protocol protocol,
                           std::string operation, const std::string& request_id) const {
  auto fail = [&](const absl::Status& status) {
    return ErrorResponse(service, protocol, status, request_id);
  };
  absl::StatusOr<std::string> body = DecodedBody(request, options_.max_decompressed_bytes);
  if (!body.ok()) return fail(body.status());

  nlohmann::json tree;
  if (protocol == Protocol::kQuery) {
    absl::StatusOr<nlohmann::json> form = DecodeForm(*body);
    if (!form.ok()) return fail(InvalidParameterValue(MessageOf(form.status())));
    tree = *std::move(form);
    auto action = tree.find("Action");
    if (action == tree.end() || !action->is_string() || action->get<std::string>().empty()) {
      return fail(AwsStatus("MissingAction", "The request must contain the parameter Action."));
    }
    operation = action->get<std::string>();
    auto version = tree.find("Version");
    if (version != tree.end() && (!version->is_string() || *version != "2010-08-01")) {
      return fail(InvalidParameterValue(absl::StrFormat(
          "The parameter Version must be 2010-08-01 (got %s).",
          QuoteValue(version->is_string() ? version->get<std::string>() : ""))));
    }
  } else if (protocol == Protocol::kCbor) {
    absl::StatusOr<nlohmann::json> cbor = DecodeCbor(*body, kMaxJsonDepth);
    if (!cbor.ok()) return fail(InvalidParameterValue(MessageOf(cbor.status())));
    if (!cbor->is_object()) {
      return fail(InvalidParameterValue("The request body must be a CBOR map of input members."));
    }
    tree = *std::move(cbor);
  } else {
    absl::StatusOr<nlohmann::json> json = ParseJsonBody(*body);
    if (!json.ok()) return fail(json.status());
    tree = *std::move(json);
  }

  int64_t now_ms = clock_.NowMs();
  absl::StatusOr<std::string> out;
  switch (service) {
    case Service::kCloudWatch: {
      cloudwatch::Context context{now_ms, request_id, options_.account_id};
      Node input(tree, protocol == Protocol::kQuery ? Syntax::kQuery : Syntax::kJson,
                 PathStyle::kQuery);
      out = cloudwatch::Handle(operation, input, protocol, context, backends_);
      break;
    }
    case Service::kLogs: {
      logs::Context context{now_ms, options_.region, options_.account_id};
      out = logs::Handle(operation, Node(tree, Syntax::kJson, PathStyle::kCamelJson), context,
                         backends_);
      break;
    }
    case Service::kSageMaker: {
      sagemaker::Context context{now_ms, options_.region, options_.account_id};
      out = sagemaker::Handle(operation, Node(tree, Syntax::kJson, PathStyle::kCamelJson), context,
                              backends_);
      break;
    }
  }
  if (!out.ok()) return fail(out.status());
  HttpResponse response;
  response.status = 200;
  response.headers.Add("x-amzn-RequestId", request_id);
  if (protocol == Protocol::kCbor) {
    response.headers.Add("smithy-protocol", "rpc-v2-cbor");
    // An operation without output has no body and no Content-Type (Smithy).
    if (!out->empty()) response.headers.Add("Content-Type", std::string(ContentType(protocol)));
  } else {
    response.headers.Add("Content-Type", std::string(ContentType(protocol)));
  }
  response.body = *std::move(out);
  return response;
}

}  // namespace trainwatch::api
