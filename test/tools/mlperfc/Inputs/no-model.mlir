// Valid MLIR with a function but no tg.model: not a model file.
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
