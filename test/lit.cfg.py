# lit configuration for mlperfc: FileCheck tests of dialects, passes and tools.
import os
import sys

import lit.formats
from lit.llvm import llvm_config

config.name = "mlperfc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.mlperfc_obj_root, "test")

# Captured FileCheck variables are scoped to a CHECK-LABEL block (design convention 5).
config.environment["FILECHECK_OPTS"] = "-enable-var-scope --allow-unused-prefixes=false"

llvm_config.use_default_substitutions()
# Our tools first, then FileCheck/not/count from LLVM 22.
llvm_config.with_environment("PATH", config.mlperfc_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
config.substitutions.append(("%models", os.path.join(config.mlperfc_src_root, "models")))
# The interpreter running lit (Debian's python3): test helpers use only the standard library.
config.substitutions.append(("%python", sys.executable))
llvm_config.add_tool_substitutions(
    ["mlperf-opt", "mlperfc", "mlperf-prepare-data", "mlperf-run"], [config.mlperfc_tools_dir])

# Multi-rank tests: Open MPI's launcher, allowed to run as root (CI containers) and to start
# more ranks than this machine has cores.
config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
config.substitutions.append(("%mpirun", "mpirun --oversubscribe"))
# The doc test (test/docs) runs the README's examples against the tree and the build.
config.substitutions.append(("%src_root", config.mlperfc_src_root))
config.substitutions.append(("%tools_dir", config.mlperfc_tools_dir))
