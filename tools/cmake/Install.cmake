# Installation: one self-contained tree, the `hector` python package with the compiler and the
# runtime inside it. `pip install .` (pyproject.toml, scikit-build-core) installs it into the
# environment's site-packages; `cmake --install build --component hector --prefix P` into
# P/hector (then PYTHONPATH=P). Every rule is in the component `hector` (MLIR's helpers add
# install rules of their own for the dialect library, which the package does not need).
# The layout, which hectorc and hector/_native.py look for next to themselves:
#
#   hector/                      the python package (runtime/python/hector)
#   hector/bin/hectorc           the compiler
#   hector/lib/libhector_runtime.so
#   hector/include/hector/...    the runtime's headers (emitted packages copy graph.h and
#                                tensor_pool.h)
#   hector/codegen-templates/hector/...   the kernel templates emitted packages include
#   hector/_build_info.json      the torch the runtime was built against, and this version
#
# Nothing in the tree points back at the source or build directory: hectorc finds the templates,
# headers and runtime relative to its own path, and hector.compile hands it the torch of the
# running interpreter.
set(_dest ${HECTOR_INSTALL_DIR})

install(DIRECTORY ${HECTOR_SOURCE_DIR}/runtime/python/hector/ DESTINATION ${_dest} COMPONENT hector
        PATTERN __pycache__ EXCLUDE PATTERN "*.pyc" EXCLUDE)

if(HECTOR_BUILD_COMPILER)
  # libMLIR/libLLVM stay where the system installed them (/usr/lib/llvm-19/lib): keep their
  # directories in the installed rpath.
  set_target_properties(hectorc PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS hectorc RUNTIME DESTINATION ${_dest}/bin COMPONENT hector)
  install(DIRECTORY ${HECTOR_SOURCE_DIR}/codegen-templates/hector
          DESTINATION ${_dest}/codegen-templates
          COMPONENT hector)
endif()

if(HECTOR_BUILD_RUNTIME)
  set_target_properties(hector_runtime PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS hector_runtime LIBRARY DESTINATION ${_dest}/lib COMPONENT hector)
  install(DIRECTORY ${HECTOR_SOURCE_DIR}/runtime/include/hector DESTINATION ${_dest}/include
          COMPONENT hector)
  # What hector/_native.py checks before it loads the runtime: a torch of another version
  # would fail with undefined symbols, or worse.
  set(_cuda false)
  if(HECTOR_RUNTIME_CUDA)
    set(_cuda true)
  endif()
  file(GENERATE OUTPUT ${HECTOR_BINARY_DIR}/_build_info.json CONTENT
"{\"version\": \"${PROJECT_VERSION}\", \"torch\": \"${HECTOR_TORCH_VERSION}\", \"cuda\": ${_cuda}}
")
  install(FILES ${HECTOR_BINARY_DIR}/_build_info.json DESTINATION ${_dest} COMPONENT hector)
endif()
