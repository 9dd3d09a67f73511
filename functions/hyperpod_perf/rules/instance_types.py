"""The instance types the rules know, so a command-line typo is refused instead of judged as unknown.

Why: an unknown type is a legitimate input to the rules (they fall back to INFO, "type unknown"),
so `--instance-type ml.p5.48xlarg` silently turned an EFA CONCERN into INFO. The names come from
the tables the rules already read (EFA capability, GPU SKUs, EFA device counts); a family whose
every size has EFA also accepts any EC2 size name of that family.
"""

from __future__ import annotations

import difflib
import re

from hyperpod_perf.rules import efa, gpu_sku

_SIZE_RE = re.compile(r"^(?:\d*xlarge|metal(?:-\d+xl)?)$")


def known_instance_types() -> tuple[str, ...]:
    """Every concrete type named by a rule table, without the `ml.` prefix, sorted."""
    names: set[str] = set(efa.EXPECTED_EFA_DEVICES)
    names |= gpu_sku.gpu_sku_types()
    for family, sizes in efa.EFA_CAPABLE.items():
        if sizes is not None:
            names |= {f"{family}.{size}" for size in sizes}
    return tuple(sorted(names))


def normalised_instance_type(text: str) -> str:
    """`ML.P5.48XLARGE ` -> `ml.p5.48xlarge`: the rule tables compare names case-sensitively."""
    return text.strip().lower()


def instance_type_problem(text: str) -> str | None:
    """None when `text` names a known type (with or without `ml.`); else the reason, with a suggestion."""
    name = normalised_instance_type(text).removeprefix("ml.")
    family, _, size = name.partition(".")
    known = known_instance_types()
    if name in known or (efa.EFA_CAPABLE.get(family, ()) is None and _SIZE_RE.match(size)):
        return None
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join('ml.' + c for c in close)}?" if close else ""
    return f"unknown instance type {text!r} (expected e.g. ml.p5.48xlarge){hint}"
