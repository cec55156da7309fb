"""No bench or test code in the product's modules (issue 29 point 8): a module-level function of
core/, app/ or workers/ that no product module names, while a test, a bench or the developers'
harness (testing/) does, is code kept for them. It belongs in tests/, bench/ or, if developers are
meant to use it, testing/."""
from __future__ import annotations

import re
from collections import Counter

from tests.conftest import ROOT

PRODUCT = ("core", "app", "workers")
DEFINED = re.compile(r"^(?:async )?def ([A-Za-z]\w*)\(", re.M)
WORD = re.compile(r"\w+")


def kept_for_tests(product: dict[str, str], others: dict[str, str]) -> list[str]:
    """`module:function` for each function named once in the product (its def) and somewhere in `others`."""
    named = Counter(WORD.findall("\n".join(product.values())))
    named_elsewhere = set(WORD.findall("\n".join(others.values())))
    return [f"{path}:{name}" for path, text in product.items() for name in DEFINED.findall(text)
            if named[name] == 1 and name in named_elsewhere]


def test_the_check_finds_a_function_only_a_test_names():
    product = {"core/a.py": "def used():\n    return helper()\n\ndef helper():\n    pass\n\n"
                            "def for_tests():\n    pass\n",
               "core/b.py": "from .a import used\n"}
    assert kept_for_tests(product, {"tests/test_a.py": "from r2k.core.a import for_tests, used\n"}) == \
        ["core/a.py:for_tests"]
    assert kept_for_tests(product, {"tests/test_a.py": "used()\n"}) == []


def test_no_product_function_is_kept_for_tests_or_benches_alone():
    product = {str(p.relative_to(ROOT)): p.read_text() for folder in PRODUCT
               for p in sorted((ROOT / folder).rglob("*.py"))}
    others = {str(p.relative_to(ROOT)): p.read_text() for folder in ("tests", "bench", "testing")
              for p in sorted((ROOT / folder).rglob("*.py"))}
    assert kept_for_tests(product, others) == []
