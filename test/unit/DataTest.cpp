//===- DataTest.cpp - Indexed datasets and GPT samples -------------------===//

#include "runtime/data/GPTBatches.h"
#include "runtime/data/GPTSamples.h"
#include "runtime/data/IndexedDataset.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <unistd.h>

using namespace mlperf::rt;

namespace {

class DataTest : public ::testing::Test {
protected:
  std::string prefix(const std::string &name) {
    return ::testing::TempDir() + "/mlperf_data_" + std::to_string(::getpid()) + "_" + name;
  }
  // Documents of lengths 5, 1, 7, 3 with token value = 100 * document + position.
  std::vector<std::vector<int64_t>> documents() {
    std::vector<std::vector<int64_t>> docs;
    for (int64_t d : {0, 1, 2, 3}) {
      int64_t length = std::vector<int64_t>{5, 1, 7, 3}[d];
      std::vector<int64_t> doc;
      for (int64_t i = 0; i < length; ++i) {
        doc.push_back(100 * d + i);
      }
      docs.push_back(doc);
    }
    return docs;
  }
  void removeDataset(const std::string &p) {
    std::remove((p + ".idx").c_str());
    std::remove((p + ".bin").c_str());
  }
  std::string readFile(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  void writeFile(const std::string &path, const std::string &bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
  }
};

TEST_F(DataTest, RoundTripEveryTokenType) {
  for (TokenType type : {TokenType::kUInt16, TokenType::kInt32, TokenType::kInt64}) {
    std::string p = prefix("roundtrip");
    ASSERT_TRUE(writeIndexedDataset(p, documents(), type).isOk());
    IndexedDataset dataset;
    Status status = IndexedDataset::open(p, dataset);
    ASSERT_TRUE(status.isOk()) << status.toString();
    EXPECT_EQ(dataset.numDocuments(), 4);
    EXPECT_EQ(dataset.numTokens(), 16);
    EXPECT_EQ(dataset.tokenType(), type);
    for (int64_t d = 0; d < 4; ++d) {
      std::vector<int64_t> tokens;
      ASSERT_TRUE(dataset.readDocument(d, 0, dataset.documentLength(d), tokens).isOk());
      EXPECT_EQ(tokens, documents()[d]);
    }
    std::vector<int64_t> middle;
    ASSERT_TRUE(dataset.readDocument(2, 3, 2, middle).isOk());
    EXPECT_EQ(middle, (std::vector<int64_t>{203, 204}));
    EXPECT_FALSE(dataset.readDocument(2, 6, 2, middle).isOk());
  }
}

TEST_F(DataTest, TokensThatDoNotFitAreRejected) {
  Status status = writeIndexedDataset(prefix("fit"), {{1, 300}}, TokenType::kUInt8);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("token 300"), std::string::npos);
}

TEST_F(DataTest, SequentialSamplesOverlapByOneTokenAcrossDocuments) {
  std::string p = prefix("windows");
  ASSERT_TRUE(writeIndexedDataset(p, documents(), TokenType::kInt32).isOk());
  IndexedDataset dataset;
  ASSERT_TRUE(IndexedDataset::open(p, dataset).isOk());
  GPTSamples samples;
  ASSERT_TRUE(GPTSamples::create(dataset, 4, SampleOrder::kSequential, 0, samples).isOk());
  EXPECT_EQ(samples.numSamples(), (16 - 1) / 4);
  // The concatenation: 0..4, 100, 200..206, 300..302.
  std::vector<int64_t> all = {0, 1, 2, 3, 4, 100, 200, 201, 202, 203, 204, 205, 206, 300, 301, 302};
  for (int64_t k = 0; k < samples.numSamples(); ++k) {
    std::vector<int64_t> tokens;
    ASSERT_TRUE(samples.get(k, tokens).isOk());
    EXPECT_EQ(tokens, std::vector<int64_t>(all.begin() + 4 * k, all.begin() + 4 * k + 5)) << k;
  }
}

TEST_F(DataTest, ShuffledOrderIsASeededPermutation) {
  std::vector<int64_t> a = seededPermutation(1000, 7, 1), b = seededPermutation(1000, 7, 1);
  std::vector<int64_t> c = seededPermutation(1000, 8, 1);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> identity(1000);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(sorted, identity);
  EXPECT_NE(a, identity);

  std::string p = prefix("shuffled");
  ASSERT_TRUE(writeIndexedDataset(p, documents(), TokenType::kInt32).isOk());
  IndexedDataset dataset;
  ASSERT_TRUE(IndexedDataset::open(p, dataset).isOk());
  GPTSamples samples;
  ASSERT_TRUE(GPTSamples::create(dataset, 3, SampleOrder::kShuffled, 11, samples).isOk());
  // Every token of the shuffled concatenation is covered by exactly one window start.
  std::vector<int64_t> starts;
  for (int64_t k = 0; k < samples.numSamples(); ++k) {
    std::vector<int64_t> tokens;
    ASSERT_TRUE(samples.get(k, tokens).isOk());
    ASSERT_EQ(tokens.size(), 4u);
    starts.push_back(tokens[0]);
  }
  std::sort(starts.begin(), starts.end());
  EXPECT_EQ(std::unique(starts.begin(), starts.end()), starts.end());
  // Every window is the right slice of the concatenation in the shuffled document order.
  std::vector<int64_t> concatenation;
  for (int64_t document : samples.documentOrder()) {
    ASSERT_TRUE(
        dataset.readDocument(document, 0, dataset.documentLength(document), concatenation).isOk());
  }
  std::vector<int64_t> windowStarts;
  for (int64_t k = 0; k < samples.numSamples(); ++k) {
    std::vector<int64_t> tokens;
    ASSERT_TRUE(samples.get(k, tokens).isOk());
    auto it = std::search(concatenation.begin(), concatenation.end(), tokens.begin(), tokens.end());
    ASSERT_NE(it, concatenation.end()) << k;
    EXPECT_EQ((it - concatenation.begin()) % 3, 0) << k;
    windowStarts.push_back((it - concatenation.begin()) / 3);
  }
  std::vector<int64_t> sampleIds(samples.numSamples());
  std::iota(sampleIds.begin(), sampleIds.end(), 0);
  EXPECT_NE(windowStarts, sampleIds); // visited in a shuffled order
  std::sort(windowStarts.begin(), windowStarts.end());
  EXPECT_EQ(windowStarts, sampleIds); // each sample exactly once
  removeDataset(p);
}

// Rows with labels (prepared from Parquet): sample i is row i as it is, with its own labels;
// each epoch visits every row once, shuffled per epoch, or in file order.
TEST_F(DataTest, RowsWithLabelsAreSamplesAsTheyAre) {
  std::string p = prefix("rows");
  std::vector<std::vector<int64_t>> rows, labels;
  for (int64_t r = 0; r < 5; ++r) {
    rows.push_back({10 * r, 10 * r + 1, 10 * r + 2});
    labels.push_back({-100, 10 * r + 2, -100});
  }
  ASSERT_TRUE(writeIndexedDataset(p, rows, TokenType::kUInt8).isOk());
  ASSERT_TRUE(writeIndexedDataset(labelsPrefix(p), labels, TokenType::kInt16).isOk());
  GPTBatches sequential;
  ASSERT_TRUE(GPTBatches::open(p, 3, SampleOrder::kSequential, 0, sequential).isOk());
  EXPECT_TRUE(sequential.hasLabels());
  EXPECT_EQ(sequential.samplesPerEpoch(), 5);
  std::vector<int64_t> tokens, got;
  ASSERT_TRUE(sequential.fill(4, 2, tokens, got).isOk()); // crosses into epoch 1
  EXPECT_EQ(tokens, (std::vector<int64_t>{40, 41, 42, 0, 1, 2}));
  EXPECT_EQ(got, (std::vector<int64_t>{-100, 42, -100, -100, 2, -100}));

  GPTBatches shuffled;
  ASSERT_TRUE(GPTBatches::open(p, 3, SampleOrder::kShuffled, 3, shuffled).isOk());
  std::vector<int64_t> firsts[2];
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    for (int64_t i = 0; i < 5; ++i) {
      ASSERT_TRUE(shuffled.fill(epoch * 5 + i, 1, tokens, got).isOk());
      EXPECT_EQ(got[1], tokens[0] + 2); // a row's labels travel with it
      firsts[epoch].push_back(tokens[0] / 10);
    }
    std::vector<int64_t> sorted = firsts[epoch];
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  }
  EXPECT_NE(firsts[0], firsts[1]); // each epoch draws its own order

