"""`--instance-type` validation: a typo is refused with a suggestion, real types pass (issue 23)."""

from __future__ import annotations

import pytest

from hyperpod_perf.rules.instance_types import instance_type_problem, known_instance_types


@pytest.mark.parametrize(
    "name",
    [
        "ml.p5.48xlarge",
        "p5.48xlarge",
        "ML.P4D.24XLARGE",
        "ml.g5.48xlarge",
        "ml.trn1.32xlarge",
        "ml.p6e-gb200.36xlarge",
        "ml.trn2.48xlarge",
    ],
)
def test_types_the_rules_know_are_accepted(name):
    assert instance_type_problem(name) is None


def test_a_typo_is_refused_with_the_closest_real_type_first():
    # Given a type one letter short (it used to turn an EFA CONCERN into INFO "type unknown")
    problem = instance_type_problem("ml.p5.48xlarg")
    # Then it is refused and the intended type is the first suggestion
    assert problem is not None
    assert problem.startswith("unknown instance type 'ml.p5.48xlarg'")
    assert "did you mean ml.p5.48xlarge," in problem


@pytest.mark.parametrize("name", ["ml.p5.48", "ml.q5.48xlarge", "p5", "", "ml.g5.96xlarge"])
def test_unknown_families_and_sizes_are_refused(name):
    assert instance_type_problem(name) is not None


def test_the_known_list_comes_from_the_rule_tables():
    known = known_instance_types()
    assert {"p4d.24xlarge", "p5.48xlarge", "p5en.48xlarge", "g6e.12xlarge", "gr6.8xlarge"} <= set(known)
    assert all(not name.startswith("ml.") for name in known)


def test_the_cli_passes_the_name_on_as_the_rule_tables_spell_it():
    # Given an upper-case type with stray spaces (valid, but the EFA table compares exactly)
    from hyperpod_perf.cli.common import instance_type_arg
    from hyperpod_perf.rules.efa import efa_capability

    # When argparse converts it, then the rules see the lower-case name and know the type
    assert instance_type_arg(" ML.P4D.24XLARGE ") == "ml.p4d.24xlarge"
    assert efa_capability(instance_type_arg("ML.P4D.24XLARGE")) is True
    assert efa_capability("ML.P4D.24XLARGE") is None  # what the rules made of it before
