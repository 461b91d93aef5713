"""quickjail's benchmarks: ``python -m benchmarks`` (or ``--dry-run`` for a smoke test).

Each row runs the same workload on quickjail and on the peers that are installed
(``pip install .[bench]``: native quickjs-ng, quickjs-rs) in the same process run, and reports
medians and ratios against DESIGN §4. See ``benchmarks/README.md`` for what each row measures.
"""
