// A pre-norm residual block with a linear layer: everything tg has so far.
func.func @block(%x: tensor<8x32x64xbf16>, %norm: tensor<64xbf16>,
                 %w: tensor<64x64xbf16>) -> tensor<8x32x64xbf16> {
  %n = tg.rms_norm %x, %norm {epsilon = 1.0e-05 : f64} : tensor<8x32x64xbf16>, tensor<64xbf16>
  %y = tg.matmul %n, %w {transpose_rhs} : tensor<8x32x64xbf16>, tensor<64x64xbf16> -> tensor<8x32x64xbf16>
  %r = tg.add %x, %y : tensor<8x32x64xbf16>
  return %r : tensor<8x32x64xbf16>
}
