"""`tholos bench` (a stand-in written by the repro project for its tests; not Tholos-Bench's runner)."""
