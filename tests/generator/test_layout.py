"""Layout of generated literals and calls: wrapped to the line length, same value or meaning."""

from __future__ import annotations

import ast

from kipwire.generator.layout import WIDTH, Group, literal_group, render, wrap_call


def test_a_short_literal_stays_on_one_line() -> None:
    assert render(literal_group(("a",)), 0, "X = ") == "X = ('a',)"
    assert render(literal_group(frozenset()), 0, "X = ") == "X = frozenset()"
    assert render(literal_group({1: "x", 2: (3, 4)}), 0) == "{1: 'x', 2: (3, 4)}"


def test_a_long_literal_wraps_and_keeps_its_value() -> None:
    value = {
        f"field_{i}": (f"name_{i}" * 3, i, None, ("nested", i, frozenset({i, i + 1})))
        for i in range(12)
    }
    value["one"] = ("only",)
    source = render(literal_group(value), 0, "X = ")
    lines = source.splitlines()
    assert len(lines) > 12
    assert max(map(len, lines)) <= WIDTH
    namespace: dict = {}
    exec(source, namespace)
    assert namespace["X"] == value


def test_fill_packs_atoms_and_puts_groups_on_lines_of_their_own() -> None:
    atoms = [repr(f"attribute-{i}") for i in range(10)]
    child = Group("(", [repr("x" * 60), repr("y" * 30)], ")", fill=True)
    source = render(Group("(", [*atoms, child], ")", fill=True), 4, "")
    lines = source.splitlines()
    assert all(len(line) <= WIDTH for line in lines)
    assert lines[1].count("attribute-") > 3  # packed, not one a line
    assert ast.literal_eval(source) == (
        *(f"attribute-{i}" for i in range(10)),
        ("x" * 60, "y" * 30),
    )


def test_wrap_call_splits_the_outer_call_only_outside_strings() -> None:
    line = "        raise decode_failure(x, p, 'a, (b', " + ", ".join(["very_long_name"] * 6) + ")"
    wrapped = wrap_call(line)
    assert wrapped.splitlines()[0] == "        raise decode_failure("
    assert wrapped.splitlines()[-1] == "        )"
    assert "'a, (b'" in wrapped
    assert ast.dump(ast.parse(line.strip())) == ast.dump(ast.parse(_dedent(wrapped)))
    assert wrap_call("x = f(a)") == "x = f(a)"
    assert (
        wrap_call("    # " + "a comment with no call " * 6)
        == "    # " + "a comment with no call " * 6
    )


def test_wrap_call_parenthesises_many_targets() -> None:
    targets = ", ".join(f"k0_{i}" for i in range(12))
    line = f"            {targets} = _unpack_i32x3_uuidx2_i32_i64_bool_i32x4(b, p)"
    wrapped = wrap_call(line)
    assert all(len(x) <= WIDTH for x in wrapped.splitlines())
    assert ast.dump(ast.parse(line.strip())) == ast.dump(ast.parse(_dedent(wrapped)))


def _dedent(source: str) -> str:
    lines = source.splitlines()
    indent = len(lines[0]) - len(lines[0].lstrip())
    return "\n".join(x[indent:] for x in lines)