  // A row of another length than the plan's sequence is an error naming it.
  GPTBatches wrong;
  Status status = GPTBatches::open(p, 4, SampleOrder::kSequential, 0, wrong);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("row 0 has 3 tokens and 3 labels; the plan's sequence length "
                                  "is 4"),
            std::string::npos)
      << status.message();
  // Labels for fewer rows than the tokens: DATA_LOSS.
  labels.pop_back();
  ASSERT_TRUE(writeIndexedDataset(labelsPrefix(p), labels, TokenType::kInt16).isOk());
  status = GPTBatches::open(p, 3, SampleOrder::kSequential, 0, wrong);
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_NE(status.message().find("5 rows of tokens but 4 of labels"), std::string::npos)
      << status.message();
  removeDataset(p);
  removeDataset(labelsPrefix(p));
}

TEST_F(DataTest, TooSmallDatasetIsAnError) {
  std::string p = prefix("small");
  ASSERT_TRUE(writeIndexedDataset(p, {{1, 2, 3}}, TokenType::kInt32).isOk());
  IndexedDataset dataset;
  ASSERT_TRUE(IndexedDataset::open(p, dataset).isOk());
  GPTSamples samples;
  Status status = GPTSamples::create(dataset, 8, SampleOrder::kSequential, 0, samples);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("fewer than one sample"), std::string::npos);
}

