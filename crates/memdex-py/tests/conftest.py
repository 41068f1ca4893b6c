import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
#: The committed tiny BERT (crates/memdex-embed/tests/fixtures/tiny-bert): no download.
TINY = ROOT / "crates" / "memdex-embed" / "tests" / "fixtures" / "tiny-bert"


@pytest.fixture
def tiny_model() -> str:
    assert TINY.is_dir(), TINY
    return str(TINY)


@pytest.fixture
def mem(tmp_path, tiny_model):
    import memdex

    m = memdex.Memory(tmp_path / "store", model=tiny_model, device="cpu", compact_every=None)
    yield m
    m.close()


def require(module: str):
    """Imports an optional module, or skips with a notice unless MEMDEX_REQUIRE_PYARROW
    says every interop check must run (as CI does)."""
    try:
        return __import__(module)
    except ImportError:
        if os.environ.get("MEMDEX_REQUIRE_PYARROW") == "1":
            raise
        pytest.skip(f"{module} not installed (set MEMDEX_REQUIRE_PYARROW=1 to require it)")
