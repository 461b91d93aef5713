"""Release tooling: build the sdist and every platform's wheel, and check them.

``make dist`` (``python -m release build``) writes ``dist/``: the sdist and one wheel per platform
of ``sandbox/_platforms.py``, each built from the sdist, so a file the sdist lacks fails the
build. ``make dist-check`` (``python -m release check``) inspects every wheel (tag, files, the
host library's architecture, imported symbols and system minimums, the wasm's build ID,
``auditwheel`` on Linux) and installs the wheels this machine can run into fresh virtual
environments of every supported Python, where the README's snippets must pass and a user's file
must type-check under ``mypy --strict``. Not part of the package: the repository's tooling only.
"""
