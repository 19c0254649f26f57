"""The orchestrator's foundation, which every stage may use and which uses none of them.

- `errors`: ReproError, the base of every error repro raises (its lines and its exit status), and
  BadInput (exit 2) (docs/architecture.md, "Errors and exit statuses");
- `config`: the project root, the files the package ships, the cache folder;
- `files`: bounded, link-refusing reads and atomic writes, the byte bound of each kind of file;
- `archives`: a tar archive someone else made, unpacked defensively (regular files and folders
  only, every size bounded);
- `terminal`: printing input safely (control characters escaped, rich markup shown as written);
- `busy`: what else is using the cores (the latency gate asks before it measures);
- `yamlsource`: YAML and JSON read with line numbers, bounded, without NaN or Infinity;
- `templating`: the jinja2 environment (tables, job files);
- `registry`: lazy `"module:object"` entries (engine kinds, suite kinds);
- `git`: the project's history read with git (one command's output, whether a commit is there).
"""

# The modules other packages may import (tests/foundation/test_public_names.py keeps it so).
__all__ = [
    "archives",
    "busy",
    "config",
    "errors",
    "files",
    "git",
    "registry",
    "templating",
    "terminal",
    "yamlsource",
]
