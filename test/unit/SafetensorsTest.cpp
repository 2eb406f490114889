//===- SafetensorsTest.cpp - safetensors round trips and corrupt files ---===//

#include "runtime/checkpoint/Safetensors.h"
#include "runtime/checkpoint/WeightSource.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <unistd.h>

using namespace mlperf::rt;

namespace {

class SafetensorsTest : public ::testing::Test {
protected:
  std::string path(const std::string &name) {
    return ::testing::TempDir() + "/mlperf_st_" + std::to_string(::getpid()) + "_" + name;
  }
  void writeBytes(const std::string &file, const std::string &bytes) {
    std::ofstream(file, std::ios::binary) << bytes;
  }
  static std::string withHeader(const std::string &header, const std::string &data) {
    std::string out;
    uint64_t size = header.size();
    for (int i = 0; i < 8; ++i) {
      out += static_cast<char>((size >> (8 * i)) & 0xff);
    }
    return out + header + data;
  }
  Status readExpectingFailure(const std::string &bytes) {
    std::string file = path("corrupt");
    writeBytes(file, bytes);
    TensorFile loaded;
    Status status = readSafetensors(file, loaded);
    std::remove(file.c_str());
    return status;
  }
};

TEST_F(SafetensorsTest, RoundTripsEveryDtypeAndMetadata) {
  TensorFile file;
  HostTensor f32 = HostTensor::zeros(DType::kF32, {2, 3});
  HostTensor bf16 = HostTensor::zeros(DType::kBF16, {4});
  HostTensor e4m3 = HostTensor::zeros(DType::kF8E4M3FN, {3});
  HostTensor e5m2 = HostTensor::zeros(DType::kF8E5M2, {3});
  HostTensor ids = HostTensor::zeros(DType::kI64, {2});
  f32.values = {1.5f, -2.25f, 3e-8f, 1e30f, 0.0f, -0.0f};
  bf16.values = {1.0f, -0.0078125f, 65280.0f, static_cast<float>(roundTo(DType::kBF16, 0.1))};
  e4m3.values = {448.0f, -0.001953125f, 0.5f};
  e5m2.values = {57344.0f, -1.5e-5f, 3.0f};
  e5m2.values[1] = static_cast<float>(roundTo(DType::kF8E5M2, e5m2.values[1]));
  ids.ints = {-3, int64_t{1} << 40};
  file.tensors = {{"model.a", f32}, {"b", bf16}, {"c", e4m3}, {"d", e5m2}, {"step", ids}};
  file.metadata = {{"format", "mlperfc"}, {"quote", "say \"hi\"\n"}};

  std::string target = path("roundtrip.safetensors");
  ASSERT_TRUE(writeSafetensors(target, file).isOk());
  TensorFile loaded;
  Status status = readSafetensors(target, loaded);
  ASSERT_TRUE(status.isOk()) << status.toString();
  // The writer adds a checksum of the metadata and data; everything else round-trips.
  EXPECT_TRUE(hasChecksum(loaded));
  loaded.metadata.erase("checksum");
  EXPECT_EQ(loaded.metadata, file.metadata);
  ASSERT_EQ(loaded.tensors.size(), file.tensors.size());
  for (const auto &[name, tensor] : file.tensors) {
    const HostTensor &other = loaded.tensors.at(name);
    EXPECT_EQ(other.dtype, tensor.dtype) << name;
    EXPECT_EQ(other.shape, tensor.shape) << name;
    EXPECT_EQ(other.values, tensor.values) << name;
    EXPECT_EQ(other.ints, tensor.ints) << name;
  }
  std::remove(target.c_str());
}

TEST_F(SafetensorsTest, WriteLeavesNoTemporaryAndReplacesAtomically) {
  std::string target = path("atomic.safetensors");
  writeBytes(target, "old contents");
  TensorFile file;
  file.tensors["x"] = HostTensor::zeros(DType::kF32, {1});
  ASSERT_TRUE(writeSafetensors(target, file).isOk());
  EXPECT_FALSE(std::ifstream(target + ".tmp." + std::to_string(::getpid())).good());
  TensorFile loaded;
  EXPECT_TRUE(readSafetensors(target, loaded).isOk());
  std::remove(target.c_str());
}

TEST_F(SafetensorsTest, UnwritableDirectoryIsAnError) {
  TensorFile file;
  Status status = writeSafetensors("/nonexistent-dir/x.safetensors", file);
  EXPECT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("/nonexistent-dir/x.safetensors"), std::string::npos);
}

