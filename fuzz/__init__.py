"""The fuzzing harness for the guest's own C (``sandbox/_guest/*.c``); not part of the wheel.

Two targets, built by :mod:`fuzz.build` and driven by :mod:`fuzz.run` (``make fuzz``):

* ``qjfuzz``: QuickJS-ng and the guest shim compiled natively by gcc with AddressSanitizer and
  UBSan (64-bit: the pinned zig instruments ``-fsanitize=address`` but ships no ASan runtime,
  measured), the heap replaced by the system allocator so ASan sees every block, and
  ``native/harness.c`` as the host. It runs generated programs and host replies
  (:mod:`fuzz.gen`).
* ``heapfuzz``: the guest's own heap (``heap.c``, TLSF) built by the pinned zig for 32-bit x86
  with UBSan (its block layout assumes 32-bit pointers, as on wasm32), over an emulated
  ``memory.grow``, driven by random malloc/calloc/realloc/memalign/free sequences checked
  against a shadow model (``native/heap_fuzz.c``).
"""

__all__: list[str] = []
