// DecodeCbor and CborWriter (api/cbor.h): what Smithy RPC v2 CBOR clients send
// and read.
#include "api/cbor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace trainwatch::api {
namespace {

using ::testing::HasSubstr;

std::string Bytes(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s.push_back(static_cast<char>(b));
  return s;
}

TEST(DecodeCbor, WhatTheWriterWritesComesBackAsTheJsonOneZeroTree) {
  CborWriter w;
  w.MapHeader(4);
  w.Text("Id");
  w.Text("loss");
  w.Text("Timestamps");
  w.ArrayHeader(2);
  w.Timestamp(1736942400000);
  w.Timestamp(1736942401500);
  w.Text("Values");
  w.ArrayHeader(1);
  w.Double(0.25);
  w.Text("ReturnData");
  w.Bool(false);
  absl::StatusOr<nlohmann::json> tree = DecodeCbor(w.Take());
  ASSERT_TRUE(tree.ok()) << tree.status();
  EXPECT_EQ(*tree, nlohmann::json::parse(R"({"Id": "loss", "Timestamps": [1736942400.0,
            1736942401.5], "Values": [0.25], "ReturnData": false})"));
}

TEST(DecodeCbor, IndefiniteLengthsHalfFloatsNegativesAndAnEmptyBody) {
  // {_ "Id"(_ "I" "d"): [_ 1, 1.0 (half), -1 - 2^64 + 1]}
  std::string body = Bytes({0xbf, 0x7f, 0x61, 'I', 0x61, 'd', 0xff, 0x9f, 0x01, 0xf9, 0x3c, 0x00,
                            0x3b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
  absl::StatusOr<nlohmann::json> tree = DecodeCbor(body);
  ASSERT_TRUE(tree.ok()) << tree.status();
  EXPECT_EQ((*tree)["Id"][0], 1);
  EXPECT_EQ((*tree)["Id"][1], 1.0);
  EXPECT_EQ((*tree)["Id"][2].get<int64_t>(), INT64_MIN);
  EXPECT_EQ(*DecodeCbor(""), nlohmann::json::object()) << "an operation without input";
}

TEST(DecodeCbor, MalformedBodiesSayWhatAndWhere) {
  struct Case {
    std::string body;
    std::string error;
  };
  for (const Case& c : std::vector<Case>{
           {Bytes({0xa0, 0x00}), "bytes after the data item at byte 1"},
           {Bytes({0xa1, 0x62, 'I'}), "ends inside an item at byte 1"},
           {Bytes({0xa1, 0x01, 0x02}), "a map key that is not a text string at byte 1"},
           {Bytes({0xa1, 0x61, 'x', 0x41, 0x00}), "a byte string"},
           {Bytes({0xa1, 0x61, 'x', 0xc2, 0x00}), "CBOR tag 2"},
           {Bytes({0xa1, 0x61, 'x', 0xc1, 0x61, 'y'}), "a timestamp (tag 1) that is not a number"},
           {Bytes({0xff}), "a break (0xff) outside an indefinite-length item"},
           {Bytes({0xbf, 0x61, 'x'}), "ends before its indefinite-length items are closed"},
           {Bytes({0x1c}), "not well-formed at byte 0"},
           {Bytes({0xa1, 0x61, 'x', 0x61, 0xff}), "a text string that is not valid UTF-8 at byte 3"},
       }) {
    absl::StatusOr<nlohmann::json> tree = DecodeCbor(c.body);
    ASSERT_FALSE(tree.ok()) << c.error;
    EXPECT_THAT(tree.status().message(), HasSubstr(c.error));
  }
}

TEST(DecodeCbor, ADeclaredSizeAllocatesNothingAndDepthIsBounded) {
  // An array that claims 2^32 items in ten bytes.
  absl::StatusOr<nlohmann::json> huge =
      DecodeCbor(Bytes({0x9b, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x01}));
  ASSERT_FALSE(huge.ok());
  EXPECT_THAT(huge.status().message(), HasSubstr("a length of 4294967296 items in a body of 10 bytes"));
  // A length beyond int64 is no indefinite length.
  EXPECT_FALSE(DecodeCbor(Bytes({0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})).ok());
  std::string deep(10, static_cast<char>(0x81));
  deep.push_back(0x00);
  EXPECT_TRUE(DecodeCbor(deep, 10).ok());
  absl::StatusOr<nlohmann::json> deeper = DecodeCbor(deep, 9);
  ASSERT_FALSE(deeper.ok());
  EXPECT_THAT(deeper.status().message(), HasSubstr("nesting deeper than 9 levels"));
}

}  // namespace
}  // namespace trainwatch::api
