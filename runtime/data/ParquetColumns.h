//===- ParquetColumns.h - Integer list columns of a Parquet file -*- C++ -*-===//
//
// Reads columns of `list<int64>` or `list<int32>` (one token sequence per row, as Hugging Face
// datasets write pre-tokenized data: GovReport's `input_ids` and `labels`) through Apache
// Parquet's C++ reader (libparquet from the pinned PyPI pyarrow wheel). Every compression,
// encoding and page version libparquet reads is accepted. Only mlperf-prepare-data links it:
// the runtime reads our own dataset format.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_DATA_PARQUETCOLUMNS_H
#define MLPERFC_RUNTIME_DATA_PARQUETCOLUMNS_H

#include "runtime/support/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlperf::rt {

/// Whether this build reads Parquet (pyarrow was found when it was configured).
bool parquetSupported();

/// The columns of a Parquet file, by top-level name: for each of `columns`, its rows (each a
/// list of integers), appended to `rows[c]` (so several files concatenate). A missing column
/// (the error lists the file's), a column that is not a list of 32- or 64-bit integers, a
/// null or empty row or a null element, or columns of different row counts are
/// INVALID_ARGUMENT naming the file, the column and the row; an unreadable or corrupt file is
/// DATA_LOSS with libparquet's reason.
Status readParquetIntegerLists(const std::string &path, const std::vector<std::string> &columns,
                               std::vector<std::vector<std::vector<int64_t>>> &rows);

} // namespace mlperf::rt

#endif // MLPERFC_RUNTIME_DATA_PARQUETCOLUMNS_H
