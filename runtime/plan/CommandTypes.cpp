//===- CommandTypes.cpp - Operand and result types of plan commands -*- C++ -*-===//
//
// The shape and dtype rules of every command, mirroring the tg verifiers: the loader applies
// them to untrusted plans so that a backend can index buffers without further checks.
//
//===----------------------------------------------------------------------===//

#include "runtime/plan/CommandTypes.h"

#include "runtime/plan/DTypes.h"
#include "runtime/plan/ElementwiseProgram.h"
#include "runtime/plan/PlanLoader.h"

#include <algorithm>
#include <string_view>

namespace mlperf::rt {
namespace {

using Shape = std::vector<int64_t>;

/// The float types kernels read as float elements: f64 buffers (per-token loss statistics)
/// are accepted only by the ops that name them.
bool isFloatType(plan::DType dtype) {
  const DTypeInfo *info = dtypeWithPlanCode(dtype);
  return info && info->isFloat && info->type != DType::kF64;
}

bool isFp8(plan::DType dtype) { return dtype == plan::F8E4M3FN || dtype == plan::F8E5M2; }

std::string describe(const Shape &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    text += (i ? "x" : "") + std::to_string(shape[i]);
  }
  return text + "]";
}

int64_t elements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    n *= d;
  }
  return n;
}

class Checker {
public:
  Checker(const plan::Plan &plan, const plan::Command &command) : plan(plan), command(command) {}

  std::string run();

private:
  const plan::Buffer &operand(int i) const { return plan.buffers(command.operands(i)); }
  const plan::Buffer &result(int i) const { return plan.buffers(command.results(i)); }
  static Shape shape(const plan::Buffer &b) { return {b.shape().begin(), b.shape().end()}; }
  Shape in(int i) const { return shape(operand(i)); }
  Shape out(int i = 0) const { return shape(result(i)); }

  const plan::Attribute *attribute(std::string_view name) const {
    return findAttribute(command, name);
  }
  /// An integer attribute in [0, bound), or -1 after recording the problem.
  int64_t index(const char *name, int64_t bound) {
    const plan::Attribute *a = attribute(name);
    if (!a || a->value_case() != plan::Attribute::kI || a->i() < 0 || a->i() >= bound) {
      fail(std::string("attribute '") + name + "' must be an integer in [0, " +
           std::to_string(bound) + ")");
      return -1;
    }
    return a->i();
  }
  void fail(const std::string &message) {
    if (problem.empty()) {
      problem = message;
    }
  }
  void expect(bool condition, const std::string &message) {
    if (!condition) {
      fail(message);
    }
  }
  void floats(std::initializer_list<const plan::Buffer *> buffers) {
    for (const plan::Buffer *b : buffers) {
      expect(isFloatType(b->dtype()), "buffer '" + b->name() + "' must hold floats");
    }
  }
  void integers(const plan::Buffer &b) {
    expect(!isFloatType(b.dtype()), "buffer '" + b.name() + "' must hold integers");
  }
  void sameShape(const Shape &a, const Shape &b) {
    expect(a == b, "shapes " + describe(a) + " and " + describe(b) + " must be equal");
  }
  void scalar(const plan::Buffer &b) {
    expect(b.shape_size() == 0, "buffer '" + b.name() + "' must be a scalar");
  }
  /// The group size of the mesh axis `axisAttr` names, or 0 after recording the problem.
  int64_t axisMembers(const plan::Attribute *axisAttr) {
    MeshAxis axis;
    if (!axisAttr || axisAttr->value_case() != plan::Attribute::kS ||
        !parseMeshAxis(axisAttr->s(), axis) || !planMesh(plan).hasAxis(axis)) {
      fail("attribute 'axis' must name an axis of the mesh (dp, tp, pp; dp_shard and "
           "dp_replicate with hsdp)");
      return 0;
    }
    return planMesh(plan).axisSize(axis);
  }
  void allOperandsAndResultsFloat() {
    for (int i = 0; i < command.operands_size(); ++i) {
      floats({&operand(i)});
    }
    for (int i = 0; i < command.results_size(); ++i) {
      floats({&result(i)});
    }
  }

  /// The optional sliding `window` of a mask or attention: the keys a query sees before
  /// itself, >= 0.
  void window() {
    const plan::Attribute *w = attribute("window");
    expect(!w || (w->value_case() == plan::Attribute::kI && w->i() >= 0),
           "attribute 'window' must be an integer >= 0");
  }

  /// The fused losses' `logits_type`: what their chunks of logits are rounded to.
  void logitsType() {
    const plan::Attribute *logits = attribute("logits_type");
    expect(logits && logits->value_case() == plan::Attribute::kS &&
               (logits->s() == "f32" || logits->s() == "bf16"),
           "attribute 'logits_type' must be \"f32\" or \"bf16\"");
  }

