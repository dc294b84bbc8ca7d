"""The capture layer: traced arrays, the tracer, what the model sees, module state, replay.

- ``tracer.py``: :class:`Tracer` (one per capture, reached through a context
  variable) and its single dispatch point ``Tracer.call``;
- ``traced.py``: :class:`TracedArray`, the duck-typed stand-in for ndarrays;
- ``patching.py``: cloned model functions over a globals view (lazy constants,
  symbolic ``min``/``max``/``math.sqrt``) and the thread-scoped numpy creation wrappers;
- ``state.py``: lifting parameters/buffers/constant attributes and module calls;
- ``replay.py``: the replay check that catches writes the functional graph cannot express;
- ``draft.py``: what ``mode="draft"`` does where export raises (opaque ops in the
  capture's op overlay, assumed value reads, data-dependent runtime checks).

``tensorplay_export.export.capture`` ties them together.
"""
