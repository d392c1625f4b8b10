"""Every public class and function has a numpydoc docstring with parameters documented
and an example."""

from __future__ import annotations

import importlib
import inspect

import pytest
from numpydoc.docscrape import ClassDoc, FunctionDoc

#: the documented API: what the package, its kernels and adaptation layers export, and
#: the reference models (the rest is internal, documented but not promised)
API_MODULES = ["pymc_discrete", "pymc_discrete.kernels", "pymc_discrete.adaptation",
               "pymc_discrete.samcmc", "pymc_discrete.example_models"]


def _public_objects():
    seen = set()
    for module_name in API_MODULES:
        module = importlib.import_module(module_name)
        names = getattr(module, "__all__", None) or [
            n for n, o in vars(module).items()
            if not n.startswith("_") and inspect.isfunction(o) and o.__module__ == module_name
        ]
        for name in names:
            obj = getattr(module, name)
            if not (inspect.isclass(obj) or callable(obj)) or id(obj) in seen:
                continue
            seen.add(id(obj))
            yield f"{obj.__module__}.{name}", obj


PUBLIC = dict(_public_objects())


def test_the_public_api_is_found():
    assert "pymc_discrete.pymc.steps.albp.ALBP" in PUBLIC
    assert "pymc_discrete.kernels.pas.pafs_step" in PUBLIC


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_public_object_has_a_numpydoc_docstring_with_an_example(name):
    obj = PUBLIC[name]
    assert inspect.getdoc(obj), f"{name} has no docstring"
    is_exception = inspect.isclass(obj) and issubclass(obj, BaseException)
    doc = ClassDoc(obj) if inspect.isclass(obj) else FunctionDoc(obj)
    assert doc["Summary"], f"{name}: no summary line"
    if not is_exception:
        assert doc["Examples"], f"{name}: no Examples section"
    if inspect.isfunction(obj):
        documented = {p.name.split(":")[0].strip() for p in doc["Parameters"]}
        documented = {part.strip() for names in documented for part in names.split(",")}
        params = [p for p in inspect.signature(obj).parameters
                  if p not in ("self", "cls") and not p.startswith("_")]
        missing = [p for p in params if p not in documented]
        assert not missing, f"{name}: parameters {missing} are not documented"


DOCTEST_MODULES = [
    "pymc_discrete.adaptation.acceptance_curve",
    "pymc_discrete.adaptation.dual_averaging",
    "pymc_discrete.adaptation.fixed_scale",
    "pymc_discrete.adaptation.scale",
    "pymc_discrete.adaptation.scale_mixture",
    "pymc_discrete.adaptation.steps_per_draw",
    "pymc_discrete.kernels.albp",
    "pymc_discrete.kernels.albp_loop",
    "pymc_discrete.kernels.arwm",
    "pymc_discrete.kernels.common",
    "pymc_discrete.kernels.pas",
    "pymc_discrete.kernels.ratios",
    "pymc_discrete.kernels.sampling",
    "pymc_discrete.kernels.weights",
    "pymc_discrete.example_models",
    "pymc_discrete.pymc.choosing.register",
    "pymc_discrete.pymc.model.reproducible",
    "pymc_discrete.pymc.model.validation",
    "pymc_discrete.samcmc.kernel",
]


@pytest.mark.parametrize("module_name", DOCTEST_MODULES)
def test_examples_in_docstrings_run(module_name):
    import doctest

    module = importlib.import_module(module_name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{module_name} has no examples"
    assert result.failed == 0, f"{result.failed} example(s) of {module_name} failed"
