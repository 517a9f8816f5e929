"""Test servers shared by the test suite and the benchmarks; not part of the library nor of its wheel.

- :mod:`testing.local_s3`: a throwaway S3-compatible server (SeaweedFS) on loopback.
- :mod:`testing.race_proxy`: HTTP proxies in front of it that force commits to race or drop requests.
- :mod:`testing.threads`: a call that may hang, run so that a hang fails the test instead.

Importable from a clone: pytest puts the repository's root on ``sys.path`` (``pythonpath`` in
pyproject.toml), the benchmarks that use them insert it themselves, and the editable install of
``requirements-dev.txt`` has it on the path of every interpreter.
"""
