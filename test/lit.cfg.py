# lit configuration for hectorc: dialect round trips, verifier diagnostics, front-end errors,
# and the IR of every example. Tools: hectorc and hector-opt from the build, FileCheck/not from LLVM.
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "hectorc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".hector", ".test"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "fuzz", "python", "unit", "templates", "Inputs", "CMakeLists.txt"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.hector_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%examples", os.path.join(config.hector_src_root, "examples")))
config.substitutions.append(("%templates", os.path.join(config.hector_src_root, "codegen-templates")))

llvm_config.with_system_environment(["HOME", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

tool_dirs = [config.hector_tools_dir, config.llvm_tools_dir]
tools = ["hectorc", "hector-opt"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
