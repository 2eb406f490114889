// An example of the tg dialect: one pre-norm residual block with a bias-free linear layer,
// h = x + rms_norm(x) · Wᵀ, with the Llama 3.1 8B hidden size and RMSNorm epsilon, one
// sequence of 8192 tokens in bf16. The benchmark declarations (models/<benchmark>.mlir) are
// built from the same ops.
func.func @prenorm_linear_block(%x: tensor<1x8192x4096xbf16>, %norm_weight: tensor<4096xbf16>,
                                %proj_weight: tensor<4096x4096xbf16>) -> tensor<1x8192x4096xbf16> {
  %normed = tg.rms_norm %x, %norm_weight {epsilon = 1.0e-05 : f64}
      : tensor<1x8192x4096xbf16>, tensor<4096xbf16>
  %projected = tg.matmul %normed, %proj_weight {transpose_rhs}
      : tensor<1x8192x4096xbf16>, tensor<4096x4096xbf16> -> tensor<1x8192x4096xbf16>
  %h = tg.add %x, %projected : tensor<1x8192x4096xbf16>
  return %h : tensor<1x8192x4096xbf16>
}