TEST_F(DataTest, CorruptFilesAreRejectedWithTheReason) {
  std::string p = prefix("corrupt");
  ASSERT_TRUE(writeIndexedDataset(p, documents(), TokenType::kInt32).isOk());
  std::string idx = readFile(p + ".idx"), bin = readFile(p + ".bin");
  struct Case {
    std::string idx, bin, expected;
  };
  std::string badMagic = idx, badVersion = idx, badType = idx, badOffset = idx, badDocs = idx;
  badMagic[0] = 'X';
  badVersion[9] = 2;
  badType[17] = 7;
  badOffset[34 + 4 * 4 + 8 * 3] = 0x7f;    // last sequence offset far beyond the .bin
  badDocs[34 + 4 * 4 + 8 * 4 + 8 * 4] = 2; // last document index entry != sequence count
  std::string negativeLength = idx, decreasing = idx;
  negativeLength[34 + 3] = static_cast<char>(0x80); // sequence 0 length < 0
  // Document index 0, 1, 2, 3, 4 becomes 0, 2, 1, 3, 4.
  decreasing[34 + 4 * 4 + 8 * 4 + 8 * 1] = 2;
  decreasing[34 + 4 * 4 + 8 * 4 + 8 * 2] = 1;
  std::vector<Case> cases = {
      {idx.substr(0, 20), bin, "shorter than the 34-byte header"},
      {badMagic, bin, "missing the MMIDIDX magic"},
      {badVersion, bin, "unsupported version 2"},
      {badType, bin, "dtype code 7 is not an integer token type"},
      {idx.substr(0, idx.size() - 8), bin, "more than the"},
      {idx + std::string(4, '\0'), bin, "4 bytes follow the document index"},
      {negativeLength, bin, "negative length or offset"},
      {decreasing, bin, "the document index decreases at entry 2"},
      {idx, "", "lies outside the 0-byte file"},
      {idx, bin.substr(0, bin.size() - 4), "lies outside"},
      {badOffset, bin, "lies outside"},
      {badDocs, bin, "the document index must run from 0 to the sequence count"},
  };
  for (const Case &c : cases) {
    writeFile(p + ".idx", c.idx);
    writeFile(p + ".bin", c.bin);
    IndexedDataset dataset;
    Status status = IndexedDataset::open(p, dataset);
    EXPECT_EQ(status.code(), StatusCode::kDataLoss) << c.expected << ": " << status.toString();
    EXPECT_NE(status.message().find(c.expected), std::string::npos) << status.toString();
  }
  IndexedDataset dataset;
  EXPECT_EQ(IndexedDataset::open(prefix("missing"), dataset).code(), StatusCode::kNotFound);
  removeDataset(p);
}

