//===- TGOpsTest.cpp - tg ops through the C++ API ------------------------===//
//
// Passes build tg ops without spelling result types; these tests pin down the inferred types
// and the diagnostics a pass author sees when operands do not fit.
//
//===----------------------------------------------------------------------===//

#include "dialects/TG/IR/TGOps.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Registration.h"
#include "compiler/Support/ModelFile.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlperf;

namespace {

class TGOpsTest : public ::testing::Test {
protected:
  TGOpsTest() {
    DialectRegistry registry;
    registerMlperfcDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    module = ModuleOp::create(UnknownLoc::get(&context));
    builder.setInsertionPointToEnd(module->getBody());
    auto funcType = builder.getFunctionType({}, {});
    auto func = func::FuncOp::create(builder, builder.getUnknownLoc(), "f", funcType);
    builder.setInsertionPointToStart(func.addEntryBlock());
  }

  /// A value of the given type: a block argument of a fresh function argument slot.
  Value makeValue(ArrayRef<int64_t> shape, Type elementType) {
    auto type = RankedTensorType::get(shape, elementType);
    Block *block = builder.getInsertionBlock();
    return block->addArgument(type, builder.getUnknownLoc());
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  OpBuilder builder{&context};
};

TEST_F(TGOpsTest, MatmulInfersLinearLayerShape) {
  Value x = makeValue({8, 32, 64}, builder.getBF16Type());
  Value w = makeValue({160, 64}, builder.getBF16Type());
  auto matmul = tg::MatmulOp::create(builder, builder.getUnknownLoc(), x, w,
                                     /*transpose_lhs=*/false, /*transpose_rhs=*/true);
  auto resultType = cast<RankedTensorType>(matmul.getType());
  EXPECT_EQ(resultType.getShape(), ArrayRef<int64_t>({8, 32, 160}));
  EXPECT_TRUE(resultType.getElementType().isBF16());
}

TEST_F(TGOpsTest, MatmulInfersBatchedTransposedLhs) {
  Value a = makeValue({4, 16, 8}, builder.getF32Type());
  Value b = makeValue({4, 16, 5}, builder.getF32Type());
  SmallVector<Type> inferred;
  tg::MatmulOp::Properties props;
  props.transpose_lhs = builder.getUnitAttr();
  tg::MatmulOp::Adaptor adaptor(ValueRange{a, b}, builder.getDictionaryAttr({}), props);
  ASSERT_TRUE(succeeded(
      tg::MatmulOp::inferReturnTypes(&context, builder.getUnknownLoc(), adaptor, inferred)));
  EXPECT_EQ(cast<RankedTensorType>(inferred[0]).getShape(), ArrayRef<int64_t>({4, 8, 5}));
}

TEST_F(TGOpsTest, MatmulContractionMismatchIsDiagnosed) {
  Value a = makeValue({32, 64}, builder.getF32Type());
  Value b = makeValue({32, 160}, builder.getF32Type());
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  SmallVector<Type> inferred;
  tg::MatmulOp::Adaptor adaptor(ValueRange{a, b}, builder.getDictionaryAttr({}),
                                tg::MatmulOp::Properties{});
  EXPECT_TRUE(
      failed(tg::MatmulOp::inferReturnTypes(&context, builder.getUnknownLoc(), adaptor, inferred)));
  EXPECT_NE(message.find("contraction dimensions differ"), std::string::npos) << message;
  EXPECT_NE(message.find("K = 64"), std::string::npos) << message;
  EXPECT_NE(message.find("K = 32"), std::string::npos) << message;
}

TEST_F(TGOpsTest, CleanupPipelineAbsorbsWeightTranspose) {
  Value x = makeValue({32, 64}, builder.getF32Type());
  Value w = makeValue({160, 64}, builder.getF32Type());
  Location loc = builder.getUnknownLoc();
  auto transposed = tg::TransposeOp::create(builder, loc, w, ArrayRef<int64_t>{1, 0});
  EXPECT_EQ(cast<RankedTensorType>(transposed.getType()).getShape(), ArrayRef<int64_t>({64, 160}));
  auto matmul = tg::MatmulOp::create(builder, loc, x, transposed, /*transpose_lhs=*/false,
                                     /*transpose_rhs=*/false);
  // Returned, so that the greedy driver does not erase it as dead code.
  func::ReturnOp::create(builder, loc, matmul.getResult());
  auto func = cast<func::FuncOp>(module->getBody()->front());
  func.setType(builder.getFunctionType(func.getBody().getArgumentTypes(), {matmul.getType()}));

  PassManager pm(&context);
  buildTGCleanupPipeline(pm);
  ASSERT_TRUE(succeeded(pm.run(*module)));

  unsigned transposes = 0;
  tg::MatmulOp rewritten;
  module->walk([&](Operation *op) {
    if (isa<tg::TransposeOp>(op)) {
      ++transposes;
    }
    if (auto mm = dyn_cast<tg::MatmulOp>(op)) {
      rewritten = mm;
    }
  });
  EXPECT_EQ(transposes, 0u);
  ASSERT_TRUE(rewritten);
  EXPECT_TRUE(rewritten.getTransposeRhs());
  EXPECT_FALSE(rewritten.getTransposeLhs());
  EXPECT_EQ(rewritten.getRhs(), w);
}

TEST(ModelFileTest, MissingFileIsRejected) {
  DialectRegistry registry;
  registerMlperfcDialects(registry);
  MLIRContext context(registry);
  ModelFile modelFile(context, "/nonexistent/model.mlir");
  EXPECT_FALSE(modelFile.load());
}

} // namespace
