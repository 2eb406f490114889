// An empty module: valid MLIR, but no model.
module {
}
