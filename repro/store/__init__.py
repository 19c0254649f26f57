"""What a run needs on disk or in Docker before it starts, content-addressed and verified.

- `models`, `gguf`, `chat_template`: GGUF files by sha256, their headers, their chat templates
  and what those can carry;
- `sources`: engine and suite sources (a PyPI sdist, a git commit, a tar archive) by sha256;
- `inputs`: other projects' files a bundle references, found by sha256 in the cache or a mirror;
- `images`, `bootstrap`: images built from pinned inputs under a content key; the offline base;
- `cuda_toolkit`: which CUDA architectures an engine image is built for, and which toolkit can
  build them;
- `gomodules`: a Go module's build inputs, fetched and verified on the host, laid into an image
  build context as a file proxy;
- `describe`: a GGUF file described as the model spec a matrix pins (`repro models describe`).
"""

# The modules other packages may import (tests/foundation/test_public_names.py keeps it so).
__all__ = [
    "bootstrap",
    "chat_template",
    "cuda_toolkit",
    "describe",
    "gguf",
    "images",
    "inputs",
    "models",
    "sources",
]
