"""Writes the Parquet fixtures of prepare.test (checked in, so lit needs no pyarrow).

GovReport-like tables as Hugging Face datasets stores them: `input_ids` and unshifted
`labels` (-100 where no loss is taken) per row. Regenerate with the pinned pyarrow:
  .venv/bin/python test/tools/mlperf-prepare-data/Inputs/make_parquet.py
"""
import os

import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))


def write(name, table, **options):
    pq.write_table(table, os.path.join(HERE, name), **options)


# Three rows of six tokens, two row groups, snappy; a prompt of -100 labels in each row.
write("rows.parquet", pa.table({
    "input_ids": [[10, 11, 12, 13, 14, 15], [20, 21, 22, 23, 24, 25], [30, 31, 32, 33, 34, 35]],
    "labels": [[-100, -100, 12, 13, 14, 15], [-100, 21, 22, 23, 24, 25],
               [-100, -100, -100, -100, 34, 35]],
    "attention_mask": [[1] * 6] * 3}), compression="snappy", row_group_size=2)
# int32 lists, Llama 2 sized ids (uint16 tokens), zstd, data page v2, no dictionary.
write("rows_int32.parquet", pa.table({
    "input_ids": pa.array([[31999, 1, 2, 3, 4, 5]], type=pa.list_(pa.int32())),
    "labels": pa.array([[31999, 1, 2, 3, 4, 5]], type=pa.list_(pa.int32()))}),
    compression="zstd", use_dictionary=False, data_page_version="2.0")
write("null_token.parquet", pa.table({"input_ids": [[1, 2, 3], [4, None, 6]],
                                      "labels": [[1, 2, 3], [4, 5, 6]]}))
write("float_ids.parquet", pa.table({"input_ids": [[1.0, 2.0]], "labels": [[1, 2]]}))
write("ragged.parquet", pa.table({"input_ids": [[1, 2, 3]], "labels": [[1, 2]]}))
write("bad_label.parquet", pa.table({"input_ids": [[1, 2, 3]], "labels": [[1, -7, 3]]}))