TEST_F(SafetensorsTest, CorruptFilesAreRejectedWithTheReason) {
  struct Case {
    std::string bytes, expected;
  };
  std::vector<Case> cases = {
      {"abc", "shorter than the 8-byte header length"},
      {withHeader("{}", "").substr(0, 8) + "{", "exceeds the file"},
      {withHeader("{\"x\": [", ""), "header is not JSON"},
      {withHeader("[]", ""), "header is not a JSON object"},
      {withHeader(R"({"x":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}})", "ab"),
       "unsupported dtype F16"},
      {withHeader(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "abcd"),
       "do not hold f32[2]"},
      {withHeader(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}})", "abcdefgh"),
       "do not hold f32[1]"},
      {withHeader(R"({"x":{"dtype":"F32","shape":[1]}})", "abcd"), "lacks dtype, shape"},
      {withHeader(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                  R"("y":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}})",
                  "abcdefgh"),
       "overlap"},
      {withHeader(R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "abcd"),
       "invalid shape"},
      {withHeader(R"({"x":{"dtype":"F32","shape":[-],"data_offsets":[0,4]}})", "abcd"),
       "'-' without digits"},
      {withHeader(R"({"x\uzzzz":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", "abcd"),
       "bad \\u escape"},
      {withHeader(R"({"x":{"dtype":"F32","shape":[1099511627776,4194304],"data_offsets":[0,4]}})",
                  "abcd"),
       "size overflows"},
      {withHeader(R"({"x":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})",
                  "abcd"),
       "size overflows"},
      {withHeader(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":["a","b"]}})", "abcd"),
       "non-integer data_offsets"},
      // Strict JSON and exact coverage of the data section.
      {withHeader(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", "abcdXY"),
       "2 bytes after the last tensor's data belong to no tensor"},
      {withHeader(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", "abcdefgh"),
       "data bytes [0, 4) belong to no tensor"},
      {withHeader(R"({"x":{"dtype":"F32","shape":[1],"shape":[1],"data_offsets":[0,4]}})", "abcd"),
       "key 'shape' appears twice in one object"},
      {withHeader(R"({"x":{"dtype":"F32","shape":[01],"data_offsets":[0,4]}})", "abcd"),
       "integer with a leading zero"},
      {withHeader("{\"x\t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", "abcd"),
       "control character in a string"},
      {withHeader("{\"x\xff\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", "abcd"),
       "string is not UTF-8"},
  };
  for (const Case &c : cases) {
    Status status = readExpectingFailure(c.bytes);
    EXPECT_EQ(status.code(), StatusCode::kDataLoss) << c.expected << ": " << status.toString();
    EXPECT_NE(status.message().find(c.expected), std::string::npos) << status.toString();
  }
}