  /// The pieces of a vocabulary-split loss (runtime/cpu/VocabLoss.h): (logits | hidden,
  /// weight), labels, the f32 maxima and the f64 statistics [2, tokens...] per token.
  void vocabLossPiece(const std::string &op) {
    const bool linear = op.rfind("linear_", 0) == 0;
    const bool grad = op.size() > 5 && op.compare(op.size() - 5, 5, "_grad") == 0;
    Shape tokens;
    int next = 0; // the operand after the logits (or the hidden states and weight)
    if (op == "vocab_loss") {
      tokens = in(2);
    } else if (linear) {
      Shape hidden = in(0), weight = in(1);
      floats({&operand(0), &operand(1)});
      expect(hidden.size() >= 2 && weight.size() == 2 && weight[1] == hidden.back(),
             op + " needs hidden [..., d] and weight [vocab, d], got " + describe(hidden) +
                 " and " + describe(weight));
      logitsType();
      tokens = Shape(hidden.begin(), hidden.end() - (hidden.empty() ? 0 : 1));
      next = 2;
    } else {
      Shape logits = in(0);
      floats({&operand(0)});
      expect(!logits.empty(), "logits must be [..., vocab]");
      tokens = Shape(logits.begin(), logits.end() - (logits.empty() ? 0 : 1));
      next = 1;
    }
    Shape stats{2};
    stats.insert(stats.end(), tokens.begin(), tokens.end());
    auto maxima = [&](const plan::Buffer &b) {
      expect(b.dtype() == plan::F32 && shape(b) == tokens,
             "buffer '" + b.name() + "' must hold f32 maxima " + describe(tokens));
    };
    auto statistics = [&](const plan::Buffer &b) {
      expect(b.dtype() == plan::F64 && shape(b) == stats,
             "buffer '" + b.name() + "' must hold f64 statistics " + describe(stats));
    };
    auto labels = [&](int i) {
      integers(operand(i));
      sameShape(in(i), tokens);
    };
    auto mask = [&](int i) {
      if (command.operands_size() > i) {
        floats({&operand(i)});
        sameShape(in(i), tokens);
      }
    };
    if (op == "vocab_max" || op == "linear_vocab_max") {
      maxima(result(0));
    } else if (op == "vocab_stats" || op == "linear_vocab_stats") {
      labels(next);
      maxima(operand(next + 1));
      statistics(result(0));
    } else if (op == "vocab_loss") {
      maxima(operand(0));
      statistics(operand(1));
      labels(2);
      mask(3);
      floats({&result(0)});
      scalar(result(0));
    } else if (grad) {
      labels(next);
      floats({&operand(next + 1)});
      scalar(operand(next + 1));
      maxima(operand(next + 2));
      statistics(operand(next + 3));
      mask(next + 4);
      if (linear) {
        floats({&result(0), &result(1)});
        sameShape(out(0), in(0));
        sameShape(out(1), in(1));
      } else {
        floats({&result(0)});
        sameShape(out(0), in(0));
      }
    }
    if (op == "vocab_stats" || op == "linear_vocab_stats" || grad) {
      expect(attribute("vocab_shard_axis") != nullptr,
             op + " needs attribute 'vocab_shard_axis' (the axis that splits the vocabulary)");
    }
  }

  const plan::Plan &plan;
  const plan::Command &command;
  std::string problem;
};