// Narrow and signed token types round-trip, including negative values.
TEST_F(DataTest, NarrowAndSignedTokenTypes) {
  struct Case {
    TokenType type;
    std::vector<int64_t> tokens;
  };
  for (const Case &c :
       {Case{TokenType::kUInt8, {0, 7, 255}}, Case{TokenType::kInt8, {-128, -1, 127}},
        Case{TokenType::kInt16, {-32768, -5, 32767}}}) {
    std::string p = prefix("narrow");
    ASSERT_TRUE(writeIndexedDataset(p, {c.tokens, {1}}, c.type).isOk());
    IndexedDataset dataset;
    ASSERT_TRUE(IndexedDataset::open(p, dataset).isOk());
    std::vector<int64_t> tokens;
    ASSERT_TRUE(dataset.readDocument(0, 0, 3, tokens).isOk());
    EXPECT_EQ(tokens, c.tokens);
    removeDataset(p);
  }
}

// Megatron files may split a document into several sequences (--split-sentences); reading
// and windows cross the sequence boundaries. The index is written by hand here.
TEST_F(DataTest, DocumentsOfSeveralSequences) {
  std::string p = prefix("multiseq");
  // Two documents: sequences [10 11] [12] | [20 21 22]; int32 tokens.
  std::vector<int32_t> lengths = {2, 1, 3};
  std::vector<int64_t> offsets = {0, 8, 12}, documentIndex = {0, 2, 3};
  std::vector<int32_t> tokens = {10, 11, 12, 20, 21, 22};
  std::string idx("MMIDIDX\0\0", 9);
  auto append = [&](const void *data, size_t bytes) {
    idx.append(static_cast<const char *>(data), bytes);
  };
  uint64_t version = 1, sequences = 3, documents = 3;
  append(&version, 8);
  idx += static_cast<char>(TokenType::kInt32);
  append(&sequences, 8);
  append(&documents, 8);
  append(lengths.data(), 12);
  append(offsets.data(), 24);
  append(documentIndex.data(), 24);
  writeFile(p + ".idx", idx);
  writeFile(p + ".bin", std::string(reinterpret_cast<const char *>(tokens.data()), 24));
  IndexedDataset dataset;
  Status status = IndexedDataset::open(p, dataset);
  ASSERT_TRUE(status.isOk()) << status.toString();
  EXPECT_EQ(dataset.numDocuments(), 2);
  EXPECT_EQ(dataset.documentLength(0), 3);
  std::vector<int64_t> read;
  ASSERT_TRUE(dataset.readDocument(0, 1, 2, read).isOk());
  EXPECT_EQ(read, (std::vector<int64_t>{11, 12}));
  GPTSamples samples;
  ASSERT_TRUE(GPTSamples::create(dataset, 2, SampleOrder::kSequential, 0, samples).isOk());
  ASSERT_EQ(samples.numSamples(), 2);
  ASSERT_TRUE(samples.get(1, read).isOk());
  EXPECT_EQ(read, (std::vector<int64_t>{12, 20, 21}));
  removeDataset(p);
}

} // namespace