TEST_F(SafetensorsTest, AnEditedFileFailsItsChecksum) {
  TensorFile file;
  file.tensors["w"] = HostTensor::zeros(DType::kF32, {4});
  file.metadata = {{"seed", "1234"}};
  std::string target = path("checked.safetensors");
  ASSERT_TRUE(writeSafetensors(target, file).isOk());
  std::string bytes;
  {
    std::ifstream in(target, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  for (auto [from, to] : {std::pair<std::string, std::string>{"1234", "1235"}}) {
    std::string edited = bytes;
    edited.replace(edited.find(from), from.size(), to); // the seed, same length
    Status status = readExpectingFailure(edited);
    EXPECT_EQ(status.code(), StatusCode::kDataLoss) << status.toString();
    EXPECT_NE(status.message().find("does not match its metadata and data"), std::string::npos)
        << status.toString();
  }
  std::string flipped = bytes;
  flipped.back() ^= 0x40; // a bit of the last tensor element
  Status status = readExpectingFailure(flipped);
  EXPECT_NE(status.message().find("edited or corrupted"), std::string::npos) << status.toString();
}

TEST_F(SafetensorsTest, StaleTemporariesOfDeadWritersAreRemoved) {
  std::string target = path("ckpt.safetensors");
  // A pid that cannot be alive (above pid_max), and this process's own.
  std::string dead = target + ".tmp.999999999", live = target + ".tmp." + std::to_string(getpid());
  for (const std::string &name : {dead, live}) {
    std::ofstream(name) << "partial";
  }
  EXPECT_EQ(removeStaleTemporaries(target), 1);
  EXPECT_FALSE(std::ifstream(dead).good());
  EXPECT_TRUE(std::ifstream(live).good());
  std::remove(live.c_str());
}

TEST_F(SafetensorsTest, MissingFileIsNotFound) {
  TensorFile loaded;
  EXPECT_EQ(readSafetensors("/nonexistent/file.safetensors", loaded).code(), StatusCode::kNotFound);
}

} // namespace

// A Hugging Face sharded checkpoint: an index naming each tensor's shard, read tensor by
// tensor; given as the index, as its directory, or (one file) as the file itself.
class ShardedCheckpointTest : public SafetensorsTest {
protected:
  void SetUp() override {
    directory = path("sharded");
    ASSERT_EQ(std::system(("rm -rf " + directory + " && mkdir -p " + directory).c_str()), 0);
    TensorFile first, second;
    HostTensor a = HostTensor::zeros(DType::kBF16, {2, 2});
    a.values = {1, 2, 3, 4};
    HostTensor b = HostTensor::zeros(DType::kF32, {3});
    b.values = {0.5f, -1, 7};
    HostTensor c = HostTensor::zeros(DType::kBF16, {1});
    c.values = {-2};
    first.tensors = {{"model.a", a}, {"model.b", b}};
    second.tensors = {{"lm_head.weight", c}};
    ASSERT_TRUE(writeSafetensors(directory + "/model-00001-of-00002.safetensors", first).isOk());
    ASSERT_TRUE(writeSafetensors(directory + "/model-00002-of-00002.safetensors", second).isOk());
  }
  void writeIndex(const std::string &weightMap) {
    writeBytes(directory + "/model.safetensors.index.json",
               "{\"metadata\": {\"total_size\": 22, \"format\": \"pt\"}, \"weight_map\": {" +
                   weightMap + "}}");
  }
  std::string directory;
  const std::string kMap = "\"model.a\": \"model-00001-of-00002.safetensors\", "
                           "\"model.b\": \"model-00001-of-00002.safetensors\", "
                           "\"lm_head.weight\": \"model-00002-of-00002.safetensors\"";
};

TEST_F(ShardedCheckpointTest, ReadsEveryTensorFromItsShard) {
  writeIndex(kMap);
  for (const std::string &given : {directory, directory + "/model.safetensors.index.json"}) {
    CheckpointReader reader;
    Status status = CheckpointReader::open(given, reader);
    ASSERT_TRUE(status.isOk()) << status.toString();
    EXPECT_EQ(reader.numFiles(), 2);
    EXPECT_EQ(reader.names(), (std::vector<std::string>{"lm_head.weight", "model.a", "model.b"}));
    EXPECT_EQ(reader.metadata().at("format"), "pt"); // the index's strings; numbers skipped
    EXPECT_EQ(reader.metadata().count("total_size"), 0u);
    HostTensor tensor;
    ASSERT_TRUE(reader.read("model.a", tensor).isOk());
    EXPECT_EQ(tensor.describe(), "bf16[2x2]");
    EXPECT_EQ(tensor.values, (std::vector<float>{1, 2, 3, 4}));
    ASSERT_TRUE(reader.read("lm_head.weight", tensor).isOk());
    EXPECT_EQ(tensor.values, (std::vector<float>{-2}));
    EXPECT_EQ(reader.read("model.z", tensor).code(), StatusCode::kNotFound);
    EXPECT_NE(reader.describe().find("(3 tensors in 2 files)"), std::string::npos);
  }
  CheckpointReader single;
  ASSERT_TRUE(
      CheckpointReader::open(directory + "/model-00002-of-00002.safetensors", single).isOk());
  EXPECT_EQ(single.names(), (std::vector<std::string>{"lm_head.weight"}));
}

TEST_F(ShardedCheckpointTest, InconsistentIndexesAreNamed) {
  auto failure = [&](const std::string &index) {
    writeBytes(directory + "/model.safetensors.index.json", index);
    CheckpointReader reader;
    return CheckpointReader::open(directory, reader);
  };
  auto expectError = [&](const std::string &index, const std::string &message) {
    Status status = failure(index);
    EXPECT_FALSE(status.isOk()) << index;
    EXPECT_NE(status.message().find(message), std::string::npos) << status.message();
  };
  expectError("{\"weight_map\": [1]}", "no \"weight_map\" object");
  expectError("{\"weight_map\": {\"model.a\": 3}}", "the file of 'model.a' is not a file name");
  expectError("{\"weight_map\": {\"model.a\": \"../x.safetensors\"}}",
              "shard '../x.safetensors' is outside the index's directory");
  expectError("{\"weight_map\": {\"model.a\": \"model-00001-of-00002.safetensors\", "
              "\"lm_head.weight\": \"model-00002-of-00002.safetensors\"}}",
              "tensor 'model.b' of model-00001-of-00002.safetensors is not in the weight_map");
  expectError("{\"weight_map\": {" + kMap + ", \"model.c\": \"model-00002-of-00002.safetensors\"}}",
              "tensor 'model.c' is not in model-00002-of-00002.safetensors, where the weight_map "
              "places it");
  expectError("{\"weight_map\": {\"model.a\": \"missing.safetensors\"}}", "cannot open");
  expectError("{\"weight_map\": {", "not a valid safetensors index: not JSON");
  std::remove((directory + "/model.safetensors.index.json").c_str());
  CheckpointReader reader;
  Status status = CheckpointReader::open(directory, reader);
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_NE(status.message().find("a directory without model.safetensors.index.json or "
                                  "model.safetensors"),
            std::string::npos)
      << status.message();
}
