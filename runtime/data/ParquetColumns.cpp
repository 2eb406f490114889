//===- ParquetColumns.cpp - Integer list columns of a Parquet file -*- C++ -*-===//

#include "runtime/data/ParquetColumns.h"

#ifdef MLPERFC_HAVE_PARQUET
#include <parquet/column_reader.h>
#include <parquet/exception.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/schema.h>
#endif

namespace mlperf::rt {

#ifndef MLPERFC_HAVE_PARQUET

bool parquetSupported() { return false; }

Status readParquetIntegerLists(const std::string &path, const std::vector<std::string> &,
                               std::vector<std::vector<std::vector<int64_t>>> &) {
  return Status(StatusCode::kUnavailable,
                path + ": this build reads no Parquet (pyarrow was not found when it was "
                       "configured: run scripts/setup.sh, then configure again)");
}

#else

bool parquetSupported() { return true; }

namespace {

Status invalid(const std::string &message) { return Status(StatusCode::kInvalidArgument, message); }

/// The rows of one list column, from its repetition and definition levels: repetition 0
/// starts a row, the full definition level carries a value, anything lower is a null or
/// empty list or a null element.
template <typename Reader, typename Value>
Status readListColumn(parquet::ParquetFileReader &file, int column, const std::string &where,
                      std::vector<std::vector<int64_t>> &out) {
  const parquet::ColumnDescriptor *descriptor = file.metadata()->schema()->Column(column);
  const int16_t fullDefinition = descriptor->max_definition_level();
  constexpr int64_t kBatch = 1 << 16;
  std::vector<int16_t> definitions(kBatch), repetitions(kBatch);
  std::vector<Value> values(kBatch);
  int64_t firstRow = static_cast<int64_t>(out.size());
  for (int group = 0; group < file.metadata()->num_row_groups(); ++group) {
    std::shared_ptr<parquet::ColumnReader> columnReader = file.RowGroup(group)->Column(column);
    auto *reader = static_cast<Reader *>(columnReader.get());
    while (reader->HasNext()) {
      int64_t valuesRead = 0;
      int64_t levels = reader->ReadBatch(kBatch, definitions.data(), repetitions.data(),
                                         values.data(), &valuesRead);
      int64_t next = 0;
      for (int64_t k = 0; k < levels; ++k) {
        if (repetitions[k] == 0) {
          out.emplace_back();
        }
        if (out.empty() || definitions[k] < fullDefinition) {
          int64_t row = static_cast<int64_t>(out.size()) - 1 - firstRow;
          return invalid(where + ": row " + std::to_string(std::max<int64_t>(row, 0)) +
                         " is null or empty or holds a null element (token rows must be "
                         "complete)");
        }
        out.back().push_back(static_cast<int64_t>(values[next++]));
      }
      if (next != valuesRead) {
        return Status(StatusCode::kDataLoss, where + ": levels and values disagree");
      }
    }
  }
  return Status::ok();
}

} // namespace

Status readParquetIntegerLists(const std::string &path, const std::vector<std::string> &columns,
                               std::vector<std::vector<std::vector<int64_t>>> &rows) {
  rows.resize(columns.size());
  try {
    std::unique_ptr<parquet::ParquetFileReader> file =
        parquet::ParquetFileReader::OpenFile(path, /*memory_map=*/false);
    const parquet::SchemaDescriptor *schema = file->metadata()->schema();
    int64_t expectedRows = file->metadata()->num_rows();
    for (size_t c = 0; c < columns.size(); ++c) {
      int found = -1;
      std::string available;
      for (int i = 0; i < schema->num_columns(); ++i) {
        std::string top = schema->Column(i)->path()->ToDotVector().front();
        available += (available.empty() ? "" : ", ") + top;
        if (top == columns[c]) {
          found = i;
          break;
        }
      }
      std::string where = path + ": column '" + columns[c] + "'";
      if (found < 0) {
        return invalid(path + ": no column '" + columns[c] + "' (the file has: " + available + ")");
      }
      const parquet::ColumnDescriptor *descriptor = schema->Column(found);
      if (descriptor->max_repetition_level() != 1) {
        return invalid(where + " is not a list column (one token sequence per row)");
      }
      size_t before = rows[c].size();
      Status status;
      switch (descriptor->physical_type()) {
      case parquet::Type::INT64:
        status = readListColumn<parquet::Int64Reader, int64_t>(*file, found, where, rows[c]);
        break;
      case parquet::Type::INT32:
        status = readListColumn<parquet::Int32Reader, int32_t>(*file, found, where, rows[c]);
        break;
      default:
        return invalid(where + " holds " + parquet::TypeToString(descriptor->physical_type()) +
                       " values, not 32- or 64-bit integers");
      }
      MLPERF_RETURN_IF_ERROR(status);
      if (static_cast<int64_t>(rows[c].size() - before) != expectedRows) {
        return Status(StatusCode::kDataLoss,
                      where + ": " + std::to_string(rows[c].size() - before) +
                          " rows, the file's metadata says " + std::to_string(expectedRows));
      }
    }
  } catch (const std::exception &error) {
    return Status(StatusCode::kDataLoss, path + ": not a readable Parquet file: " + error.what());
  }
  return Status::ok();
}

#endif

} // namespace mlperf::rt
