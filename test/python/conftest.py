# pytest configuration: makes the `hector` package (runtime/python) importable and points it at the
# built runtime library ($HECTOR_BUILD_DIR, default build/).
import pathlib
import sys

_repo = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(_repo / "runtime" / "python"))
