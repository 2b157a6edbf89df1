"""``llvm`` for the bindings' op views: no op classes, so LLVM-dialect ops are plain
``OpView`` s (``name``, ``attributes``: all the last stage reads). ``mlir.dialects.llvm``
imports the generated classes of every LLVM op and intrinsic: about 75 ms of each
process's first compile."""
