func.func @f(%x: tensor<32x64xf32>, %w: tensor<160x32xf32>) -> tensor<32x160xf32> {
  %y = tg.matmul %x, %w {transpose_rhs} : tensor<32x64xf32>, tensor<160x32xf32> -> tensor<32x160xf32>
  return %y : tensor<32x160xf32>
}
