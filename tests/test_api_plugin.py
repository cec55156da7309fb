"""The `r2k.testing` pytest plugin (README, "Testing your integration"): registered through pytest11,
loaded here without starting anything, and the example in docs/ passes through it as a developer runs it."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT


def test_the_plugin_is_registered_and_loading_it_starts_nothing(pytestconfig):
    from importlib.metadata import entry_points

    assert [e.value for e in entry_points(group="pytest11") if e.name == "r2k"] == ["r2k.testing"]
    assert pytestconfig.pluginmanager.has_plugin("r2k")
    # In a fresh interpreter: importing the plugin loads no module of r2k (nor any server's client).
    loaded = subprocess.run([sys.executable, "-c", "import sys, r2k.testing; "
                             "print(sorted(m for m in sys.modules if m.startswith(('r2k.', 'psycopg', 'redis', 'rq'))))"],
                            capture_output=True, text=True, timeout=60, cwd="/")
    assert loaded.stdout.strip() == "['r2k.testing']", loaded.stderr
    import r2k.testing as plugin
    from tests import conftest

    fixtures = {n for n in vars(plugin) if n.startswith("r2k_")}
    assert {"r2k_services", "r2k_user", "r2k_cli", "r2k_api", "r2k_workstation", "r2k_worker"} <= fixtures
    assert not fixtures & set(vars(conftest))  # none meets a fixture of this suite's conftest

@pytest.mark.services
def test_the_example_in_docs_passes_through_the_plugin_as_a_developer_runs_it(tmp_path):
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             str(ROOT / "docs" / "test_integration_example.py")], capture_output=True, text=True,
                            timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "3 passed" in result.stdout