std::string Checker::run() {
  const std::string &op = command.op();
  if (const plan::Attribute *vocab = attribute("vocab_shard_axis")) {
    MeshAxis axis;
    // A whole loss on a split vocabulary would need its peers' pieces: the plan holds it as
    // local pieces around all-reduces (dist-lower-vocab-loss).
    expect(op == "embedding" || op == "embedding_grad" || op == "vocab_stats" ||
               op == "linear_vocab_stats" || op == "vocab_cross_entropy_grad" ||
               op == "linear_vocab_cross_entropy_grad",
           "only embedding commands and the pieces of a vocabulary-split loss take a split "
           "vocabulary");
    expect(vocab->value_case() == plan::Attribute::kS && parseMeshAxis(vocab->s(), axis),
           "attribute 'vocab_shard_axis' must be one of dp, tp, pp");
  }
  if (op == "add" || op == "mul" || op == "silu_grad") {
    allOperandsAndResultsFloat();
    sameShape(in(0), out());
    sameShape(in(1), out());
  } else if (op == "swiglu" || op == "swiglu_grad") {
    allOperandsAndResultsFloat();
    for (int i = 0; i < command.operands_size(); ++i) {
      sameShape(in(i), out());
    }
    if (op == "swiglu_grad") {
      sameShape(out(0), out(1));
    }
    for (int i = 1; i < command.operands_size(); ++i) {
      expect(operand(i).dtype() == operand(0).dtype(), "swiglu operands must share a dtype");
    }
  } else if (op == "scale" || op == "silu" || op == "convert") {
    allOperandsAndResultsFloat();
    sameShape(in(0), out());
  } else if (op == "copy") { // of any dtype: token ids into a sub-program's inputs too
    sameShape(in(0), out());
    expect(operand(0).dtype() == result(0).dtype(), "copy must keep the dtype");
  } else if (op == "reshape") {
    expect(isFloatType(operand(0).dtype()) == isFloatType(result(0).dtype()) &&
               elements(in(0)) == elements(out()),
           "reshape must keep the element count and kind");
  } else if (op == "causal_mask") {
    allOperandsAndResultsFloat();
    sameShape(in(0), out());
    Shape s = out();
    expect(s.size() >= 2 && s[s.size() - 1] == s[s.size() - 2], "needs square trailing dims");
    window();
  } else if (op == "softmax" || op == "softmax_grad") {
    allOperandsAndResultsFloat();
    for (int i = 0; i < command.operands_size(); ++i) {
      sameShape(in(i), out());
    }
    index("dim", static_cast<int64_t>(out().size()));
  } else if (op == "matmul" || op == "fp8_matmul") {
    allOperandsAndResultsFloat();
    if (op == "fp8_matmul") {
      expect(isFp8(operand(0).dtype()) && isFp8(operand(1).dtype()) &&
                 (result(0).dtype() == plan::BF16 || result(0).dtype() == plan::F32),
             "fp8_matmul multiplies fp8 operands into bf16 or f32");
      scalar(operand(2));
      scalar(operand(3));
      expect(operand(2).dtype() == plan::F32 && operand(3).dtype() == plan::F32,
             "fp8_matmul's scales must be f32");
    }
    Shape a = in(0), b = in(1), c = out();
    if (a.size() < 2 || (b.size() != 2 && b.size() != a.size()) || c.size() != a.size()) {
      fail("operand ranks " + describe(a) + ", " + describe(b) + " -> " + describe(c) +
           " do not form a matmul");
      return problem;
    }
    const plan::Attribute *ta = attribute("transpose_lhs"), *tb = attribute("transpose_rhs");
    bool transposeA = ta && ta->i(), transposeB = tb && tb->i();
    size_t r = a.size(), rb = b.size();
    int64_t m = transposeA ? a[r - 1] : a[r - 2], k = transposeA ? a[r - 2] : a[r - 1];
    int64_t kb = transposeB ? b[rb - 1] : b[rb - 2], n = transposeB ? b[rb - 2] : b[rb - 1];
    Shape expected(a.begin(), a.end() - 2);
    expected.push_back(m);
    expected.push_back(n);
    bool batchMatches = rb == 2 || std::equal(a.begin(), a.end() - 2, b.begin());
    expect(k == kb && batchMatches && c == expected,
           "matmul " + describe(a) + " x " + describe(b) + " cannot give " + describe(c));
  } else if (op == "fp8_quantize") {
    allOperandsAndResultsFloat();
    sameShape(in(0), out());
    expect(isFp8(result(0).dtype()) && !isFp8(operand(0).dtype()),
           "fp8_quantize casts f32 or bf16 to an fp8 format");
    scalar(operand(1));
    expect(operand(1).dtype() == plan::F32, "fp8_quantize's scale must be f32");
  } else if (op == "amax") {
    allOperandsAndResultsFloat();
    scalar(result(0));
    expect(result(0).dtype() == plan::F32, "amax is an f32 scalar");
  } else if (op == "fp8_current_scale") {
    allOperandsAndResultsFloat();
    scalar(operand(0));
    scalar(result(0));
    expect(operand(0).dtype() == plan::F32 && result(0).dtype() == plan::F32,
           "fp8_current_scale maps an f32 amax to an f32 scale");
    const plan::Attribute *fp8Max = attribute("fp8_max");
    expect(fp8Max && fp8Max->value_case() == plan::Attribute::kF && fp8Max->f() > 0,
           "attribute 'fp8_max' must be a positive float");
  } else if (op == "fp8_scale_update") {
    allOperandsAndResultsFloat();
    for (int i = 0; i < 3; ++i) {
      expect((i == 0 || operand(i).shape_size() == 0) && operand(i).dtype() == plan::F32,
             "fp8_scale_update takes an f32 history, amax and scale");
    }
    expect(in(0).size() == 1 && in(0)[0] >= 1, "the amax history must be 1-D and non-empty");
    sameShape(in(0), out(0));
    scalar(result(1));
    expect(result(0).dtype() == plan::F32 && result(1).dtype() == plan::F32,
           "fp8_scale_update returns an f32 history and scale");
    const plan::Attribute *algo = attribute("amax_compute_algo");
    expect(algo && algo->value_case() == plan::Attribute::kS &&
               (algo->s() == "most_recent" || algo->s() == "max"),
           "attribute 'amax_compute_algo' must be \"most_recent\" or \"max\"");
    const plan::Attribute *fp8Max = attribute("fp8_max"), *margin = attribute("margin");
    expect(fp8Max && fp8Max->value_case() == plan::Attribute::kF && fp8Max->f() > 0 && margin &&
               margin->value_case() == plan::Attribute::kF && margin->f() >= 0,
           "attributes 'fp8_max' (positive) and 'margin' (non-negative) must be floats");
  } else if (op == "transpose") {
    floats({&operand(0), &result(0)});
    const plan::Attribute *perm = attribute("permutation");
    Shape s = in(0), t = out();
    if (!perm || perm->value_case() != plan::Attribute::kInts ||
        perm->ints().values_size() != static_cast<int>(s.size()) || t.size() != s.size()) {
      fail("needs a permutation of the operand's " + std::to_string(s.size()) + " dims");
      return problem;
    }
    std::vector<bool> seen(s.size(), false);
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t p = perm->ints().values(static_cast<int>(i));
      if (p < 0 || p >= static_cast<int64_t>(s.size()) || seen[p] || t[i] != s[p]) {
        fail("permutation and result shape " + describe(t) + " do not match " + describe(s));
        return problem;
      }
      seen[p] = true;
    }
  } else if (op == "embedding") {
    Shape table = in(0), ids = in(1), y = out();
    floats({&operand(0), &result(0)});
    integers(operand(1));
    Shape expected = ids;
    expected.push_back(table.size() == 2 ? table[1] : -1);
    expect(table.size() == 2 && y == expected, "embedding shapes do not match");
  } else if (op == "embedding_grad") {
    Shape ids = in(0), grad = in(1), table = out();
    integers(operand(0));
    floats({&operand(1), &result(0)});
    Shape expected = ids;
    expected.push_back(table.size() == 2 ? table[1] : -1);
    expect(table.size() == 2 && grad == expected, "embedding_grad shapes do not match");
  } else if (op == "add_rms_norm") {
    allOperandsAndResultsFloat();
    Shape x = in(0), w = in(2);
    expect(!x.empty() && w == Shape{x.back()}, "the weight must match the last dim");
    sameShape(x, in(1));
    sameShape(x, out(0));
    sameShape(x, out(1));
  } else if (op == "rms_norm" || op == "rms_norm_grad") {
    allOperandsAndResultsFloat();
    Shape x = in(0), w = in(1);
    expect(!x.empty() && w == Shape{x.back()}, "the weight must match the last dim");
    sameShape(x, out(0));
    if (op == "rms_norm_grad") {
      sameShape(x, in(2));
      sameShape(w, out(1));
    }
  } else if (op == "attention" || op == "attention_grad") {
    // The kernel indexes by these shapes (runtime/cpu/Attention.h): a plan that lies about
    // them would read out of bounds.
    allOperandsAndResultsFloat();
    Shape q = in(0), k = in(1), v = in(2);
    bool shapes = q.size() == 4 && k.size() == 4 && k == v && q[0] == k[0] && q[3] == k[3] &&
                  k[1] > 0 && q[1] % k[1] == 0;
    expect(shapes, "attention needs query [b, h, s, d] and key = value [b, kv, s', d] with kv "
                   "dividing h, got " +
                       describe(q) + ", " + describe(k) + ", " + describe(v));
    const plan::Attribute *causal = attribute("causal");
    expect(!(causal && causal->i()) || (shapes && q[2] == k[2]),
           "causal attention needs as many queries as keys");
    window();
    expect(!attribute("window") || (causal && causal->i()),
           "a window (sliding-window attention) needs causal");
    expect(attribute("scale") && attribute("scale")->value_case() == plan::Attribute::kF,
           "attribute 'scale' must be a float");
    if (shapes && op == "attention") {
      sameShape(q, out(0));
      sameShape({q[0], q[1], q[2]}, out(1));
    } else if (shapes) {
      const plan::Attribute *tokensMajor = attribute("output_tokens_major");
      sameShape(tokensMajor && tokensMajor->i() ? Shape{q[0], q[2], q[1], q[3]} : q,
                in(3)); // the forward's output
      sameShape({q[0], q[1], q[2]}, in(4));
      sameShape(q, in(5));
      sameShape(q, out(0));
      sameShape(k, out(1));
      sameShape(v, out(2));
    }
  } else if (op == "rope_qk") {
    allOperandsAndResultsFloat();
    Shape q = in(0), k = in(1);
    sameShape(q, out(0));
    sameShape(k, out(1));
    expect(
        q.size() == 4 && k.size() == 4 && q[0] == k[0] && q[1] == k[1] && q[3] == k[3] &&
            q[3] % 2 == 0,
        "rope_qk needs [batch, seq, heads, even dim] queries and keys of one batch, seq and dim");
  } else if (op == "rope") {
    allOperandsAndResultsFloat();
    sameShape(in(0), out());
    expect(out().size() == 4 && out()[3] % 2 == 0, "rope needs [batch, seq, heads, even dim]");
  } else if (op == "repeat" || op == "repeat_grad") {
    allOperandsAndResultsFloat();
    Shape small = op == "repeat" ? in(0) : out(), large = op == "repeat" ? out() : in(0);
    int64_t dim = index("dim", static_cast<int64_t>(small.size()));
    const plan::Attribute *times = attribute("times");
    if (dim >= 0) {
      Shape expected = small;
      bool valid = times && times->value_case() == plan::Attribute::kI && times->i() > 0 &&
                   !__builtin_mul_overflow(expected[dim], times->i(), &expected[dim]);
      expect(valid && large == expected, "repeat shapes do not match");
    }
  } else if (op == "split" || op == "concat") {
    bool split = op == "split";
    if (split) { // of floats, or of token ids (the train step's micro-batches)
      for (int i = 0; i < command.results_size(); ++i) {
        expect(isFloatType(result(i).dtype()) == isFloatType(operand(0).dtype()),
               "split must keep the element kind");
      }
    } else {
      allOperandsAndResultsFloat();
    }
    Shape whole = split ? in(0) : out();
    int64_t dim = index("dim", static_cast<int64_t>(whole.size()));
    if (dim >= 0) {
      int64_t total = 0;
      int pieces = split ? command.results_size() : command.operands_size();
      for (int i = 0; i < pieces; ++i) {
        Shape piece = split ? out(i) : in(i);
        Shape other = whole;
        if (piece.size() == whole.size()) {
          other[dim] = piece[dim];
          total += piece[dim];
        }
        expect(piece == other, "piece " + describe(piece) + " does not fit " + describe(whole));
      }
      expect(total == whole[dim], "the pieces do not add up to " + describe(whole));
    }
  } else if (op == "cross_entropy" || op == "cross_entropy_grad") {
    Shape logits = in(0), labels = in(1);
    floats({&operand(0), &result(0)});
    integers(operand(1));
    expect(!logits.empty() && Shape(logits.begin(), logits.end() - 1) == labels,
           "labels " + describe(labels) + " do not match logits " + describe(logits));
    int mask = op == "cross_entropy" ? 2 : 3;
    if (command.operands_size() > mask) {
      floats({&operand(mask)});
      sameShape(in(mask), labels);
    }
    if (op == "cross_entropy") {
      scalar(result(0));
    } else {
      floats({&operand(2)});
      scalar(operand(2));
      sameShape(out(), logits);
    }
  } else if (op == "linear_cross_entropy" || op == "linear_cross_entropy_grad") {
    bool gradient = op == "linear_cross_entropy_grad";
    Shape hidden = in(0), weight = in(1), labels = in(2);
    floats({&operand(0), &operand(1), &result(0)});
    integers(operand(2));
    expect(hidden.size() >= 2 && weight.size() == 2 && weight[1] == hidden.back() &&
               Shape(hidden.begin(), hidden.end() - 1) == labels,
           "linear_cross_entropy needs hidden [..., d], weight [vocab, d] and labels [...], got " +
               describe(hidden) + ", " + describe(weight) + ", " + describe(labels));
    logitsType();
    int mask = gradient ? 4 : 3;
    if (command.operands_size() > mask) {
      floats({&operand(mask)});
      sameShape(in(mask), labels);
    }
    if (gradient) {
      floats({&operand(3), &result(1)});
      scalar(operand(3));
      sameShape(out(0), hidden);
      sameShape(out(1), weight);
    } else {
      scalar(result(0));
    }
  } else if (op == "vocab_max" || op == "linear_vocab_max" || op == "vocab_stats" ||
             op == "linear_vocab_stats" || op == "vocab_loss" || op == "vocab_cross_entropy_grad" ||
             op == "linear_vocab_cross_entropy_grad") {
    vocabLossPiece(op);
  } else if (op == "fill") {
    floats({&result(0)});
  } else if (op == "mean_accumulate" || op == "mean_finish") {
    // Evaluation's running mean: f64 [sum, count] (tg.mean_accumulate, tg.mean_finish).
    auto running = [&](const plan::Buffer &b) {
      expect(b.dtype() == plan::F64 && shape(b) == Shape{2},
             "buffer '" + b.name() + "' must hold the running mean, f64 [2] (sum, count)");
    };
    running(operand(0));
    if (op == "mean_accumulate") {
      expect(operand(1).dtype() == plan::F32 && shape(operand(1)).empty(),
             "buffer '" + operand(1).name() + "' must be the f32 scalar to add");
      if (command.operands_size() == 3) {
        floats({&operand(2)}); // the weights: a loss mask
      }
      running(result(0));
    } else {
      expect(result(0).dtype() == plan::F64 && shape(result(0)).empty(),
             "buffer '" + result(0).name() + "' must be the f64 scalar mean");
      running(result(1));
    }
  } else if (op == "lr_value") {
    integers(operand(0));
    scalar(operand(0));
    floats({&result(0)});
    scalar(result(0));
  } else if (op == "global_norm" || op == "clip_coefficient" || op == "sum_squares" ||
             op == "sqrt") {
    allOperandsAndResultsFloat();
    scalar(result(0));
    if (op == "clip_coefficient" || op == "sqrt") {
      scalar(operand(0));
    }
  } else if (op == "all_to_all") {
    // rows [N, d] and i32 rows per member [G] -> received rows [R, d] and i32 rows from each
    // member [G], G the axis' group size.
    int64_t members = axisMembers(attribute("axis"));
    if (members < 1) {
      return problem;
    }
    Shape rows = in(0), received = out(0);
    floats({&operand(0), &result(0)});
    expect(operand(0).dtype() == result(0).dtype(), "an all_to_all keeps the dtype");
    expect(operand(1).dtype() == plan::I32 && result(1).dtype() == plan::I32,
           "an all_to_all's rows per member are i32");
    expect(rows.size() == 2 && received.size() == 2 && rows[1] == received[1] && rows[1] > 0 &&
               in(1) == Shape{members} && out(1) == Shape{members},
           "an all_to_all needs rows [N, d] and [R, d] and one row count per member of the " +
               std::to_string(members) + ", got " + describe(rows) + ", " + describe(received) +
               ", " + describe(in(1)) + ", " + describe(out(1)));
  } else if (op == "all_reduce" || op == "reduce_scatter" || op == "all_gather") {
    const plan::Attribute *reduction = attribute("reduction");
    expect(!reduction || (op == "all_reduce" && reduction->value_case() == plan::Attribute::kS &&
                          (reduction->s() == "sum" || reduction->s() == "max")),
           "attribute 'reduction' of an all_reduce is \"sum\" or \"max\"");
    if (op == "all_reduce" && operand(0).dtype() == plan::F64) {
      // A vocabulary-split loss's statistics: summed in f64.
      expect(!reduction || reduction->s() == "sum", "an f64 all_reduce sums");
    } else {
      allOperandsAndResultsFloat();
    }
    if (reduction && reduction->s() == "max") {
      expect(operand(0).dtype() == plan::F32, "a maximum over ranks takes f32 values");
    }
    expect(operand(0).dtype() == result(0).dtype(), "a collective keeps the dtype");
    const plan::Attribute *axisAttr = attribute("axis");
    int64_t members = axisMembers(axisAttr);
    if (members < 1) {
      return problem;
    }
    if (op == "all_reduce") {
      sameShape(in(0), out());
    } else {
      // Split or gathered along `dim` (default 0); every dim before it is 1, so each rank's
      // part is one contiguous block of the flattened tensor.
      const plan::Attribute *dimAttr = attribute("dim");
      int64_t dim = dimAttr && dimAttr->value_case() == plan::Attribute::kI ? dimAttr->i() : 0;
      Shape shard = op == "reduce_scatter" ? out() : in(0);
      Shape whole = op == "reduce_scatter" ? in(0) : out();
      bool valid =
          shard.size() == whole.size() && dim >= 0 && dim < static_cast<int64_t>(whole.size());
      for (int64_t d = 0; valid && d < static_cast<int64_t>(whole.size()); ++d) {
        valid = d < dim ? whole[d] == 1 && shard[d] == 1
                        : whole[d] == (d == dim ? shard[d] * members : shard[d]);
      }
      expect(valid, "a " + op + " over " + std::to_string(members) + " " + axisAttr->s() +
                        " ranks along dim " + std::to_string(dim) +
                        " (every dim before it 1) cannot map " + describe(in(0)) + " -> " +
                        describe(out()));
    }
  } else if (op == "dropout") {
    floats({&operand(0), &result(0)});
    integers(operand(1));
    sameShape(in(0), out());
    expect(in(1) == Shape{2},
           "a dropout key is [seed, micro-batch counter], got " + describe(in(1)));
    const plan::Attribute *rate = attribute("rate");
    expect(rate && rate->value_case() == plan::Attribute::kF && rate->f() >= 0.0 && rate->f() < 1.0,
           "attribute 'rate' must be a float in [0, 1)");
    const plan::Attribute *name = attribute("name");
    expect(name && name->value_case() == plan::Attribute::kS && !name->s().empty() &&
               name->s().find("{i}") == std::string::npos,
           "attribute 'name' must be the dropout's (layer-resolved) name");
    const plan::Attribute *parts = attribute("parts");
    if (parts && parts->value_case() == plan::Attribute::kI && parts->i() > 1) {
      int64_t dim = index("part_dim", static_cast<int64_t>(out().size()));
      expect(dim < 0 || axisMembers(attribute("part_axis")) == parts->i(),
             "a dropout in " + std::to_string(parts->i()) + " parts needs a mesh axis of " +
                 std::to_string(parts->i()) + " ranks");
    }
  } else if (op == "dropout_key" || op == "eval_dropout_key") {
    integers(result(0));
    expect(out() == Shape{2},
           "a dropout key is [seed, micro-batch counter], got " + describe(out()));
    if (op == "dropout_key") {
      for (int i = 0; i < 2; ++i) {
        integers(operand(i));
        scalar(operand(i));
      }
      const plan::Attribute *micro = attribute("micro_batch"), *micros = attribute("micro_batches"),
                            *dp = attribute("data_parallel");
      expect(micro && micros && dp && micro->value_case() == plan::Attribute::kI &&
                 micros->value_case() == plan::Attribute::kI &&
                 dp->value_case() == plan::Attribute::kI && micros->i() >= 1 && dp->i() >= 1 &&
                 micro->i() >= 0 && micro->i() < micros->i(),
             "attributes 'micro_batch' (< 'micro_batches') and 'data_parallel' must be "
             "integers");
      if (dp && dp->value_case() == plan::Attribute::kI && dp->i() > 1) {
        expect(axisMembers(attribute("data_parallel_axis")) == dp->i(),
               "a dropout_key over " + std::to_string(dp->i()) +
                   " data-parallel ranks needs a mesh axis of that many ranks");
      }
    }
  } else if (op == "random_normal" || op == "random_uniform") {
    integers(operand(0));
    scalar(operand(0));
    floats({&result(0)});
    const plan::Attribute *parts = attribute("parts");
    if (parts && parts->value_case() == plan::Attribute::kI && parts->i() > 1) {
      int64_t dim = index("part_dim", static_cast<int64_t>(out().size()));
      int64_t members = axisMembers(attribute("part_axis"));
      expect(dim < 0 || members == parts->i(), "a " + op + " in " + std::to_string(parts->i()) +
                                                   " parts needs a mesh axis of " +
                                                   std::to_string(parts->i()) + " ranks");
      // Blocks: full sizes adding up to the split dim, each split into the parts.
      if (const plan::Attribute *blocks = attribute("part_blocks"); blocks && dim >= 0) {
        int64_t total = 0;
        bool divisible = blocks->value_case() == plan::Attribute::kInts;
        for (int64_t block : blocks->ints().values()) {
          divisible = divisible && block > 0 && block % parts->i() == 0;
          total += block;
        }
        expect(divisible && total == out()[dim] * parts->i(),
               "a " + op + "'s part_blocks must be positive multiples of its " +
                   std::to_string(parts->i()) + " parts adding up to the full dim " +
                   std::to_string(dim) + " (" + std::to_string(out()[dim] * parts->i()) + ")");
      }
    }
    index("stream", int64_t{1} << 32);
  } else if (op == "local_shard") {
    allOperandsAndResultsFloat();
    int64_t members = axisMembers(attribute("axis"));
    expect(members < 1 ||
               (in(0).size() == 1 && out().size() == 1 && in(0)[0] == out()[0] * members),
           "a local_shard over " + std::to_string(members) + " ranks cannot map " +
               describe(in(0)) + " -> " + describe(out()));
  } else if (op == "send" || op == "recv") {
    // Floats travel as f32 (bf16 values are exact in it).
    floats({op == "send" ? &operand(0) : &result(0)});
    const plan::Attribute *axisAttr = attribute("axis");
    const plan::Attribute *shift = attribute("shift");
    int64_t members = axisMembers(axisAttr);
    if (members < 1) {
      return problem;
    }
    expect(shift && shift->value_case() == plan::Attribute::kI && shift->i() != 0 &&
               shift->i() > -members && shift->i() < members,
           "attribute 'shift' must be a non-zero integer within the " + std::to_string(members) +
               " ranks of axis " + axisAttr->s());
    index("tag", 32768);
  } else if (op == "call") {
    const plan::Attribute *program = attribute("program");
    expect(program && program->value_case() == plan::Attribute::kS,
           "attribute 'program' must name a program");
  } else if (op == "moe_route" || op == "moe_route_grad") {
    // logits [T, E] -> probs, experts [T, k]; probs, experts, grad [T, k] -> dlogits [T, E].
    const bool forward = op == "moe_route";
    const plan::Buffer &logits = forward ? operand(0) : result(0);
    const plan::Buffer &probs = forward ? result(0) : operand(0);
    const plan::Buffer &experts = forward ? result(1) : operand(1);
    Shape routed = shape(probs);
    expect(logits.dtype() == plan::F32 && probs.dtype() == plan::F32 &&
               experts.dtype() == plan::I32,
           op + " needs f32 logits and probabilities and i32 experts");
    expect(shape(logits).size() == 2 && routed.size() == 2 && shape(experts) == routed &&
               routed[0] == shape(logits)[0] && routed[1] >= 1 && routed[1] <= shape(logits)[1],
           op + " needs logits [tokens, experts] and probabilities and experts [tokens, k] with "
                "1 <= k <= experts");
    if (forward) {
      const plan::Attribute *k = attribute("top_k");
      expect(k && k->value_case() == plan::Attribute::kI && routed.size() == 2 &&
                 k->i() == routed[1],
             "attribute 'top_k' must be the routed width");
    } else {
      expect(operand(2).dtype() == plan::F32 && in(2) == routed,
             "moe_route_grad's gradient must be f32 like the probabilities");
    }
  } else if (op == "moe_sort") {
    Shape experts = in(0), order = out(0), sizes = out(1);
    expect(operand(0).dtype() == plan::I32 && result(0).dtype() == plan::I32 &&
               result(1).dtype() == plan::I32,
           "moe_sort reads and writes i32");
    expect(experts.size() == 2 && order == Shape{elements(experts)} && sizes.size() == 1 &&
               sizes[0] >= experts[1],
           "moe_sort needs experts [tokens, k], order [tokens*k] and group sizes [experts]");
  } else if (op == "moe_permute" || op == "moe_unpermute") {
    const bool gather = op == "moe_permute";
    Shape tokens = gather ? in(0) : out(), rows = gather ? out() : in(0), order = in(1);
    floats({&operand(0), &result(0)});
    expect(operand(1).dtype() == plan::I32, op + "'s order must be i32");
    expect(operand(0).dtype() == result(0).dtype(), op + " keeps the element type");
    expect(tokens.size() == 2 && rows.size() == 2 && order == Shape{rows.empty() ? -1 : rows[0]} &&
               tokens[1] == rows[1] && tokens[0] > 0 && rows[0] % tokens[0] == 0,
           op +
               " needs token rows [S, d], routed rows [N, d] (N a multiple of S) and order "
               "[N], got " +
               describe(tokens) + ", " + describe(rows) + ", " + describe(order));
  } else if (op == "grouped_matmul" || op == "grouped_matmul_weight_grad") {
    const bool forward = op == "grouped_matmul";
    const bool transposed = attribute("transpose_rhs") != nullptr;
    Shape x = in(0), weights = forward ? in(1) : out(), rows = forward ? out() : in(1);
    floats({&operand(0), &operand(1), &result(0)});
    expect(operand(2).dtype() == plan::I32, op + "'s group sizes must be i32");
    expect(operand(0).dtype() == operand(1).dtype() && result(0).dtype() == operand(0).dtype(),
           op + "'s operands and result must share an element type");
    bool ranks = x.size() == 2 && weights.size() == 3 && rows.size() == 2;
    expect(ranks && weights[transposed ? 2 : 1] == x[1] && weights[transposed ? 1 : 2] == rows[1] &&
               rows[0] == x[0] && in(2) == Shape{weights[0]},
           op +
               " needs rows [N, K], weights [E, K, M] ([E, M, K] with transpose_rhs), rows [N, "
               "M] and group sizes [E], got " +
               describe(x) + ", " + describe(weights) + ", " + describe(rows) + ", " +
               describe(in(2)));
  } else if (op == "token_mask") {
    integers(operand(0));
    expect(result(0).dtype() == plan::F32 && out() == in(0),
           "token_mask needs an f32 result of the tokens' shape");
    const plan::Attribute *token = attribute("masked_token");
    expect(token && token->value_case() == plan::Attribute::kI,
           "attribute 'masked_token' must be an integer");
  } else if (op == "scale_rows" || op == "row_dot") {
    Shape x = in(0), reduced = op == "scale_rows" ? in(1) : out();
    floats({&operand(0), &operand(1), &result(0)});
    expect(!x.empty() && reduced == Shape(x.begin(), x.end() - 1),
           op + " needs rows [..., d] and one value per row [...]");
    if (op == "scale_rows") {
      expect(operand(1).dtype() == plan::F32 && out() == x &&
                 result(0).dtype() == operand(0).dtype(),
             "scale_rows needs f32 scales and a result like its input");
    } else {
      expect(in(1) == x && operand(1).dtype() == operand(0).dtype() &&
                 result(0).dtype() == plan::F32,
             "row_dot needs two operands of one type and shape and an f32 result");
    }
  } else if (op == "elementwise") {
    // f32/bf16 operands and results of one shape; a one-element operand is broadcast.
    const plan::Attribute *text = attribute("program");
    if (!text || text->value_case() != plan::Attribute::kS) {
      fail("attribute 'program' must be the element program (a string)");
      return problem;
    }
    const plan::Attribute *arithmetic = attribute("arithmetic");
    if (arithmetic && arithmetic->value_case() != plan::Attribute::kS) {
      fail("attribute 'arithmetic' must be \"f32\" or \"f64\"");
      return problem;
    }
    ElementwiseProgram compiled;
    std::string error =
        compileElementwiseProgram(text->s(), command.operands_size(), command.results_size(),
                                  arithmetic ? arithmetic->s() : "f32", compiled);
    expect(error.empty(), "program " + error);
    for (int i = 0; i < command.operands_size(); ++i) {
      plan::DType type = operand(i).dtype();
      bool integer = type == plan::I64 || type == plan::I32;
      expect(type == plan::F32 || type == plan::BF16 || (integer && compiled.f64),
             "buffer '" + operand(i).name() +
                 "' must hold f32 or bf16 (or, in f64 "
                 "arithmetic, integers)");
      expect(elements(in(i)) == 1 || in(i) == out(0),
             "operand '" + operand(i).name() + "' " + describe(in(i)) +
                 " must have one element or the results' shape " + describe(out(0)));
    }
    for (int i = 0; i < command.results_size(); ++i) {
      expect(result(i).dtype() == plan::F32 || result(i).dtype() == plan::BF16,
             "buffer '" + result(i).name() + "' must hold f32 or bf16");
      sameShape(out(i), out(0));
    }
  }
  return problem;
}

} // namespace

std::string checkCommandTypes(const plan::Plan &plan, const plan::Command &command) {
  return Checker(plan, command).run();
}

} // namespace mlperf::rt
